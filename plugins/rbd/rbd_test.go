package rbd_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/internal/testsupport/gen"
	"github.com/csimigrate/csimigrate/internal/testsupport/plugintest"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/volumeid"
)

var logger = klog.Background().V(100)

const (
	refMons   = "10.70.53.126:6789"
	refImage  = "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003"
	refHandle = "mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c"
	refCID    = "b7f67366bb43f32e07d8a261a7840da9"
)

func refPV() *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-e4111eb6", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef:    &v1.ObjectReference{Namespace: "app", Name: "data"},
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
				CephMonitors: []string{refMons},
				RBDImage:     refImage,
				RBDPool:      "replicapool",
				RadosUser:    "kube",
				Keyring:      "/etc/ceph/keyring",
				FSType:       "ext4",
				SecretRef:    &v1.SecretReference{Name: "ceph-secret", Namespace: "kube-system"},
			}},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		},
	}
}

func TestForwardReferenceExample(t *testing.T) {
	in := refPV()
	got, err := rbd.New(rbd.Options{}).TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	ref := &v1.SecretReference{Name: "ceph-secret", Namespace: "kube-system"}
	want := refPV()
	want.Spec.RBD = nil
	want.Annotations[rbd.AnnMonitors] = refMons
	want.Annotations[rbd.AnnUser] = "kube"
	want.Annotations[rbd.AnnKeyring] = "/etc/ceph/keyring"
	want.Spec.CSI = &v1.CSIPersistentVolumeSource{
		Driver:       rbd.DriverName,
		VolumeHandle: refHandle,
		FSType:       "ext4",
		VolumeAttributes: map[string]string{
			"clusterID": refCID, "staticVolume": "true", "imageName": refImage, "pool": "replicapool",
			"imageFeatures": "layering", "imageFormat": "", "journalPool": "", "migration": "true", "tryOtherMounters": "true",
		},
		NodeStageSecretRef:        ref,
		ControllerExpandSecretRef: ref,
		NodeExpandSecretRef:       ref,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestForwardReadOnlyAndAccessModes(t *testing.T) {
	in := refPV()
	in.Spec.RBD.ReadOnly = true
	in.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany, v1.ReadOnlyMany}
	got, err := rbd.New(rbd.Options{}).TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}, got.Spec.AccessModes); diff != "" {
		t.Errorf("access modes (-want +got):\n%s", diff)
	}
	if !got.Spec.CSI.ReadOnly {
		t.Error("CSI readOnly not set")
	}
	if a := got.Annotations[plugin.AnnAccessModes]; a != "ReadWriteMany,ReadOnlyMany" {
		t.Errorf("carried access modes %q", a)
	}
}

func TestForwardNodeExpandDisabled(t *testing.T) {
	got, err := rbd.New(rbd.Options{DisableNodeExpandSecret: true}).TranslateInTreePVToCSI(logger, refPV())
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.CSI.NodeExpandSecretRef != nil || got.Spec.CSI.NodeStageSecretRef == nil {
		t.Errorf("node-expand %v, node-stage %v", got.Spec.CSI.NodeExpandSecretRef, got.Spec.CSI.NodeStageSecretRef)
	}
}

func TestForwardAnnotatedHandle(t *testing.T) {
	in := refPV()
	in.Annotations[rbd.AnnVolumeHandle] = "0001-0020-" + refCID + "-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003"
	in.Annotations[rbd.AnnClusterID] = "my-cluster"
	got, err := rbd.New(rbd.Options{}).TranslateInTreePVToCSI(logger, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.CSI.VolumeHandle != in.Annotations[rbd.AnnVolumeHandle] || got.Spec.CSI.VolumeAttributes["clusterID"] != "my-cluster" {
		t.Errorf("handle %q clusterID %q", got.Spec.CSI.VolumeHandle, got.Spec.CSI.VolumeAttributes["clusterID"])
	}
	if _, ok := got.Spec.CSI.VolumeAttributes["staticVolume"]; ok {
		t.Error("staticVolume must not be set with an annotated handle")
	}
}

func TestForwardErrors(t *testing.T) {
	p := rbd.New(rbd.Options{})
	for _, tc := range []struct {
		name  string
		pv    *v1.PersistentVolume
		field string
	}{
		{"nil", nil, "spec.rbd"},
		{"not rbd", &v1.PersistentVolume{}, "spec.rbd"},
		{"no monitors", func() *v1.PersistentVolume { pv := refPV(); pv.Spec.RBD.CephMonitors = nil; return pv }(), "spec.rbd.monitors"},
		{"no image", func() *v1.PersistentVolume { pv := refPV(); pv.Spec.RBD.RBDImage = ""; return pv }(), "spec.rbd.image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.TranslateInTreePVToCSI(logger, tc.pv)
			var ie *plugin.InvalidError
			if !errors.Is(err, plugin.ErrInvalid) || !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("field error %v, want field %s", fe, tc.field)
			}
		})
	}
}

// A CSI PV as Ceph CSI provisions it through a migrated StorageClass.
func provisionedPV() *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:       rbd.DriverName,
				VolumeHandle: "0001-0020-" + refCID + "-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003",
				FSType:       "ext4",
				VolumeAttributes: map[string]string{
					"clusterID": refCID, "pool": "replicapool", "imageName": "csi-vol-c867ff35-3f04-11ec-b823-0242ac110003",
					"imageFeatures": "layering", "journalPool": "replicapool", "csi.storage.k8s.io/pv/name": "pvc-1",
				},
				NodeStageSecretRef:        &v1.SecretReference{Name: "csi-rbd-node", Namespace: "ceph"},
				ControllerExpandSecretRef: &v1.SecretReference{Name: "csi-rbd-provisioner", Namespace: "ceph"},
				NodeExpandSecretRef:       &v1.SecretReference{Name: "csi-rbd-node-expand", Namespace: "ceph"},
			}},
		},
	}
}

func TestReverseMonitorsFromConfig(t *testing.T) {
	pv := provisionedPV()
	// Without monitors anywhere: a typed error, never monitors [""].
	_, err := rbd.New(rbd.Options{}).TranslateCSIPVToInTree(pv)
	var mi *plugin.MissingInformationError
	if !errors.Is(err, plugin.ErrMissingInformation) || !errors.As(err, &mi) || mi.Field != "spec.rbd.monitors" {
		t.Fatalf("err = %v, want MissingInformationError for spec.rbd.monitors", err)
	}
	cfg, err := ceph.ParseClusterConfig([]byte(`[{"clusterID":"` + refCID + `","monitors":["10.70.53.126:6789"],"rbd":{}}]`))
	if err != nil {
		t.Fatal(err)
	}
	p := rbd.New(rbd.Options{ClusterConfig: cfg})
	back, err := p.TranslateCSIPVToInTree(pv)
	if err != nil {
		t.Fatal(err)
	}
	want := &v1.RBDPersistentVolumeSource{
		CephMonitors: []string{refMons}, RBDImage: "csi-vol-c867ff35-3f04-11ec-b823-0242ac110003", FSType: "ext4",
		RBDPool: "replicapool", RadosUser: "admin", SecretRef: &v1.SecretReference{Name: "csi-rbd-node", Namespace: "ceph"},
	}
	if diff := cmp.Diff(want, back.Spec.RBD); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Upstream's annotations let csi-translation-lib reuse the handle.
	if back.Annotations[rbd.AnnVolumeHandle] != pv.Spec.CSI.VolumeHandle || back.Annotations[rbd.AnnClusterID] != refCID {
		t.Errorf("annotations %v", back.Annotations)
	}
	// And forward gives the provisioned CSI source back, references included.
	again, err := p.TranslateInTreePVToCSI(logger, back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pv.Spec.CSI, again.Spec.CSI); diff != "" {
		t.Errorf("CSI -> in-tree -> CSI (-want +got):\n%s", diff)
	}
}

func TestReverseMonitorsFromAttribute(t *testing.T) {
	pv := provisionedPV()
	pv.Spec.CSI.VolumeAttributes["monitors"] = "10.0.0.1:6789,10.0.0.2:6789"
	back, err := rbd.New(rbd.Options{}).TranslateCSIPVToInTree(pv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"10.0.0.1:6789", "10.0.0.2:6789"}, back.Spec.RBD.CephMonitors); diff != "" {
		t.Error(diff)
	}
}

func TestReverseWrongDriver(t *testing.T) {
	pv := provisionedPV()
	pv.Spec.CSI.Driver = "other"
	_, err := rbd.New(rbd.Options{}).TranslateCSIPVToInTree(pv)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.csi.driver" || fe.Type != field.ErrorTypeNotSupported {
		t.Errorf("err = %v", err)
	}
}

func TestInline(t *testing.T) {
	p := rbd.New(rbd.Options{})
	vol := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{
		CephMonitors: []string{refMons}, RBDImage: "static-img", FSType: "xfs",
	}}}
	pv, err := p.TranslateInTreeInlineVolumeToCSI(logger, vol, "app")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI.NodeStageSecretRef != nil || pv.Spec.CSI.ControllerExpandSecretRef != nil {
		t.Error("a nil secret reference must stay nil")
	}
	want := map[string]string{"clusterID": refCID, "pool": "rbd", "staticVolume": "true", "imageFeatures": "layering", "imageName": "static-img"}
	if diff := cmp.Diff(want, pv.Spec.CSI.VolumeAttributes); diff != "" {
		t.Error(diff)
	}
	if pv.Spec.CSI.VolumeHandle != "static-img" || pv.Name != "rbd.csi.ceph.com-static-img" {
		t.Errorf("handle %q name %q", pv.Spec.CSI.VolumeHandle, pv.Name)
	}
	vol.RBD.SecretRef = &v1.LocalObjectReference{Name: "s"}
	pv, err = p.TranslateInTreeInlineVolumeToCSI(logger, vol, "app")
	if err != nil {
		t.Fatal(err)
	}
	if r := pv.Spec.CSI.NodeStageSecretRef; r == nil || r.Namespace != "app" || r.Name != "s" {
		t.Errorf("node-stage ref %v", r)
	}
	if _, err := p.TranslateInTreeInlineVolumeToCSI(logger, vol, ""); !errors.Is(err, plugin.ErrInvalid) {
		t.Errorf("secret without pod namespace: %v", err)
	}
}

func TestStorageClass(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	sc := &storage.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "rbd"},
		Provisioner: rbd.PluginName,
		Parameters: map[string]string{
			"monitors": "10.70.53.126:6789", "AdminId": "kube", "adminSecretName": "ceph-admin", "adminSecretNamespace": "kube-system",
			"pool": "kube", "userId": "kube", "userSecretName": "ceph-user", "imageFormat": "2", "imageFeatures": "layering", "fsType": "xfs",
		},
		MountOptions: []string{"discard"},
	}
	got, err := rbd.New(rbd.Options{}).TranslateInTreeStorageClassToCSI(log, sc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"migration": "true", "pool": "kube", "monitors": "10.70.53.126:6789", "clusterID": refCID, "adminId": "kube",
		"imageFormat": "2", "imageFeatures": "layering", "csi.storage.k8s.io/fstype": "xfs",
		"csi.storage.k8s.io/provisioner-secret-name": "ceph-admin", "csi.storage.k8s.io/provisioner-secret-namespace": "kube-system",
		"csi.storage.k8s.io/node-stage-secret-name": "ceph-admin", "csi.storage.k8s.io/node-stage-secret-namespace": "kube-system",
		"csi.storage.k8s.io/controller-expand-secret-name": "ceph-admin", "csi.storage.k8s.io/controller-expand-secret-namespace": "kube-system",
		"csi.storage.k8s.io/node-expand-secret-name": "ceph-admin", "csi.storage.k8s.io/node-expand-secret-namespace": "kube-system",
	}
	if diff := cmp.Diff(want, got.Parameters); diff != "" {
		t.Errorf("parameters (-want +got):\n%s", diff)
	}
	if got.Provisioner != rbd.DriverName || got.MountOptions[0] != "discard" {
		t.Errorf("provisioner %q mount options %v", got.Provisioner, got.MountOptions)
	}
	if a := got.Annotations[rbd.AnnDroppedParameters]; a != `{"userId":"kube","userSecretName":"ceph-user"}` {
		t.Errorf("dropped-parameters annotation %q", a)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "userSecretName") {
		t.Errorf("log %q", logged)
	}
	if sc.Parameters["AdminId"] != "kube" || sc.Provisioner != rbd.PluginName {
		t.Error("input modified")
	}
}

func TestStorageClassErrors(t *testing.T) {
	p := rbd.New(rbd.Options{})
	for _, tc := range []struct {
		name   string
		params map[string]string
		fields []string
	}{
		{"missing monitors and secret", map[string]string{}, []string{"parameters[monitors]", "parameters[adminSecretName]"}},
		{"unknown key", map[string]string{"monitors": "a:1", "adminSecretName": "s", "color": "blue"}, []string{"parameters[color]"}},
		{"duplicate by case", map[string]string{"monitors": "a:1", "adminSecretName": "s", "Pool": "a", "pool": "b"}, []string{"parameters[pool]"}},
		{"bad image format", map[string]string{"monitors": "a:1", "adminSecretName": "s", "imageFormat": "3"}, []string{"parameters[imageFormat]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.TranslateInTreeStorageClassToCSI(logger, &storage.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Parameters: tc.params})
			var ie *plugin.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v", err)
			}
			var got []string
			for _, e := range ie.Errs {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.fields, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckPV(t *testing.T) {
	p := rbd.New(rbd.Options{})
	pv := refPV()
	pv.Spec.RBD.RBDImage = "static_image"
	pv.Spec.RBD.SecretRef = nil
	var codes []string
	for _, f := range p.CheckPV(pv) {
		codes = append(codes, f.Code)
	}
	want := []string{rbd.FindingHandleResolvesElsewhere, rbd.FindingNoSecret, rbd.FindingNonAdminUser}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if f := p.CheckPV(refPV()); len(f) != 1 || f[0].Code != rbd.FindingNonAdminUser {
		t.Errorf("findings for a clean non-admin PV: %+v", f)
	}
}

func TestHazardLogged(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	pv := refPV()
	pv.Spec.RBD.RBDImage = "static-image"
	out, err := rbd.New(rbd.Options{}).TranslateInTreePVToCSI(log, pv)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "static-image") {
		t.Errorf("logged %q", logged)
	}
	// Upstream's handle is kept.
	if want := "mig_mons-" + refCID + "_image-static-image_7265706c696361706f6f6c"; out.Spec.CSI.VolumeHandle != want {
		t.Errorf("handle %q, want %q", out.Spec.CSI.VolumeHandle, want)
	}
}

func TestRoundTripProperty(t *testing.T) {
	plugintest.RoundTrip(t, rbd.New(rbd.Options{}), gen.RBDPV)
}

func TestRoundTripNodeExpandDisabledProperty(t *testing.T) {
	plugintest.RoundTrip(t, rbd.New(rbd.Options{DisableNodeExpandSecret: true}), gen.RBDPV)
}

func TestHostileProperty(t *testing.T) {
	plugintest.Hostile(t, rbd.New(rbd.Options{}))
}

// The handle of every generated PV parses in Ceph CSI to the PV's image,
// pool and clusterID exactly when CheckPV reports no hazard.
func TestHandleHazardMatchesCephCSI(t *testing.T) {
	p := rbd.New(rbd.Options{})
	rapid.Check(t, func(t *rapid.T) {
		pv := gen.RBDPV(t)
		delete(pv.Annotations, rbd.AnnVolumeHandle)
		out, err := p.TranslateInTreePVToCSI(logger, pv)
		if err != nil {
			t.Fatal(err)
		}
		h, cerr := volumeid.CephCSIReadRBDHandle(out.Spec.CSI.VolumeHandle)
		ok := cerr == nil && h.Image == pv.Spec.RBD.RBDImage && h.Pool == pv.Spec.RBD.RBDPool && h.ClusterID == volumeid.ClusterIDFromList(pv.Spec.RBD.CephMonitors)
		hazard := false
		for _, f := range p.CheckPV(pv) {
			hazard = hazard || f.Code == rbd.FindingHandleResolvesElsewhere
		}
		if ok == hazard {
			t.Fatalf("Ceph CSI reads %+v (%v); hazard reported: %v", h, cerr, hazard)
		}
	})
}

// A volume Ceph CSI provisioned, translated back and forward again: the
// forward translation gives the provisioned spec back exactly, without
// carrying the monitors or the user where its attributes give them back,
// and the reverse of that the same in-tree PV.
func TestProvisionedRoundTripProperty(t *testing.T) {
	p := rbd.New(rbd.Options{})
	rapid.Check(t, func(t *rapid.T) {
		csi := gen.RBDProvisionedPV(t)
		back, err := p.TranslateCSIPVToInTree(csi)
		if err != nil {
			t.Fatalf("reverse: %v", err)
		}
		again, err := p.TranslateInTreePVToCSI(logger, back)
		if err != nil {
			t.Fatalf("forward: %v", err)
		}
		if diff := cmp.Diff(csi.Spec, again.Spec); diff != "" {
			t.Fatalf("CSI -> in-tree -> CSI (-provisioned +round trip):\n%s", diff)
		}
		attrs := csi.Spec.CSI.VolumeAttributes
		if _, carried := again.Annotations[rbd.AnnMonitors]; carried && !strings.Contains(attrs["monitors"], ",,") {
			t.Fatalf("monitors carried although the attribute %q gives them back", attrs["monitors"])
		}
		if _, carried := again.Annotations[rbd.AnnUser]; carried == (attrs["adminId"] != "") {
			t.Fatalf("user carried: %v, with the attribute adminId %q", carried, attrs["adminId"])
		}
		backAgain, err := p.TranslateCSIPVToInTree(again)
		if err != nil {
			t.Fatalf("reverse again: %v", err)
		}
		if diff := cmp.Diff(back, backAgain); diff != "" {
			t.Fatalf("in-tree -> CSI -> in-tree (-in-tree +round trip):\n%s", diff)
		}
	})
}

// The monitors and the user are carried in annotations unless the attributes
// the in-tree PV recorded give exactly them back; either way the reverse
// translation restores the in-tree PV.
func TestCarriedMonitorsAndUser(t *testing.T) {
	const recorded = `{"volumeAttributes":{"adminId":"admin","monitors":"10.0.0.1:6789,10.0.0.2:6789"}}`
	cases := []struct {
		name      string
		mons      []string
		user      string
		overrides string
		// The carried annotations expected on the CSI PV ("" and false: none).
		wantMons, wantUser string
		hasMons, hasUser   bool
	}{
		{name: "no record", mons: []string{"10.0.0.1:6789"}, user: "kube",
			wantMons: "10.0.0.1:6789", hasMons: true, wantUser: "kube", hasUser: true},
		{name: "recorded, equal", mons: []string{"10.0.0.1:6789", "10.0.0.2:6789"}, user: "admin", overrides: recorded},
		{name: "recorded, other monitors", mons: []string{"10.0.0.3:6789"}, user: "admin", overrides: recorded,
			wantMons: "10.0.0.3:6789", hasMons: true},
		{name: "recorded, monitors in another order", mons: []string{"10.0.0.2:6789", "10.0.0.1:6789"}, user: "admin", overrides: recorded,
			wantMons: "10.0.0.2:6789,10.0.0.1:6789", hasMons: true},
		{name: "recorded, a monitor the attribute cannot hold", mons: []string{"10.0.0.1:6789,10.0.0.2:6789"}, user: "admin", overrides: recorded,
			wantMons: `["10.0.0.1:6789,10.0.0.2:6789"]`, hasMons: true},
		{name: "recorded, other user", mons: []string{"10.0.0.1:6789", "10.0.0.2:6789"}, user: "kube", overrides: recorded,
			wantUser: "kube", hasUser: true},
		// Without the annotation the reverse translation would give the
		// attribute's user, or "admin", for an empty one.
		{name: "recorded, empty user", mons: []string{"10.0.0.1:6789", "10.0.0.2:6789"}, user: "", overrides: recorded,
			wantUser: "", hasUser: true},
		{name: "recorded empty, empty user", mons: []string{"10.0.0.1:6789"}, user: "",
			overrides: `{"volumeAttributes":{"adminId":"","monitors":"10.0.0.1:6789"}}`, wantUser: "", hasUser: true},
	}
	p := rbd.New(rbd.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pv := refPV()
			pv.Spec.RBD.CephMonitors, pv.Spec.RBD.RadosUser, pv.Spec.RBD.Keyring = tc.mons, tc.user, ""
			if tc.overrides != "" {
				pv.Annotations[plugin.AnnCSIOverrides] = tc.overrides
			}
			csi, err := p.TranslateInTreePVToCSI(logger, pv)
			if err != nil {
				t.Fatal(err)
			}
			mons, hasMons := csi.Annotations[rbd.AnnMonitors]
			user, hasUser := csi.Annotations[rbd.AnnUser]
			if mons != tc.wantMons || hasMons != tc.hasMons || user != tc.wantUser || hasUser != tc.hasUser {
				t.Errorf("carried monitors %q (%v), user %q (%v); want %q (%v), %q (%v)",
					mons, hasMons, user, hasUser, tc.wantMons, tc.hasMons, tc.wantUser, tc.hasUser)
			}
			back, err := p.TranslateCSIPVToInTree(csi)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(pv, back); diff != "" {
				t.Errorf("in-tree -> CSI -> in-tree (-in-tree +round trip):\n%s", diff)
			}
		})
	}
}

// The StorageClass generator the property and differential tests draw from
// (gen.RBDStorageClass, which compat/ and compat37/ compare with
// csi-translation-lib) draws every key of the plugin's parameter table, and
// no other: a row added to the table without the generator fails here.
func TestClassGeneratorDrawsEveryParameter(t *testing.T) {
	drawn := map[string]bool{}
	rapid.Check(t, func(t *rapid.T) {
		for k := range gen.RBDStorageClass(t).Parameters {
			drawn[strings.ToLower(k)] = true
		}
	})
	want := map[string]bool{}
	for _, k := range rbd.ClassKeys {
		want[k] = true
	}
	if diff := cmp.Diff(want, drawn); diff != "" {
		t.Errorf("keys of the table (-) and of the generator (+):\n%s", diff)
	}
}
