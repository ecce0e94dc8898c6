package cephtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/rbd"
)

const (
	mib        = int64(1) << 20
	imageSize  = 64 * mib
	expandSize = 128 * mib
)

// rbdCase is one in-tree RBD PV of the generated set.
type rbdCase struct {
	Monitors []string
	Pool     string
	Image    string
}

// monitorSpellings are ways to name the one monitor: each is its own
// clusterID in a migration handle.
var monitorSpellings = [][]string{{MonitorV1}, {"127.0.0.1"}, {MonitorV1, MonitorV2}}

// rbdCases draws in-tree RBD volumes: dynamic images (the in-tree
// provisioner's names), static names with and without the prefix, and the
// edges of Ceph CSI's handle reader, in the given pools.
func rbdCases(pools []string) *rapid.Generator[rbdCase] {
	return rapid.Custom(func(t *rapid.T) rbdCase {
		return rbdCase{
			Monitors: rapid.SampledFrom(monitorSpellings).Draw(t, "monitors"),
			Pool:     rapid.SampledFrom(pools).Draw(t, "pool"),
			Image: rapid.OneOf(
				rapid.StringMatching(`kubernetes-dynamic-pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`),
				rapid.StringMatching(`[a-zA-Z0-9][a-zA-Z0-9_.-]{0,16}`),
				rapid.StringMatching(`kubernetes-dynamic-pvc-[a-z0-9_.-]{1,12}`),
				rapid.StringMatching(`kubernetes-dynamic-pvc-[a-z0-9]{0,4}(image-|mons-|mig)[a-z0-9-]{0,6}`),
			).Draw(t, "image"),
		}
	})
}

// edgeCases are the cases every run has: one of each consequence.
func edgeCases(pools []string) []rbdCase {
	p := pools[1]
	m := monitorSpellings[0]
	return []rbdCase{
		{m, p, "kubernetes-dynamic-pvc-" + NewUUID()},  // what the in-tree provisioner made
		{m, p, "kubernetes-dynamic-pvc-"},              // the bare prefix: resolves right
		{m, p, "kubernetes-dynamic-pvc-a_b"},           // "_": the handle does not parse
		{m, p, "static-image"},                         // no prefix: names another image
		{m, p, "kubernetes-dynamic-pvc-x-image-y"},     // "image-" inside: names another image
		{m, p, "kubernetes-dynamic-pvc-image-1"},       // names the bare prefix
		{m, p, "kubernetes-dynamic-pvc-mons-1"},        // "mons-" inside: resolves right
		{m, "", "kubernetes-dynamic-pvc-" + NewUUID()}, // no pool (the API server defaults it to rbd)
	}
}

// seed is the run's seed for generated cases: CSIMIGRATE_CEPH_SEED, or the
// time.
func seed(t testing.TB) int {
	if s := os.Getenv("CSIMIGRATE_CEPH_SEED"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("CSIMIGRATE_CEPH_SEED=%q: %v", s, err)
		}
		return n
	}
	n := int(time.Now().UnixNano() % 1_000_000)
	t.Logf("generated cases from seed %d (set CSIMIGRATE_CEPH_SEED=%d to repeat)", n, n)
	return n
}

func inTreeRBDPV(name string, c rbdCase, user, secret string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/rbd"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(imageSize, resource.BinarySI)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
				CephMonitors: c.Monitors, RBDPool: c.Pool, RBDImage: c.Image, RadosUser: user, FSType: "ext4",
				SecretRef: &v1.SecretReference{Name: secret, Namespace: "default"},
			}},
		},
	}
}

// createPool creates and initialises an RBD pool.
func createPool(t testing.TB, c *Cluster, pool string) {
	t.Helper()
	ctx := callCtx(t)
	if _, err := c.Ceph(ctx, "osd", "pool", "create", pool, "8", "8"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RBD(ctx, "pool", "init", pool); err != nil {
		t.Fatal(err)
	}
}

// images returns what `rbd ls -l` reports for a pool: image name -> size.
func images(t testing.TB, c *Cluster, pool string) map[string]int64 {
	t.Helper()
	out, err := c.RBD(callCtx(t), "ls", "-l", "--format", "json", "--pool", pool)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Image    string `json:"image"`
		Size     int64  `json:"size"`
		Snapshot string `json:"snapshot"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("rbd ls -l: %v: %s", err, out)
	}
	m := map[string]int64{}
	for _, i := range list {
		if i.Snapshot == "" {
			m[i.Image] = i.Size
		}
	}
	return m
}

// trash returns the names of the images in a pool's trash.
func trash(t testing.TB, c *Cluster, pool string) map[string]bool {
	t.Helper()
	out, err := c.RBD(callCtx(t), "trash", "ls", "--all", "--format", "json", "--pool", pool)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("rbd trash ls: %v: %s", err, out)
	}
	m := map[string]bool{}
	for _, i := range list {
		m[i.Name] = true
	}
	return m
}

// codeOf is the gRPC code of a CSI call's error (OK for nil).
func codeOf(err error) codes.Code { return status.Code(err) }

// readAs matches the consequence CheckPV states for a handle Ceph CSI reads
// as another image.
var readAs = regexp.MustCompile(`Ceph CSI reads this volume's migration handle as image "([^"]*)" in pool "([^"]*)"`)

// TestCephRBDHandleHazards translates generated in-tree RBD PVs and sends
// ControllerExpandVolume and DeleteVolume for each translated handle to Ceph
// CSI's RBD controller, then asks Ceph what happened. A PV CheckPV does not
// flag must have exactly its image resized and deleted; for a PV it flags,
// its image must be left as it was, and what Ceph CSI did instead must be
// what the finding says: fail to parse the handle, or act on the image it
// names (resized and deleted when it exists; when it does not, delete
// reports success).
func TestCephRBDHandleHazards(t *testing.T) {
	c, d := cephEnv(t)
	pools := []string{"rbd", "k8s.pool-1"}
	pools = append(pools, rapid.StringMatching(`[a-z0-9][a-z0-9.-]{2,10}[a-z0-9]`).Example(seed(t)))
	for _, p := range pools {
		createPool(t, c, p)
	}
	cases := edgeCases(pools)
	gen := rbdCases(pools)
	base := seed(t)
	for i := range 22 {
		cases = append(cases, gen.Example(base+i))
	}
	pvs := make([]*v1.PersistentVolume, len(cases))
	objs := make([]runtime.Object, len(cases))
	for i, rc := range cases {
		pvs[i] = inTreeRBDPV(fmt.Sprintf("pv-%02d", i), rc, "admin", "ceph-admin")
		objs[i] = pvs[i]
	}
	tr, logger := configure(t, d, objs...)
	adminSecret := map[string]string{"key": c.AdminKey}
	var flagged, clean int
	for i, rc := range cases {
		pv := pvs[i]
		t.Run(fmt.Sprintf("%02d/%s/%s", i, rc.Pool, rc.Image), func(t *testing.T) {
			ctx := callCtx(t)
			csiPV, err := tr.TranslateInTreePVToCSI(logger, pv)
			if err != nil {
				t.Fatalf("translate: %v", err)
			}
			handle := csiPV.Spec.CSI.VolumeHandle
			var finding *plugin.Finding
			for _, f := range tr.CheckPV(pv) {
				if f.Code == rbd.FindingHandleResolvesElsewhere {
					f := f
					finding = &f
				}
			}
			realPool := rc.Pool
			if realPool == "" {
				realPool = "rbd"
			}
			// The image the PV names, and, where the finding says Ceph CSI
			// reads the handle as another image, that image too on every
			// other case, to see whether it is acted on.
			if _, err := c.RBD(ctx, "create", "--size", "64M", realPool+"/"+rc.Image); err != nil {
				t.Fatal(err)
			}
			var decoy, decoyPool string
			if finding != nil {
				if m := readAs.FindStringSubmatch(finding.Message); m != nil {
					decoy, decoyPool = m[1], m[2]
				}
			}
			withDecoy := decoy != "" && decoy != rc.Image && i%2 == 0
			if withDecoy {
				if _, err := c.RBD(ctx, "create", "--size", "64M", decoyPool+"/"+decoy); err != nil {
					t.Fatal(err)
				}
			}
			_, expandErr := d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: handle,
				CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: adminSecret, VolumeCapability: mountCap("ext4")})
			afterExpand := images(t, c, realPool)
			var decoyAfterExpand map[string]int64
			if withDecoy {
				decoyAfterExpand = images(t, c, decoyPool)
			}
			_, deleteErr := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: handle, Secrets: adminSecret})
			afterDelete := images(t, c, realPool)
			t.Logf("handle %s: expand %v, delete %v", handle, codeOf(expandErr), codeOf(deleteErr))

			resized := afterExpand[rc.Image] == expandSize
			_, stillThere := afterDelete[rc.Image]
			right := resized && !stillThere && expandErr == nil && deleteErr == nil
			if right {
				clean++
				if finding != nil {
					t.Errorf("false positive: Ceph CSI resized and deleted %s/%s through handle %s, but CheckPV says: %s", realPool, rc.Image, handle, finding.Message)
				}
				if !trash(t, c, realPool)[rc.Image] && !gone(t, c, realPool, rc.Image) {
					t.Errorf("%s/%s is neither in the trash nor purged", realPool, rc.Image)
				}
				return
			}
			flagged++
			if finding == nil {
				t.Fatalf("false negative: CheckPV does not flag the PV, but through handle %s Ceph CSI did: expand %v (%v), image size %d; delete %v (%v), image still listed: %v",
					handle, codeOf(expandErr), expandErr, afterExpand[rc.Image], codeOf(deleteErr), deleteErr, stillThere)
			}
			// The real image is untouched.
			if afterDelete[rc.Image] != imageSize {
				t.Errorf("%s/%s: size after the calls %d, want it left at %d", realPool, rc.Image, afterDelete[rc.Image], imageSize)
			}
			defer c.RBD(context.Background(), "rm", "--no-progress", realPool+"/"+rc.Image)
			switch {
			case strings.Contains(finding.Message, "cannot parse"):
				if codeOf(expandErr) != codes.Internal || codeOf(deleteErr) != codes.InvalidArgument {
					t.Errorf("finding says Ceph CSI cannot parse the handle; it answered expand %v (%v), delete %v (%v)", codeOf(expandErr), expandErr, codeOf(deleteErr), deleteErr)
				}
			case decoy != "" && withDecoy:
				if decoyAfterExpand[decoy] != expandSize || expandErr != nil {
					t.Errorf("finding says Ceph CSI acts on %s/%s; expand gave %v and left it at %d bytes", decoyPool, decoy, expandErr, decoyAfterExpand[decoy])
				}
				if _, ok := images(t, c, decoyPool)[decoy]; ok || deleteErr != nil {
					t.Errorf("finding says Ceph CSI acts on %s/%s; delete gave %v and the image is still listed: %v", decoyPool, decoy, deleteErr, ok)
				}
			case decoy != "":
				if codeOf(expandErr) != codes.Internal || deleteErr != nil {
					t.Errorf("finding says that without %s/%s expand fails with Internal and delete reports success; got expand %v (%v), delete %v (%v)",
						decoyPool, decoy, codeOf(expandErr), expandErr, codeOf(deleteErr), deleteErr)
				}
			default:
				t.Errorf("the finding states no consequence the test can check: %s", finding.Message)
			}
		})
	}
	t.Logf("%d cases: %d resolved to their image, %d flagged and left intact", len(cases), clean, flagged)
	if clean == 0 || flagged == 0 {
		t.Errorf("the set lacks a kind: %d right, %d flagged", clean, flagged)
	}
}

// gone reports whether an image is in neither the pool nor its trash.
func gone(t testing.TB, c *Cluster, pool, image string) bool {
	_, listed := images(t, c, pool)[image]
	return !listed && !trash(t, c, pool)[image]
}
