package controllercmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The controller's served-entries reader keeps what finding the entries
// reads (in-tree Ceph PVs, the drivers' pods and everything else) and drops
// what it does not (other PVs, claims, other pods): the plan it feeds sees
// the in-tree PV and none of the rest.
func TestCephConfigSink(t *testing.T) {
	var got recordingSink
	s := cephConfigSink{next: &got}
	rbd := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "in-tree"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img"}}}}
	csi := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "csi"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}}}}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	app := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Args: []string{"--port=80"}}}}}
	driverPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "csi-rbdplugin-x"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "csi-rbdplugin", Args: []string{"--drivername=rook-ceph.rbd.csi.ceph.com"}}}}}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-csi-config"}}
	for _, o := range []any{rbd, csi, claim, app, driverPod, cm} {
		s.Add(o)
	}
	s.Listed("pods")
	if diff := cmp.Diff([]any{rbd, driverPod, cm}, got.added); diff != "" {
		t.Errorf("handed on (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"pods"}, got.listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	// The claims are not even listed (as many as the PVs on a large
	// cluster); the PVs and pods are, to find the in-tree Ceph PVs and
	// the drivers' pods.
	for resource, drops := range map[string]bool{"persistentvolumeclaims": true, "persistentvolumes": false, "pods": false, "configmaps": false} {
		if s.Drops(resource) != drops {
			t.Errorf("Drops(%s) = %v, want %v", resource, !drops, drops)
		}
	}
	// Where the controller's cache gives the in-tree PVs, the PVs are not
	// listed either.
	if cached := (cephConfigSink{next: &got, cachedPVs: true}); !cached.Drops("persistentvolumes") || cached.Drops("pods") {
		t.Error("with the PVs cached: want the PVs dropped and the pods listed")
	}
}

type recordingSink struct {
	added  []any
	listed []string
}

func (r *recordingSink) Add(obj any)            { r.added = append(r.added, obj) }
func (r *recordingSink) Listed(resource string) { r.listed = append(r.listed, resource) }

func TestRunsCephCSI(t *testing.T) {
	app := &v1.PodSpec{Containers: []v1.Container{{Name: "app", Args: []string{"--port=80"}}}}
	driver := &v1.PodSpec{Containers: []v1.Container{{Name: "csi-rbdplugin", Args: []string{"--drivername=rook-ceph.rbd.csi.ceph.com"}}}}
	if !runsCephCSI(driver) || runsCephCSI(app) {
		t.Error("runsCephCSI: want the driver's pod and not the app's")
	}
}
