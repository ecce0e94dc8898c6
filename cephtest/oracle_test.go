package cephtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/secrets"
)

// The oracle's cluster: one pool, a user limited to it, a CephFS user
// limited to a directory, and the namespaces the generated objects use.
const (
	oraclePool   = "oracle"
	oracleUser   = "tenant"   // caps on oraclePool only
	oracleFSUser = "fstenant" // caps on /oracle only
	oracleNS     = "apps"
	oracleOther  = "vault" // another namespace, for secrets kept apart
	oracleSysNS  = "ceph-system"
)

// Driver reasons: the plan's codes that say the driver would refuse the
// volume as it is. A PV blocked only for other reasons (a claim, a
// finalizer) is not judged by the driver.
var driverReasons = []string{"SecretNotReady", "SecretMissing", "RBDNoSecretRef", "CephFSSecretFileOnly"}

// secretShape is a Secret an in-tree volume of RADOS user u could have
// used, as the in-tree plugins accepted it, and the CSI secrets admins
// made for CephFS.
type secretShape int

const (
	shapeMissing     secretShape = iota // no Secret of that name
	shapeKey                            // key: u's key (in-tree's form)
	shapeKeyAdminID                     // key and adminId: u (the migration fix applied)
	shapeKeyOtherID                     // key and adminId naming another user
	shapeUserIDKey                      // userID: u, userKey: u's key (Ceph CSI's form)
	shapeSingleField                    // u's key under another single field (in-tree read any)
	numShapes
)

func (s secretShape) String() string {
	return [...]string{"missing", "key", "key+adminId", "key+otherAdminId", "userID+userKey", "single-other-field"}[s]
}

// oraclePV is one drawn in-tree volume and what was made for it.
type oraclePV struct {
	PV     *v1.PersistentVolume
	Image  string // RBD: the image, in oraclePool
	Shape  secretShape
	Class  string // the StorageClass an RBD PV names ("" none)
	Stage  string // CephFS: the shape of the node-stage secret
	keyFor string // the user whose key the secrets hold
}

// oracleCluster is one drawn cluster: PVs, their classes and secrets.
type oracleCluster struct {
	// ClassShape and ClassUser: the classes' admin secret.
	ClassShape secretShape
	ClassUser  string
	PVs        []oraclePV
	Claims     []*v1.PersistentVolumeClaim
	Pods       []*v1.Pod
	Secrets    []*v1.Secret
	Classes    []*storagev1.StorageClass
}

func (oc *oracleCluster) objects() []runtime.Object {
	var out []runtime.Object
	for _, s := range oc.Secrets {
		out = append(out, s)
	}
	for _, c := range oc.Classes {
		out = append(out, c)
	}
	for _, c := range oc.Claims {
		out = append(out, c)
	}
	for _, p := range oc.Pods {
		out = append(out, p)
	}
	for _, p := range oc.PVs {
		out = append(out, p.PV)
	}
	return out
}

func (oc *oracleCluster) secret(ns, name string) *v1.Secret {
	for _, s := range oc.Secrets {
		if s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

func mkSecret(ns, name string, kv ...string) *v1.Secret {
	s := &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Data[kv[i]] = []byte(kv[i+1])
	}
	return s
}

// shapedSecret is the Secret of a shape for user u (key k); other is
// another user's name.
func shapedSecret(ns, name string, shape secretShape, u, k, other string) *v1.Secret {
	switch shape {
	case shapeKey:
		return mkSecret(ns, name, "key", k)
	case shapeKeyAdminID:
		return mkSecret(ns, name, "key", k, "adminId", u)
	case shapeKeyOtherID:
		return mkSecret(ns, name, "key", k, "adminId", other)
	case shapeUserIDKey:
		return mkSecret(ns, name, "userID", u, "userKey", k)
	case shapeSingleField:
		return mkSecret(ns, name, "password", k)
	}
	return nil
}

// drawCluster draws one to three RBD PVs and at most one CephFS PV with
// every secret shape, user, access mode, volume mode, reclaim policy and
// provisioner (none, kubernetes.io/rbd, ceph.com/rbd; with an admin secret
// that is ready or lacks the class user's adminId). Images, directories
// and users are made in Ceph by the caller.
func drawCluster(t *rapid.T, keys map[string]string, round int) *oracleCluster {
	oc := &oracleCluster{}
	// The classes' admin secret: every shape, for admin or the tenant.
	classUser := rapid.SampledFrom([]string{"admin", oracleUser}).Draw(t, "classUser")
	classOther := "admin"
	if classUser == "admin" {
		classOther = oracleUser
	}
	oc.ClassShape = secretShape(rapid.IntRange(0, int(numShapes)-1).Draw(t, "classShape"))
	oc.ClassUser = classUser
	if s := shapedSecret(oracleSysNS, "ceph-admin", oc.ClassShape, classUser, keys[classUser], classOther); s != nil {
		oc.Secrets = append(oc.Secrets, s)
	}
	for _, prov := range []string{"kubernetes.io/rbd", "ceph.com/rbd"} {
		name := "oracle-" + strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(prov, "kubernetes.io/"), "ceph.com/"), "/", "-")
		if prov == "ceph.com/rbd" {
			name += "-external"
		}
		oc.Classes = append(oc.Classes, &storagev1.StorageClass{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov,
			Parameters: map[string]string{"monitors": MonitorV1, "pool": oraclePool, "adminId": classUser, "adminSecretName": "ceph-admin", "adminSecretNamespace": oracleSysNS}})
	}
	modes := [][]v1.PersistentVolumeAccessMode{{v1.ReadWriteOnce}, {v1.ReadOnlyMany}, {v1.ReadWriteMany}, {v1.ReadWriteOnce, v1.ReadOnlyMany}, {v1.ReadWriteMany, v1.ReadWriteOnce}}
	fs, block := v1.PersistentVolumeFilesystem, v1.PersistentVolumeBlock
	volModes := []*v1.PersistentVolumeMode{nil, &fs, &block}
	n := rapid.IntRange(1, 3).Draw(t, "rbdPVs")
	for i := range n {
		name := fmt.Sprintf("o%d-rbd-%d", round, i)
		user := rapid.SampledFrom([]string{"", "admin", oracleUser}).Draw(t, "user")
		keyUser := user
		if keyUser == "" {
			keyUser = "admin"
		}
		other := "admin"
		if keyUser == "admin" {
			other = oracleUser
		}
		shape := secretShape(rapid.IntRange(0, int(numShapes)-1).Draw(t, "shape"))
		secretNS := rapid.SampledFrom([]string{oracleNS, oracleOther}).Draw(t, "secretNamespace")
		secretName := "ceph-" + name
		if s := shapedSecret(secretNS, secretName, shape, keyUser, keys[keyUser], other); s != nil {
			oc.Secrets = append(oc.Secrets, s)
		}
		policy := rapid.SampledFrom([]v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete}).Draw(t, "policy")
		class := rapid.SampledFrom([]string{"", "oracle-rbd", "oracle-rbd-external"}).Draw(t, "class")
		image := "kubernetes-dynamic-pvc-" + NewUUID()
		pv := &v1.PersistentVolume{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(imageSize, resource.BinarySI)},
				AccessModes:                   rapid.SampledFrom(modes).Draw(t, "accessModes"),
				VolumeMode:                    rapid.SampledFrom(volModes).Draw(t, "volumeMode"),
				PersistentVolumeReclaimPolicy: policy,
				StorageClassName:              class,
				PersistentVolumeSource: v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{
					CephMonitors: []string{MonitorV1}, RBDPool: oraclePool, RBDImage: image, RadosUser: user, FSType: "ext4",
					SecretRef: &v1.SecretReference{Name: secretName, Namespace: secretNS}}},
			},
		}
		if class != "" {
			by := "kubernetes.io/rbd"
			if class == "oracle-rbd-external" {
				by = "ceph.com/rbd"
			}
			pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": by}
		}
		// Bound to a claim (with a pod using it, some of the time); then the
		// secret reference may leave the namespace out: in-tree read the
		// secret in the claim's namespace, as the translation does.
		if rapid.Bool().Draw(t, "bound") {
			claim := &v1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: "c-" + name, UID: types.UID(NewUUID())},
				Spec:       v1.PersistentVolumeClaimSpec{VolumeName: name, AccessModes: pv.Spec.AccessModes, StorageClassName: &class}}
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
			if rapid.Bool().Draw(t, "namespaceLess") {
				pv.Spec.RBD.SecretRef.Namespace = ""
			}
			oc.Claims = append(oc.Claims, claim)
			if rapid.Bool().Draw(t, "inUse") {
				oc.Pods = append(oc.Pods, &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: "p-" + name},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}},
						Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}}})
			}
		}
		oc.PVs = append(oc.PVs, oraclePV{PV: pv, Image: image, Shape: shape, Class: class, keyFor: keyUser})
	}
	if rapid.Bool().Draw(t, "cephfs") {
		name := fmt.Sprintf("o%d-fs", round)
		user := rapid.SampledFrom([]string{"", "admin", oracleFSUser}).Draw(t, "fsUser")
		keyUser := user
		if keyUser == "" {
			keyUser = "admin"
		}
		inTree := mkSecret(oracleNS, "cephfs-"+name, "key", keys[keyUser])
		oc.Secrets = append(oc.Secrets, inTree)
		stage := rapid.SampledFrom([]string{"derived-missing", "derived-ready", "derived-key-only", "named-ready", "named-other-user"}).Draw(t, "stageSecret")
		pv := &v1.PersistentVolume{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   rapid.SampledFrom(modes).Draw(t, "fsAccessModes"),
				PersistentVolumeReclaimPolicy: rapid.SampledFrom([]v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete}).Draw(t, "fsPolicy"),
				MountOptions:                  []string{"mds_namespace=" + FSName},
				PersistentVolumeSource: v1.PersistentVolumeSource{CephFS: &v1.CephFSPersistentVolumeSource{
					Monitors: []string{MonitorV1}, Path: "/oracle/" + name, User: user,
					SecretRef: &v1.SecretReference{Name: inTree.Name, Namespace: oracleNS}}},
			},
		}
		derivedName := secrets.CephFSCSISecretName(inTree.Name, keyUser)
		switch stage {
		case "derived-ready":
			oc.Secrets = append(oc.Secrets, mkSecret(oracleNS, derivedName, "userID", keyUser, "userKey", keys[keyUser]))
		case "derived-key-only":
			oc.Secrets = append(oc.Secrets, mkSecret(oracleNS, derivedName, "key", keys[keyUser]))
		case "named-ready", "named-other-user":
			// The admin names a CSI secret of their own; in the second
			// case, of a user the file system does not know.
			id, k := keyUser, keys[keyUser]
			if stage == "named-other-user" {
				id, k = "nobody", keys[keyUser]
			}
			oc.Secrets = append(oc.Secrets, mkSecret(oracleOther, "cephfs-csi-"+name, "userID", id, "userKey", k))
			pv.Annotations = map[string]string{"cephfs.csimigrate.io/node-stage-secret": oracleOther + "/cephfs-csi-" + name}
		}
		oc.PVs = append(oc.PVs, oraclePV{PV: pv, Stage: stage, keyFor: keyUser})
	}
	return oc
}

// oracleVolume is the part of the plan's JSON the oracle reads.
type oracleVolume struct {
	Name       string `json:"name"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason"`
	Findings   []struct {
		Code string `json:"code"`
	} `json:"findings"`
}

func (v oracleVolume) has(codes ...string) bool {
	return slices.ContainsFunc(v.Findings, func(f struct {
		Code string `json:"code"`
	}) bool {
		return slices.Contains(codes, f.Code)
	})
}

// capabilities are a PV's access modes as capabilities, one per mode, as
// external-provisioner asks CreateVolume for them: Ceph CSI's RBD
// controller refuses a multi-node writer on a file system there with the
// rule its node server applies to NodeStageVolume.
func capabilities(pv *v1.PersistentVolume) []*csi.VolumeCapability {
	var out []*csi.VolumeCapability
	for _, m := range pv.Spec.AccessModes {
		one := pv.DeepCopy()
		one.Spec.AccessModes = []v1.PersistentVolumeAccessMode{m}
		out = append(out, capability(one))
	}
	return out
}

func modeName(m *v1.PersistentVolumeMode) string {
	if m == nil {
		return "(unset)"
	}
	return string(*m)
}

// capability is the capability the kubelet asks for a PV: its first access
// mode (csi_attacher's MountDevice) and its volume mode.
func capability(pv *v1.PersistentVolume) *csi.VolumeCapability {
	mode := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	if len(pv.Spec.AccessModes) > 0 {
		switch pv.Spec.AccessModes[0] {
		case v1.ReadOnlyMany:
			mode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
		case v1.ReadWriteMany:
			mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		}
	}
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}}
	}
	return c
}

// TestCephPlanVerdictOracle: the plan's verdict per PV is the real Ceph CSI
// v3.12.2's. Over generated clusters (secret shapes the in-tree plugins
// accepted, users admin and non-admin, secrets in other namespaces, every
// access mode and volume mode, both reclaim policies, PVs of in-tree and
// ceph.com/rbd classes with ready and unready admin secrets, CephFS volumes
// with derived, named, missing and unusable node-stage secrets), each PV
// the plan calls migratable is accepted by the driver with the secrets the
// input holds (a migratable PV needs none the plan lists): RBD
// ControllerExpandVolume with its controller-expand secret resizes its
// image; Ceph CSI's check of the access mode the kubelet would ask for
// passes (asked of the RBD controller's CreateVolume, which applies the
// node server's rule; the RBD node server cannot run here: it needs the
// rbd kernel module); where the plan keeps Delete, DeleteVolume with the
// deletion secret the rewrite names removes the image; CephFS
// NodeStageVolume through ceph-fuse mounts it. Each PV the plan blocks for
// a driver reason is refused by the driver in one of those calls. Both
// false counts must be zero.
func TestCephPlanVerdictOracle(t *testing.T) {
	c, d := cephEnv(t)
	ctx := callCtx(t)
	keys := map[string]string{"admin": c.AdminKey, oracleUser: poolUser(t, c, oraclePool, oracleUser)}
	mnt := adminMount(t, c)
	if err := os.MkdirAll(filepath.Join(mnt, "oracle"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ceph(ctx, "fs", "authorize", FSName, "client."+oracleFSUser, "/oracle", "rw"); err != nil {
		t.Fatal(err)
	}
	k, err := c.Ceph(ctx, "auth", "get-key", "client."+oracleFSUser)
	if err != nil {
		t.Fatal(err)
	}
	keys[oracleFSUser] = strings.TrimSpace(k)

	draws := 24
	if s := os.Getenv("CSIMIGRATE_ORACLE_DRAWS"); s != "" {
		fmt.Sscan(s, &draws)
	}
	base := seed(t)
	start := time.Now()
	var pvs, ready, blockedDriver, blockedOther, falseReady, falseBlocked int
	var scs, readyClasses, falseReadyClasses, falseBlockedClasses int
	for round := range draws {
		var oc *oracleCluster
		rapid.Custom(func(rt *rapid.T) int { oc = drawCluster(rt, keys, round); return 0 }).Example(base + round)
		for _, p := range oc.PVs {
			if p.Image != "" {
				if _, err := c.RBD(ctx, "create", "--size", "64M", oraclePool+"/"+p.Image); err != nil {
					t.Fatal(err)
				}
			} else if err := os.MkdirAll(filepath.Join(mnt, p.PV.Spec.CephFS.Path), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// The driver gets the entries the plan gives first, as an
		// administrator adds them; the plan's verdicts are then judged on
		// the config the driver reads.
		tr, logger := configure(t, d, oc.objects()...)
		out := planJSON(t, oc.objects()...)
		var plan struct {
			Volumes []oracleVolume `json:"volumes"`
		}
		if err := json.Unmarshal(out, &plan); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, out)
		}
		// The CSI PVs the rewrite would create, as it prints them for
		// review; PVs it refuses are judged in their translated form.
		replacements := map[string]*v1.PersistentVolume{}
		classes := map[string]*storagev1.StorageClass{}
		for _, doc := range strings.Split(string(runCommand(t, []string{"rewrite", "-o", "yaml"}, oc.objects()...)), "\n---\n") {
			if strings.Contains(doc, "kind: StorageClass\n") {
				var sc storagev1.StorageClass
				if err := yaml.Unmarshal([]byte(doc), &sc); err != nil {
					t.Fatalf("rewrite -o yaml: %v\n%s", err, doc)
				}
				classes[sc.Name] = &sc
			}
			if !strings.Contains(doc, "kind: PersistentVolume\n") {
				continue
			}
			var pv v1.PersistentVolume
			if err := yaml.Unmarshal([]byte(doc), &pv); err != nil {
				t.Fatalf("rewrite -o yaml: %v\n%s", err, doc)
			}
			replacements[pv.Name] = &pv
		}
		// The classes: the plan's verdict against CreateVolume with the
		// replacement class's parameters and provisioner secret, as
		// external-provisioner passes them.
		var planned struct {
			StorageClasses []struct {
				Name       string `json:"name"`
				Migratable bool   `json:"migratable"`
				Reason     string `json:"reason"`
			} `json:"storageClasses"`
		}
		if err := json.Unmarshal(out, &planned); err != nil {
			t.Fatal(err)
		}
		for _, sp := range planned.StorageClasses {
			scs++
			what := fmt.Sprintf("round %d (seed %d): class %s (admin secret %s, adminId %s)", round, base+round, sp.Name, oc.ClassShape, oc.ClassUser)
			sc, ok := classes[sp.Name]
			if !ok {
				if sp.Migratable {
					t.Errorf("%s: the plan calls it migratable, rewrite -o yaml prints no replacement", what)
				}
				// Refused by the rewrite: judged with the translation of
				// the in-tree class would need the library; the class's
				// secret is what the plan blocks it for, asked below with
				// the in-tree parameters' secret.
				sc = &storagev1.StorageClass{Parameters: map[string]string{"clusterID": clusterIDOf(t, MonitorV1), "pool": oraclePool, "imageFeatures": "layering",
					"csi.storage.k8s.io/provisioner-secret-name": "ceph-admin", "csi.storage.k8s.io/provisioner-secret-namespace": oracleSysNS}}
			}
			params, err := secrets.StripReserved(sc.Parameters)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := secrets.Resolve(secrets.Provisioner, sc.Parameters, secrets.Claim{PVName: "pvc-" + NewUUID()})
			if err != nil || ref == nil {
				t.Fatalf("%s: provisioner secret of %v: %v", what, sc.Parameters, err)
			}
			resp, err := d.RBD.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-" + NewUUID(), Parameters: params,
				Secrets: secrets.SecretStringData(oc.secret(ref.Namespace, ref.Name)), CapacityRange: &csi.CapacityRange{RequiredBytes: imageSize},
				VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")}})
			if err == nil {
				// Clean up with admin's credentials: the verdict is made.
				if _, derr := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId(),
					Secrets: map[string]string{"userID": "admin", "userKey": c.AdminKey}}); derr != nil {
					t.Errorf("%s: deleting the provisioned volume: %v", what, derr)
				}
			}
			switch {
			case sp.Migratable && err != nil:
				falseReadyClasses++
				t.Errorf("false ready: %s: the plan calls it migratable, CreateVolume: %v", what, err)
			case !sp.Migratable && err == nil:
				falseBlockedClasses++
				t.Errorf("false blocked: %s: the plan blocks it (%s), CreateVolume succeeded", what, sp.Reason)
			case sp.Migratable:
				readyClasses++
			}
		}
		for _, p := range oc.PVs {
			pvs++
			i := slices.IndexFunc(plan.Volumes, func(v oracleVolume) bool { return v.Name == p.PV.Name })
			if i < 0 {
				t.Fatalf("round %d: the plan has no volume %s", round, p.PV.Name)
			}
			v := plan.Volumes[i]
			csiPV, ok := replacements[p.PV.Name]
			if !ok {
				if csiPV, err = tr.TranslateInTreePVToCSI(logger, p.PV); err != nil {
					t.Fatalf("round %d: %s: %v", round, p.PV.Name, err)
				}
			}
			if v.Migratable && !ok {
				t.Errorf("round %d: %s: the plan calls it migratable, rewrite -o yaml prints no replacement", round, p.PV.Name)
			}
			secretOf := func(ref *v1.SecretReference) map[string]string {
				if ref == nil {
					return nil
				}
				return secrets.SecretStringData(oc.secret(ref.Namespace, ref.Name))
			}
			var refusals []string // what the driver refused, "call: error"
			src := csiPV.Spec.CSI
			if p.Image != "" {
				_, err := d.RBD.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: src.VolumeHandle,
					CapacityRange: &csi.CapacityRange{RequiredBytes: expandSize}, Secrets: secretOf(src.ControllerExpandSecretRef), VolumeCapability: capability(csiPV)})
				if err != nil {
					refusals = append(refusals, "ControllerExpandVolume: "+err.Error())
				} else if got := images(t, c, oraclePool)[p.Image]; got != expandSize {
					refusals = append(refusals, fmt.Sprintf("ControllerExpandVolume: succeeded, image size %d", got))
				}
				// The access-mode rule, without creating a volume: a
				// capability Ceph CSI accepts gets as far as the next check,
				// an empty imageFeatures parameter.
				// The modes of the PV the rewrite creates; of the in-tree PV
				// where the rewrite refuses it (a translation would narrow
				// them: the workloads' modes are the in-tree PV's).
				modesOf := csiPV
				if !ok {
					modesOf = p.PV
				}
				_, err = d.RBD.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "probe-" + p.PV.Name, VolumeCapabilities: capabilities(modesOf),
					Parameters: map[string]string{"clusterID": src.VolumeAttributes["clusterID"], "pool": oraclePool, "imageFeatures": ""},
					Secrets:    map[string]string{"userID": "admin", "userKey": c.AdminKey}})
				if err == nil || !strings.Contains(err.Error(), "empty imageFeatures parameter") {
					refusals = append(refusals, fmt.Sprintf("access modes %v of volumeMode %v: %v", modesOf.Spec.AccessModes, modeName(modesOf.Spec.VolumeMode), err))
				}
				// Deletion, where the rewritten PV ends with Delete (the
				// policy it restores), with the deletion secret it names.
				keepsDelete := ok && csiPV.Annotations["csimigrate.io/original-reclaim-policy"] == string(v1.PersistentVolumeReclaimDelete)
				if !ok {
					keepsDelete = p.PV.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete
				}
				if v.Migratable && keepsDelete == v.has("ReclaimPolicyKeptRetain") && p.PV.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete {
					t.Errorf("round %d: %s: the rewrite restores %s, the plan's finding says otherwise", round, p.PV.Name, csiPV.Annotations["csimigrate.io/original-reclaim-policy"])
				}
				if keepsDelete && len(refusals) == 0 {
					var del map[string]string
					if name := csiPV.Annotations["volume.kubernetes.io/provisioner-deletion-secret-name"]; name != "" {
						del = secretOf(&v1.SecretReference{Namespace: csiPV.Annotations["volume.kubernetes.io/provisioner-deletion-secret-namespace"], Name: name})
					}
					if _, err := d.RBD.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeHandle, Secrets: del}); err != nil {
						refusals = append(refusals, "DeleteVolume: "+err.Error())
					} else if _, still := images(t, c, oraclePool)[p.Image]; still {
						refusals = append(refusals, "DeleteVolume: succeeded, the image is still listed")
					}
				}
			} else {
				staging := filepath.Join(t.TempDir(), "staging")
				if err := os.Mkdir(staging, 0o750); err != nil {
					t.Fatal(err)
				}
				vc := maps.Clone(src.VolumeAttributes)
				vc["mounter"] = "fuse" // no kernel client here; in-tree's fallback too
				_, err := d.CephFS.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
					VolumeCapability: capability(p.PV), VolumeContext: vc, Secrets: secretOf(src.NodeStageSecretRef)})
				if err != nil {
					refusals = append(refusals, "NodeStageVolume: "+err.Error())
				} else if _, err := d.CephFS.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
					t.Errorf("NodeUnstageVolume: %v", err)
				}
			}
			accepted := len(refusals) == 0
			what := fmt.Sprintf("round %d (seed %d): %s (secret %s, user %q, modes %v, volumeMode %s, policy %s, class %q, stage secret %q)", round, base+round,
				p.PV.Name, p.Shape, userOf(p.PV), p.PV.Spec.AccessModes, modeName(p.PV.Spec.VolumeMode), p.PV.Spec.PersistentVolumeReclaimPolicy, p.Class, p.Stage)
			switch {
			case v.Migratable:
				ready++
				if !accepted {
					falseReady++
					t.Errorf("false ready: %s: the plan calls it migratable, Ceph CSI refused: %s", what, strings.Join(refusals, "; "))
				}
			case v.has(driverReasons...):
				blockedDriver++
				if accepted {
					falseBlocked++
					t.Errorf("false blocked: %s: the plan blocks it (%s), Ceph CSI accepted every call", what, v.Reason)
				}
			default:
				blockedOther++
			}
		}
	}
	t.Logf("oracle: %d draws, %d PVs: %d ready, %d blocked for a driver reason, %d blocked otherwise; false ready %d, false blocked %d; "+
		"%d StorageClasses: %d ready, false ready %d, false blocked %d; %s",
		draws, pvs, ready, blockedDriver, blockedOther, falseReady, falseBlocked, scs, readyClasses, falseReadyClasses, falseBlockedClasses, time.Since(start).Round(time.Second))
	if ready == 0 || blockedDriver == 0 || readyClasses == 0 || readyClasses == scs {
		t.Errorf("the generator reached %d ready and %d blocked PVs, %d ready classes of %d; it must reach every verdict", ready, blockedDriver, readyClasses, scs)
	}
}

func userOf(pv *v1.PersistentVolume) string {
	if pv.Spec.RBD != nil {
		return pv.Spec.RBD.RadosUser
	}
	return pv.Spec.CephFS.User
}

// clusterIDOf is the clusterID of monitors, as the plan computes it.
func clusterIDOf(t testing.TB, mons ...string) string {
	t.Helper()
	return ceph.EntryFor(mons).ClusterID
}
