package compat

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upstream "k8s.io/csi-translation-lib/plugins"

	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

func claimSpec() v1.PersistentVolumeSpec {
	return v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ClaimRef:                      &v1.ObjectReference{Namespace: "shop", Name: "db"},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		StorageClassName:              "standard",
	}
}

func rbdPV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-rbd", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": rbd.PluginName}},
		Spec: claimSpec()}
	pv.Spec.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.70.53.126:6789", "10.70.53.127:6789"},
		RBDImage: "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003", RBDPool: "replicapool", RadosUser: "kube", FSType: "ext4",
		SecretRef: &v1.SecretReference{Name: "ceph-secret", Namespace: "kube-system"}}
	return plugintest.Stored(pv)
}

// rbdProvisionedPV is a PV that external-provisioner creates for a migrated
// RBD StorageClass: a Ceph CSI volume ID and the volume context Ceph CSI
// returns. It is the input of the reverse translation in that flow.
func rbdProvisionedPV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-0f4f8e0e-1c4b-4f7a-9a3e-5d1c2b3a4f50",
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": rbd.DriverName}}, Spec: claimSpec()}
	ref := &v1.SecretReference{Name: "ceph-admin", Namespace: "kube-system"}
	pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: rbd.DriverName, FSType: "ext4",
		VolumeHandle: "0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003",
		VolumeAttributes: map[string]string{"clusterID": "b7f67366bb43f32e07d8a261a7840da9", "imageFeatures": "layering", "imageFormat": "2",
			"imageName": "csi-vol-c867ff35-3f04-11ec-b823-0242ac110003", "journalPool": "kube", "pool": "kube", "migration": "true",
			"monitors": "10.70.53.126:6789,10.70.53.127:6789", "adminId": "admin"},
		NodeStageSecretRef: ref, ControllerExpandSecretRef: ref, NodeExpandSecretRef: ref}
	return plugintest.Stored(pv)
}

func vspherePV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-vs", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": vsphere.PluginName},
		Labels: map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelTopologyRegion: "region-1"}}, Spec: claimSpec()}
	pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[vsanDatastore] kubevols/pvc-1.vmdk", FSType: "ext4", StoragePolicyName: "gold"}
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{"zone-a"}},
		{Key: v1.LabelTopologyRegion, Operator: v1.NodeSelectorOpIn, Values: []string{"region-1"}}}}}}}
	return plugintest.Stored(pv)
}

// vsphereProvisionedPV is what external-provisioner creates for a migrated
// vSphere StorageClass: an FCD ID handle and the file path the driver
// returns in the volume context for migrated volumes.
func vsphereProvisionedPV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8",
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": vsphere.DriverName}}, Spec: claimSpec()}
	pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: vsphere.DriverName, FSType: "ext4", VolumeHandle: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8",
		VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1709287200000-8081-csi.vsphere.vmware.com",
			"type": "vSphere CNS Block Volume", "initialvolumefilepath": "[vsanDatastore] fcd/3c2b1a098f7e4d6ca5b4c3d2e1f0a9b8.vmdk"}}
	return plugintest.Stored(pv)
}

type pair struct {
	ours   plugin.InTreePlugin
	theirs upstream.InTreePlugin
}

var pairs = map[string]pair{
	"RBD":     {rbd.New(rbd.Options{}), upstream.NewRBDCSITranslator()},
	"vSphere": {vsphere.New(vsphere.Options{}), upstream.NewvSphereCSITranslator()},
}

var order = []string{"RBD", "vSphere"}

// noNodeExpand is the RBD plugin without the node-expand secret, which
// csi-translation-lib never sets: the like-for-like StorageClass comparison
// (the node-expand name and namespace make the parameter map outgrow a
// 16-slot table).
var noNodeExpand = rbd.New(rbd.Options{DisableNodeExpandSecret: true})

// Sinks keep results alive, so that no copy is allocated on the stack.
var (
	sinkPV *v1.PersistentVolume
	sinkSC *storagev1.StorageClass
)

// pvBench measures DeepCopy of pv, the translation of pv through csimigrate
// and that of theirsIn (each library's input where they differ, else pv)
// through csi-translation-lib's CSITranslator path (it modifies its input,
// so its callers copy first: csitrans.CSITranslator does pv.DeepCopy(); one
// copy, of theirsIn, is in the loop).
func pvBench(b *testing.B, pv, theirsIn *v1.PersistentVolume, ours func(*v1.PersistentVolume) (*v1.PersistentVolume, error),
	theirs func(*v1.PersistentVolume) (*v1.PersistentVolume, error)) {
	b.Run("DeepCopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkPV = pv.DeepCopy()
		}
	})
	b.Run("csimigrate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := ours(pv)
			if err != nil {
				b.Fatal(err)
			}
			sinkPV = out
		}
	})
	b.Run("csi-translation-lib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := theirs(theirsIn.DeepCopy())
			if err != nil {
				b.Fatal(err)
			}
			sinkPV = out
		}
	})
}

func BenchmarkForwardPV(b *testing.B) {
	pvs := map[string]*v1.PersistentVolume{"RBD": rbdPV(), "vSphere": vspherePV()}
	provisioned := map[string]*v1.PersistentVolume{"RBD": rbdProvisionedPV(), "vSphere": vsphereProvisionedPV()}
	for _, name := range order {
		p := pairs[name]
		forward := func(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
			return p.ours.TranslateInTreePVToCSI(logger, pv)
		}
		b.Run(name, func(b *testing.B) {
			pvBench(b, pvs[name], pvs[name], forward, p.theirs.TranslateInTreePVToCSI)
		})
		// The PV external-provisioner stores for a migrated StorageClass (the
		// provisioned CSI PV translated back by each library), translated
		// forward again as the attacher, resizer and kubelet do. Ours
		// restores the CSI source from the overrides annotation; upstream's
		// loses what its reverse translation dropped.
		ours, err := p.ours.TranslateCSIPVToInTree(provisioned[name])
		if err != nil {
			b.Fatal(err)
		}
		theirs, err := p.theirs.TranslateCSIPVToInTree(provisioned[name].DeepCopy())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"-provisioned", func(b *testing.B) {
			pvBench(b, ours, theirs, forward, p.theirs.TranslateInTreePVToCSI)
		})
		// Like for like: both translate the in-tree PV upstream's reverse
		// translation gives (so ours has nothing recorded to restore). The
		// difference to the above is what restoring costs.
		b.Run(name+"-provisioned-upstream-input", func(b *testing.B) {
			pvBench(b, theirs, theirs, forward, p.theirs.TranslateInTreePVToCSI)
		})
	}
}

// BenchmarkReversePV translates back what each library's forward
// translation produced ("migrated"), and a PV external-provisioner created
// for a migrated StorageClass ("provisioned").
func BenchmarkReversePV(b *testing.B) {
	pvs := map[string]*v1.PersistentVolume{"RBD": rbdPV(), "vSphere": vspherePV()}
	provisioned := map[string]*v1.PersistentVolume{"RBD": rbdProvisionedPV(), "vSphere": vsphereProvisionedPV()}
	for _, name := range order {
		p := pairs[name]
		migrated, err := p.ours.TranslateInTreePVToCSI(logger, pvs[name])
		if err != nil {
			b.Fatal(err)
		}
		theirsMigrated, err := p.theirs.TranslateInTreePVToCSI(pvs[name].DeepCopy())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/migrated", func(b *testing.B) {
			pvBench(b, migrated, theirsMigrated, p.ours.TranslateCSIPVToInTree, p.theirs.TranslateCSIPVToInTree)
		})
		b.Run(name+"/provisioned", func(b *testing.B) {
			pvBench(b, provisioned[name], provisioned[name], p.ours.TranslateCSIPVToInTree, p.theirs.TranslateCSIPVToInTree)
		})
	}
}

func BenchmarkInline(b *testing.B) {
	vols := map[string]*v1.Volume{
		"RBD": {Name: "data", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{
			CephMonitors: []string{"10.70.53.126:6789", "10.70.53.127:6789"}, RBDImage: "data-1", RBDPool: "replicapool", RadosUser: "kube", FSType: "ext4",
			SecretRef: &v1.LocalObjectReference{Name: "ceph-secret"}}}},
		"vSphere": {Name: "data", VolumeSource: v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{
			VolumePath: "[vsanDatastore] kubevols/data.vmdk", FSType: "ext4"}}},
	}
	for _, name := range order {
		p, vol := pairs[name], vols[name]
		b.Run(name+"/csimigrate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.ours.TranslateInTreeInlineVolumeToCSI(logger, vol, "app")
				if err != nil {
					b.Fatal(err)
				}
				sinkPV = out
			}
		})
		b.Run(name+"/csi-translation-lib", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.theirs.TranslateInTreeInlineVolumeToCSI(vol.DeepCopy(), "app")
				if err != nil {
					b.Fatal(err)
				}
				sinkPV = out
			}
		})
	}
}

func BenchmarkStorageClass(b *testing.B) {
	scs := map[string]*storagev1.StorageClass{
		"RBD": {ObjectMeta: metav1.ObjectMeta{Name: "rbd"}, Provisioner: rbd.PluginName, Parameters: map[string]string{
			"monitors": "10.70.53.126:6789,10.70.53.127:6789", "adminId": "admin", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system",
			"pool": "kube", "imageFormat": "2", "imageFeatures": "layering"}},
		"vSphere": {ObjectMeta: metav1.ObjectMeta{Name: "vs"}, Provisioner: vsphere.PluginName, Parameters: map[string]string{
			"storagepolicyname": "gold", "datastore": "vsanDatastore", "diskformat": "thin", "fstype": "ext4"}},
	}
	scs["RBD-no-node-expand"] = scs["RBD"]
	pairs := map[string]pair{"RBD-no-node-expand": {noNodeExpand, pairs["RBD"].theirs}, "RBD": pairs["RBD"], "vSphere": pairs["vSphere"]}
	for _, name := range []string{"RBD", "RBD-no-node-expand", "vSphere"} {
		p, sc := pairs[name], scs[name]
		b.Run(name+"/DeepCopy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkSC = sc.DeepCopy()
			}
		})
		b.Run(name+"/csimigrate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.ours.TranslateInTreeStorageClassToCSI(logger, sc)
				if err != nil {
					b.Fatal(err)
				}
				sinkSC = out
			}
		})
		b.Run(name+"/csi-translation-lib", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.theirs.TranslateInTreeStorageClassToCSI(sc.DeepCopy())
				if err != nil {
					b.Fatal(err)
				}
				sinkSC = out
			}
		})
	}
}
