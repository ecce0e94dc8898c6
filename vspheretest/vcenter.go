package vspheretest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/cns"
	cnstypes "github.com/vmware/govmomi/cns/types"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/pbm"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vslm"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/volumeid"
)

// VCenterVersion is the vCenter version the simulator reports: one whose
// CNS serves snapshots and CSI migration (7.0 Update 1 or later).
const VCenterVersion = "8.0.3"

// ClusterID is the Kubernetes cluster id the driver's configuration and
// the CNS volumes' metadata name.
const ClusterID = "csimigrate-test"

// User is the vCenter user the driver logs in as, the only one vcsim lets
// in, with password.
const User = "administrator@vsphere.local"

// password is User's password.
const password = "not-a-secret;#\"x" // quoted in csi-vsphere.conf

// VCenter is a running vCenter simulator.
type VCenter struct {
	URL        *url.URL
	Host, Port string
	Client     *govmomi.Client
	// Datacenter and Datastore are the simulator's DC0 and LocalDS_0.
	Datacenter *object.Datacenter
	Datastore  *object.Datastore
	Password   string
	// trace is the file vcsim logs csimigrate's calls to (Calls).
	trace string
}

// vcsimBinary is the simulator's program (cmd/vcsim): CSIMIGRATE_VCSIM,
// which scripts/test builds once, else built here once per test binary by
// scripts/build-vcsim (with the fix of the simulator's ListView deadlock).
var vcsimBinary = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("CSIMIGRATE_VCSIM"); p != "" {
		return p, nil
	}
	tmp, err := os.MkdirTemp("", "csimigrate-vcsim-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "vcsim")
	if out, err := exec.Command("bash", filepath.Join("..", "scripts", "build-vcsim"), bin).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building vcsim (scripts/build-vcsim): %v\n%s", err, out)
	}
	return bin, nil
})

// binary is the program envVar names, else the package pkg built once (in
// dir, with the environment's GOWORK replaced by gowork) into a temporary
// directory as name.
func binary(envVar, name, dir, pkg, gowork string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		return p, nil
	}
	tmp, err := os.MkdirTemp("", "csimigrate-"+name+"-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, name)
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOWORK=") {
			build.Env = append(build.Env, e)
		}
	}
	build.Env = append(build.Env, gowork)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// StartVCenter starts vcsim (cmd/vcsim: the VPX model with its CNS, SPBM,
// FCD and REST endpoints, reporting VCenterVersion) as a process owned by
// the test, killed when it ends, and logs in to it.
func StartVCenter(t testing.TB) *VCenter {
	t.Helper()
	bin, err := vcsimBinary()
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command(bin, "-version", VCenterVersion, "-user", User, "-password", password, "-trace", trace)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := testenv.StartOwned(cmd); err != nil {
		t.Fatalf("vcsim: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("vcsim did not say its URL: %v\n%s", err, stderr.String())
	}
	sdk, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("vcsim's URL %q: %v", line, err)
	}
	ctx := context.Background()
	u := *sdk
	u.User = url.UserPassword(User, password)
	c, err := govmomi.NewClient(ctx, &u, true)
	if err != nil {
		t.Fatalf("vcsim login: %v", err)
	}
	t.Cleanup(func() { _ = c.Logout(context.Background()) })
	f := find.NewFinder(c.Client)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	ds, err := f.Datastore(ctx, "LocalDS_0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(sdk.Host, ":")
	return &VCenter{URL: sdk, Host: host, Port: port, Client: c, Datacenter: dc, Datastore: ds, Password: password, trace: trace}
}

// Calls are the API calls csimigrate's clients (by their User-Agent) made
// so far: "ENDPOINT-PATH METHOD", sorted, each once.
func (vc *VCenter) Calls(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(vc.trace)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if line != "" && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

// CreateDisk creates a thin VMDK of sizeMB at the datastore path
// "[LocalDS_0] dir/name.vmdk", as the in-tree provisioner did.
func (vc *VCenter) CreateDisk(t testing.TB, path string, sizeMB int64) {
	t.Helper()
	ctx := context.Background()
	dir := path[strings.Index(path, "] ")+2 : strings.LastIndex(path, "/")]
	fm := object.NewFileManager(vc.Client.Client)
	if err := fm.MakeDirectory(ctx, fmt.Sprintf("[%s] %s", vc.Datastore.Name(), dir), vc.Datacenter, true); err != nil {
		t.Fatal(err)
	}
	spec := &types.FileBackedVirtualDiskSpec{VirtualDiskSpec: types.VirtualDiskSpec{DiskType: string(types.VirtualDiskTypeThin), AdapterType: string(types.VirtualDiskAdapterTypeLsiLogic)},
		CapacityKb: sizeMB * 1024}
	task, err := object.NewVirtualDiskManager(vc.Client.Client).CreateVirtualDisk(ctx, path, vc.Datacenter, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatalf("creating %s: %v", path, err)
	}
}

// diskURL is a datastore path as the URL vCenter registers disks by (the
// driver's syncer's form).
func (vc *VCenter) diskURL(path string) string {
	p, _ := volumeid.ParseVSpherePath(path)
	return fmt.Sprintf("%s://%s/folder/%s?dcPath=%s&dsName=%s", vc.URL.Scheme, vc.URL.Host, p.Path, url.PathEscape("/"+vc.Datacenter.Name()), url.PathEscape(p.DatastoreName()))
}

// RegisterAsSyncer does for an in-tree disk what the vSphere CSI driver's
// syncer does before the driver serves it by its path, and fails the test
// where that fails (see Register). It returns the FCD id, which is also the
// CNS volume id.
func (vc *VCenter) RegisterAsSyncer(t testing.TB, path, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := vc.Register(ctx, path, name, "")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Register plays the vSphere CSI driver's syncer (pkg/apis/migration
// registerVolume of v3.7.0) for an in-tree volume: the storage policy
// looked up by name where the volume names one, the VMDK registered as a
// First Class Disk by its datastore URL, and the CNS volume of that disk
// created with the policy. vCenter 7.0u1 and later register by the disk's
// URL path in one CNS call, which vcsim does not serve: this is the 6.7u3
// to 7.0 sequence, which fails where that call fails (no datastore, no
// file, no policy of the name). It returns the FCD id, which is also the
// CNS volume id.
func (vc *VCenter) Register(ctx context.Context, path, name, policy string) (string, error) {
	var profiles []types.BaseVirtualMachineProfileSpec
	if policy != "" {
		pc, err := pbm.NewClient(ctx, vc.Client.Client)
		if err != nil {
			return "", err
		}
		id, err := pc.ProfileIDByName(ctx, policy)
		if err != nil {
			return "", fmt.Errorf("storage policy %q: %w", policy, err)
		}
		profiles = append(profiles, &types.VirtualMachineDefinedProfileSpec{ProfileId: id})
	}
	obj, err := vslm.NewObjectManager(vc.Client.Client).RegisterDisk(ctx, vc.diskURL(path), name)
	if err != nil {
		return "", fmt.Errorf("registering %s as a First Class Disk: %w", path, err)
	}
	id := obj.Config.Id.Id
	cc, err := cns.NewClient(ctx, vc.Client.Client)
	if err != nil {
		return "", err
	}
	task, err := cc.CreateVolume(ctx, []cnstypes.CnsVolumeCreateSpec{{Name: name, VolumeType: string(cnstypes.CnsVolumeTypeBlock),
		Datastores:           []types.ManagedObjectReference{vc.Datastore.Reference()},
		Metadata:             cnstypes.CnsVolumeMetadata{ContainerCluster: cnstypes.CnsContainerCluster{ClusterType: string(cnstypes.CnsClusterTypeKubernetes), ClusterId: ClusterID, VSphereUser: User, ClusterFlavor: string(cnstypes.CnsClusterFlavorVanilla)}},
		BackingObjectDetails: &cnstypes.CnsBlockBackingDetails{BackingDiskId: id}, Profile: profiles}})
	if err != nil {
		return "", err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return "", fmt.Errorf("the CNS volume of FCD %s: %w", id, err)
	}
	res, err := cns.GetTaskResult(ctx, info)
	if err != nil {
		return "", err
	}
	if f := res.GetCnsVolumeOperationResult().Fault; f != nil {
		return "", fmt.Errorf("the CNS volume of FCD %s: %s", id, f.LocalizedMessage)
	}
	return id, nil
}

// SetHardwareVersion sets a simulator VM's hardware version ("vmx-19").
func (vc *VCenter) SetHardwareVersion(t testing.TB, name, version string) {
	t.Helper()
	ctx := context.Background()
	f := find.NewFinder(vc.Client.Client)
	f.SetDatacenter(vc.Datacenter)
	vm, err := f.VirtualMachine(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Version: version})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("setting %s's hardware version: %v", name, err)
	}
}

// FCDExists reports whether vCenter knows the First Class Disk id.
func (vc *VCenter) FCDExists(t testing.TB, id string) bool {
	t.Helper()
	_, err := vslm.NewObjectManager(vc.Client.Client).Retrieve(context.Background(), vc.Datastore, id)
	return err == nil
}

// VMUUID is the BIOS uuid of a simulator VM (what a Node's providerID
// vsphere://<uuid> names, and the node id the driver takes).
func (vc *VCenter) VMUUID(t testing.TB, name string) string {
	t.Helper()
	f := find.NewFinder(vc.Client.Client)
	f.SetDatacenter(vc.Datacenter)
	vm, err := f.VirtualMachine(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return vm.UUID(context.Background())
}
