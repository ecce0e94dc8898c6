package vspheretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// commandBinary is the csimigrate command: CSIMIGRATE_BIN, which
// scripts/test builds once, else built here once per test binary (in the
// repository's workspace).
var commandBinary = sync.OnceValues(func() (string, error) {
	return binary("CSIMIGRATE_BIN", "csimigrate", filepath.Join("..", "cmd", "csimigrate"), ".", "GOWORK=")
})

// csimigrate runs the command and returns its exit code, standard output
// and standard error.
func csimigrate(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	bin, err := commandBinary()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.Bytes(), stderr.String()
}

// confFile writes the driver's configuration for the command, as the
// driver has it (csi-vsphere.conf), with the password given.
func confFile(t *testing.T, vc *VCenter, pw string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "csi-vsphere.conf")
	if err := os.WriteFile(p, []byte(driverConf(vc, pw)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A wrong password is a clear error that never prints it; the right one
// connects and plan reads vCenter (here from files: Nodes in the input).
func TestVSpherePlanLoginRefusedNeverPrintsPassword(t *testing.T) {
	vc := StartVCenter(t)
	wrong := "wr0ng-pa55word"
	input := filepath.Join(t.TempDir(), "in.yaml")
	uuid := vc.VMUUID(t, "DC0_H0_VM0")
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {providerID: "vsphere://%s"}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-gone}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  vsphereVolume: {volumePath: "[LocalDS_0] kubevols/gone.vmdk", fsType: ext4}
`, uuid)
	if err := os.WriteFile(input, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := csimigrate(t, "plan", "-f", input, "-read-vsphere", "-vsphere-conf", confFile(t, vc, wrong))
	if code != 3 || !strings.Contains(stderr, "vCenter refused the login") || !strings.Contains(stderr, User) {
		t.Errorf("a wrong password: exit %d, stderr %q; want 3 and the login refused for %s", code, stderr, User)
	}
	if strings.Contains(stderr+string(out), wrong) {
		t.Errorf("the password is printed: %s %s", stderr, out)
	}
	code, out, stderr = csimigrate(t, "plan", "-f", input, "-read-vsphere", "-vsphere-conf", confFile(t, vc, vc.Password), "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	if code != 1 || len(p.Volumes) != 1 || p.Volumes[0].Migratable || !hasCode(p.Volumes[0].Findings, plan.FindingVSphereDiskMissing) {
		t.Errorf("exit %d, volumes %+v; want the missing disk blocked", code, p.Volumes)
	}
	if p.VCenter == nil || p.VCenter.Version != VCenterVersion || len(p.VCenter.Nodes) != 1 || p.VCenter.Nodes[0].VM != "DC0_H0_VM0" {
		t.Errorf("the vCenter report: %+v", p.VCenter)
	}
	// The default VM hardware version of vcsim, vmx-13, is below what the
	// driver needs.
	if !slices.ContainsFunc(p.Hazards, func(h plugin.Finding) bool {
		return h.Code == "check_deprecated_hw_version" && h.Object == "vm/DC0_H0_VM0"
	}) {
		t.Errorf("hazards %+v lack the node VM's hardware version", p.Hazards)
	}
	if strings.Contains(stderr+string(out), vc.Password) {
		t.Errorf("the password is printed")
	}
}

// vol is one generated in-tree vSphere volume of the oracle.
type vol struct {
	Name string
	// Dir and Ext: the path "[ds] <dir>/<name><ext>"; Ext "" relies on
	// Kubernetes appending ".vmdk".
	Dir, Ext string
	// Datastore is LocalDS_0 or one vCenter lacks.
	Datastore string
	// Disk: the VMDK exists; Registered: the syncer already registered and
	// mapped it.
	Disk, Registered bool
	// Policy is "", a policy vCenter has or one it lacks.
	Policy string
	Delete bool
}

func (v vol) path() string { return fmt.Sprintf("[%s] %s/%s%s", v.Datastore, v.Dir, v.Name, v.Ext) }

const existingPolicy = "vSAN Default Storage Policy"

// genVols draws 1 to 4 volumes, each different in name.
func genVols(draw int) *rapid.Generator[[]vol] {
	return rapid.Custom(func(t *rapid.T) []vol {
		n := rapid.IntRange(1, 4).Draw(t, "n")
		var out []vol
		for i := range n {
			v := vol{Name: fmt.Sprintf("kubernetes-dynamic-pvc-d%d-%d", draw, i), Dir: rapid.SampledFrom([]string{"kubevols", "volumes"}).Draw(t, "dir"),
				Ext: rapid.SampledFrom([]string{".vmdk", ""}).Draw(t, "ext"), Datastore: rapid.SampledFrom([]string{"LocalDS_0", "LocalDS_0", "LocalDS_0", "GoneDS"}).Draw(t, "ds"),
				Disk: rapid.IntRange(0, 4).Draw(t, "disk") > 0, Policy: rapid.SampledFrom([]string{"", "", existingPolicy, "gold-removed"}).Draw(t, "policy"),
				Delete: rapid.Bool().Draw(t, "delete")}
			v.Disk = v.Disk && v.Datastore == "LocalDS_0"
			v.Registered = v.Disk && rapid.IntRange(0, 2).Draw(t, "registered") == 0
			out = append(out, v)
		}
		return out
	})
}

// The oracle: generated in-tree vSphere volumes (paths with and without
// ".vmdk", a datastore vCenter lacks, disks that exist or not, storage
// policies vCenter has or not, registered by the driver's syncer already
// or not, reclaim policies Delete and Retain) are planned by `csimigrate
// plan -live -read-vsphere` (the configuration from the driver's Secret),
// then each is rewritten and handed to the vSphere CSI driver as it would
// be after migration: the syncer's registration (played here, as vcsim
// cannot register a disk by its path) and the driver's ControllerPublish,
// ControllerExpand, ControllerUnpublish and, for Delete, DeleteVolume. A
// volume the plan calls ready must be served in all of them, and one it
// blocks must not be servable: false "ready" and false "blocked" are
// both zero. CSIMIGRATE_VSPHERE_DRAWS sets the number of draws (4 in the
// suite; many by hand).
func TestVSpherePlanJudgedByDriver(t *testing.T) {
	vc, srv, d := startPeers(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := srv.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	// The driver's Secret, as its installation makes it.
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: driverNamespace, Name: "vsphere-config-secret"},
		Data: map[string][]byte{"csi-vsphere.conf": []byte(driverConf(vc, vc.Password))}}
	if _, err := srv.Client.CoreV1().Secrets(driverNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nodes: one VM upgraded to the hardware the driver needs, one left at
	// vcsim's vmx-13; the driver's CSINode on the first.
	vc.SetHardwareVersion(t, "DC0_H0_VM0", "vmx-19")
	nodeID := vc.VMUUID(t, "DC0_H0_VM0")
	for i, vm := range []string{"DC0_H0_VM0", "DC0_H0_VM1"} {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}, Spec: v1.NodeSpec{ProviderID: "vsphere://" + vc.VMUUID(t, vm)}}
		if _, err := srv.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: vsphere.DriverName, NodeID: nodeID}}}}
	if _, err := srv.Client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	draws := 4
	if s := os.Getenv("CSIMIGRATE_VSPHERE_DRAWS"); s != "" {
		if draws, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	var falseReady, falseBlocked []string
	for draw := range draws {
		vols := genVols(draw).Example(draw)
		t.Logf("draw %d: %+v", draw, vols)
		for _, v := range vols {
			if v.Disk {
				vc.CreateDisk(t, vsphere.CanonicalVolumePath(v.path()), 1024)
			}
			if v.Registered {
				id := vc.RegisterAsSyncer(t, vsphere.CanonicalVolumePath(v.path()), v.Name)
				mapAsSyncer(t, dyn, vsphere.CanonicalVolumePath(v.path()), id)
			}
			reclaim := v1.PersistentVolumeReclaimRetain
			if v.Delete {
				reclaim = v1.PersistentVolumeReclaimDelete
			}
			pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.Name},
				Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
					AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: reclaim,
					PersistentVolumeSource: v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: v.path(), FSType: "ext4", StoragePolicyName: v.Policy}}}}
			if _, err := srv.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Fatalf("kube-apiserver refuses the in-tree PV: %v", err)
			}
		}
		code, out, stderr := csimigrate(t, "plan", "-live", "-kubeconfig", kc, "-read-vsphere", "-o", "json")
		var p plan.Plan
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("plan: exit %d: %v\n%s", code, err, stderr)
		}
		if strings.Contains(stderr+string(out), vc.Password) {
			t.Fatal("the plan printed the password")
		}
		checkEnvironment(t, &p)
		ready := map[string]bool{}
		for _, pv := range p.Volumes {
			ready[pv.Name] = pv.Migratable
		}
		for _, v := range vols {
			planned, ok := ready[v.Name]
			if !ok {
				t.Fatalf("the plan lacks %s", v.Name)
			}
			served, why := driverServes(t, vc, d, v, nodeID, dyn)
			switch {
			case planned && !served:
				falseReady = append(falseReady, fmt.Sprintf("%+v: %s", v, why))
			case !planned && served:
				falseBlocked = append(falseBlocked, fmt.Sprintf("%+v: %s", v, planReason(p, v.Name)))
			}
			if err := srv.Client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(falseReady) > 0 || len(falseBlocked) > 0 {
		t.Errorf("false ready (the plan said ready, the driver did not serve it):\n%s\nfalse blocked (the plan blocked, the driver served it):\n%s",
			strings.Join(falseReady, "\n"), strings.Join(falseBlocked, "\n"))
	}
}

// checkEnvironment: the node whose VM is vmx-13 is reported, the other
// not; vCenter's version is read.
func checkEnvironment(t *testing.T, p *plan.Plan) {
	t.Helper()
	var envCodes []string
	for _, h := range p.Hazards {
		envCodes = append(envCodes, h.Code+" "+h.Object)
	}
	if !slices.Contains(envCodes, "check_deprecated_hw_version vm/DC0_H0_VM1") || slices.Contains(envCodes, "check_deprecated_hw_version vm/DC0_H0_VM0") {
		t.Errorf("hazards %v: want DC0_H0_VM1's hardware version, not DC0_H0_VM0's", envCodes)
	}
	if p.VCenter == nil || p.VCenter.Version != VCenterVersion || len(p.VCenter.Hosts) == 0 || len(p.VCenter.Nodes) != 2 {
		t.Errorf("the vCenter report: %+v", p.VCenter)
	}
}

func planReason(p plan.Plan, name string) string {
	for _, v := range p.Volumes {
		if v.Name == name {
			return v.Reason
		}
	}
	return ""
}

// driverServes hands a volume to the driver as it is after migration: the
// syncer's registration where it is not registered yet (played, as
// Register says), then ControllerPublish to the node, ControllerExpand,
// ControllerUnpublish and, for Delete, DeleteVolume, all by the rewritten
// PV's handle (its canonical path). why says what failed.
func driverServes(t *testing.T, vc *VCenter, d *Driver, v vol, nodeID string, dyn dynamic.Interface) (bool, string) {
	t.Helper()
	// A call the driver never answers fails the draw instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	handle := vsphere.CanonicalVolumePath(v.path())
	if !v.Registered {
		id, err := vc.Register(ctx, handle, v.Name, v.Policy)
		if err != nil {
			// Nothing registered: the driver has no mapping of the path.
			pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
			defer pcancel()
			if _, perr := d.Controller.ControllerPublishVolume(pctx, &csi.ControllerPublishVolumeRequest{VolumeId: handle, NodeId: nodeID, VolumeCapability: ext4Writer}); perr == nil {
				t.Errorf("%s: the driver published a volume the syncer could not register", v.Name)
			}
			return false, "the syncer's registration: " + err.Error()
		}
		mapAsSyncer(t, dyn, handle, id)
	}
	publish := func(ctx context.Context) error {
		_, err := d.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: handle, NodeId: nodeID, VolumeCapability: ext4Writer})
		return err
	}
	if err := retryCall(t, v.Name, publish); err != nil {
		return false, "ControllerPublishVolume: " + err.Error()
	}
	expand := func(ctx context.Context) error {
		_, err := d.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: handle,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}, VolumeCapability: ext4Writer})
		return err
	}
	if err := retryCall(t, v.Name, expand); err != nil {
		return false, "ControllerExpandVolume: " + err.Error()
	}
	unpublish := func(ctx context.Context) error {
		_, err := d.Controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: handle, NodeId: nodeID})
		return err
	}
	if err := retryCall(t, v.Name, unpublish); err != nil {
		return false, "ControllerUnpublishVolume: " + err.Error()
	}
	if v.Delete {
		del := func(ctx context.Context) error {
			_, err := d.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: handle})
			return err
		}
		if err := retryCall(t, v.Name, del); err != nil {
			return false, "DeleteVolume: " + err.Error()
		}
	}
	return true, ""
}

// retryCall makes an idempotent CSI call of the driver until it succeeds,
// at most 4 times, a second apart: the driver's informer may not have seen
// a mapping just created. A call the driver does not answer (in the two
// minutes the connection gives each) is not made again: that is a failure.
func retryCall(t *testing.T, what string, call func(ctx context.Context) error) error {
	t.Helper()
	var err error
	for attempt := range 4 {
		if err = call(context.Background()); err == nil || status.Code(err) == codes.DeadlineExceeded {
			return err
		}
		t.Logf("%s: attempt %d: %v", what, attempt+1, err)
		time.Sleep(time.Second)
	}
	return err
}

func hasCode(fs []plugin.Finding, code string) bool {
	return slices.ContainsFunc(fs, func(f plugin.Finding) bool { return f.Code == code })
}
