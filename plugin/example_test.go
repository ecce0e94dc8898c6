package plugin_test

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// nfsPlugin is a third-party plugin: in-tree NFS volumes to the NFS CSI
// driver (csi-driver-nfs), whose volume handle is "server#path".
type nfsPlugin struct{}

const (
	nfsInTree = "kubernetes.io/nfs"
	nfsDriver = "nfs.csi.k8s.io"
)

func (nfsPlugin) GetInTreePluginName() string { return nfsInTree }
func (nfsPlugin) GetCSIPluginName() string    { return nfsDriver }
func (nfsPlugin) CanSupport(pv *v1.PersistentVolume) bool {
	return pv != nil && pv.Spec.NFS != nil
}
func (nfsPlugin) CanSupportInline(vol *v1.Volume) bool { return vol != nil && vol.NFS != nil }
func (nfsPlugin) RepairVolumeHandle(h, _ string) (string, error) {
	return h, nil
}

// DoesNotModifyInputs promises plugin.NonMutating: the translator then
// passes objects without a defensive copy.
func (nfsPlugin) DoesNotModifyInputs() {}

func (nfsPlugin) TranslateInTreePVToCSI(_ klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.NFS == nil {
		return nil, plugin.Invalid("PersistentVolume", "", field.Required(field.NewPath("spec", "nfs"), "an NFS volume source is required"))
	}
	src := pv.Spec.NFS
	if src.Server == "" {
		return nil, plugin.Invalid("PersistentVolume", pv.Name, field.Required(field.NewPath("spec", "nfs", "server"), "the NFS server is required"))
	}
	out := pv.DeepCopy()
	out.Spec.NFS = nil
	out.Spec.CSI = &v1.CSIPersistentVolumeSource{
		Driver:           nfsDriver,
		VolumeHandle:     src.Server + "#" + src.Path,
		ReadOnly:         src.ReadOnly,
		VolumeAttributes: map[string]string{"server": src.Server, "share": src.Path},
	}
	return out, nil
}

func (p nfsPlugin) TranslateInTreeInlineVolumeToCSI(logger klog.Logger, vol *v1.Volume, _ string) (*v1.PersistentVolume, error) {
	if vol == nil || vol.NFS == nil {
		return nil, plugin.Invalid("Volume", "", field.Required(field.NewPath("nfs"), "an inline NFS volume source is required"))
	}
	return p.TranslateInTreePVToCSI(logger, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: vol.Name},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{NFS: vol.NFS}}})
}

func (nfsPlugin) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != nfsDriver {
		return nil, plugin.Invalid("PersistentVolume", "", field.Required(field.NewPath("spec", "csi"), "a CSI source of "+nfsDriver+" is required"))
	}
	c := pv.Spec.CSI
	out := pv.DeepCopy()
	out.Spec.CSI = nil
	out.Spec.NFS = &v1.NFSVolumeSource{Server: c.VolumeAttributes["server"], Path: c.VolumeAttributes["share"], ReadOnly: c.ReadOnly}
	return out, nil
}

func (nfsPlugin) TranslateInTreeStorageClassToCSI(klog.Logger, *storage.StorageClass) (*storage.StorageClass, error) {
	return nil, &plugin.UnsupportedError{Plugin: nfsInTree, What: "StorageClass translation", Reason: "in-tree NFS had no provisioner"}
}

// A third-party plugin implements plugin.InTreePlugin, reports bad input
// with plugin.Invalid (or the other error types, so that callers can match
// the error kinds) and is registered with translate.WithPlugins.
func Example_thirdPartyPlugin() {
	tr, err := translate.New(translate.WithPlugins(nfsPlugin{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "share"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			NFS: &v1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports/a"}}}}
	out, err := tr.TranslateInTreePVToCSI(klog.Background(), pv)
	fmt.Println(out.Spec.CSI.Driver, out.Spec.CSI.VolumeHandle, err)

	pv.Spec.NFS.Server = ""
	_, err = tr.TranslateInTreePVToCSI(klog.Background(), pv)
	fmt.Println(errors.Is(err, plugin.ErrInvalid))
	fmt.Println(err)

	// A second plugin for the same in-tree name is refused, not silently
	// used in place of the first.
	_, err = translate.New(translate.WithPlugins(nfsPlugin{}, nfsPlugin{}))
	fmt.Println(errors.Is(err, translate.ErrConflict))
	// Output:
	// nfs.csi.k8s.io nfs.example.com#/exports/a <nil>
	// true
	// PersistentVolume "share" cannot be translated: spec.nfs.server: Required value: the NFS server is required
	// true
}

// Invalid builds the error a plugin returns for an object it cannot
// translate: it names each field at fault and matches ErrInvalid.
func ExampleInvalid() {
	err := plugin.Invalid("PersistentVolume", "pv-1",
		field.Required(field.NewPath("spec", "rbd", "monitors"), "at least one Ceph monitor (host:port) is required"),
		field.NotSupported(field.NewPath("spec", "accessModes").Index(0), "ReadWriteMany", []string{"ReadWriteOnce", "ReadOnlyMany"}))
	fmt.Println(errors.Is(err, plugin.ErrInvalid))
	var fe *field.Error
	fmt.Println(errors.As(err, &fe), fe.Field)
	fmt.Println(err)
	// Output:
	// true
	// true spec.rbd.monitors
	// PersistentVolume "pv-1" cannot be translated: [spec.rbd.monitors: Required value: at least one Ceph monitor (host:port) is required, spec.accessModes[0]: Unsupported value: "ReadWriteMany": supported values: "ReadWriteOnce", "ReadOnlyMany"]
}
