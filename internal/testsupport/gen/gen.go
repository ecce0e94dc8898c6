// Package gen holds rapid generators of Kubernetes objects for the tests of
// this module and its test harness modules: valid in-tree PVs of every
// built-in plugin (accepted by API validation) and hostile ones.
package gen

import (
	"crypto/md5"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

// DNSLabel generates RFC 1123 labels.
func DNSLabel() *rapid.Generator[string] {
	return rapid.StringMatching(`[a-z]([a-z0-9-]{0,14}[a-z0-9])?`)
}

// DNSSubdomain generates RFC 1123 subdomains.
func DNSSubdomain() *rapid.Generator[string] {
	return rapid.StringMatching(`[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?){0,2}`)
}

func labelValue() *rapid.Generator[string] {
	return rapid.StringMatching(`([a-zA-Z0-9]([a-zA-Z0-9_.-]{0,10}[a-zA-Z0-9])?)?`)
}

// Meta generates PV metadata: a valid name, labels, annotations (none with
// the csimigrate.io prefixes, which translation owns) and finalizers.
func Meta(t *rapid.T) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: DNSSubdomain().Draw(t, "name")}
	if rapid.Bool().Draw(t, "hasLabels") {
		m.Labels = rapid.MapOfN(rapid.SampledFrom([]string{"app", "team", "example.com/tier"}), labelValue(), 1, 3).Draw(t, "labels")
	}
	if rapid.Bool().Draw(t, "hasAnnotations") {
		m.Annotations = rapid.MapOfN(rapid.SampledFrom([]string{"note", "pv.kubernetes.io/provisioned-by", "example.com/owner"}), rapid.String(), 1, 3).Draw(t, "annotations")
	}
	if rapid.Bool().Draw(t, "protected") {
		m.Finalizers = []string{"kubernetes.io/pv-protection"}
	}
	return m
}

var allModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany}

// Spec fills the plugin-independent parts of a PV spec.
func Spec(t *rapid.T, s *v1.PersistentVolumeSpec) {
	s.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(fmt.Sprintf("%dGi", rapid.IntRange(1, 2048).Draw(t, "gi")))}
	n := rapid.IntRange(1, 3).Draw(t, "nModes")
	s.AccessModes = append([]v1.PersistentVolumeAccessMode(nil), rapid.Permutation(allModes).Draw(t, "modes")[:n]...)
	s.PersistentVolumeReclaimPolicy = rapid.SampledFrom([]v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete}).Draw(t, "reclaim")
	if rapid.Bool().Draw(t, "bound") {
		s.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: DNSLabel().Draw(t, "claimNS"), Name: DNSSubdomain().Draw(t, "claimName")}
		if rapid.IntRange(0, 3).Draw(t, "claimUID") > 0 {
			// Without a uid: pre-bound by an administrator, not yet bound.
			s.ClaimRef.UID = "4b0a9c1e-6f0e-4e47-9d1a-6d1c2c7f0b21"
		}
	}
	if rapid.Bool().Draw(t, "hasSC") {
		s.StorageClassName = DNSSubdomain().Draw(t, "sc")
	}
	if rapid.Bool().Draw(t, "hasMountOptions") {
		s.MountOptions = rapid.SliceOfN(rapid.SampledFrom([]string{"noatime", "discard", "rw", "nodiratime"}), 1, 2).Draw(t, "mountOptions")
	}
	if m := rapid.SampledFrom([]v1.PersistentVolumeMode{"", v1.PersistentVolumeFilesystem, v1.PersistentVolumeBlock}).Draw(t, "volumeMode"); m != "" {
		s.VolumeMode = &m
	}
}

// Monitors generates Ceph monitor lists.
func Monitors(t *rapid.T) []string {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
		host := rapid.OneOf(
			rapid.Map(rapid.SliceOfN(rapid.IntRange(0, 255), 4, 4), func(b []int) string { return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3]) }),
			rapid.StringMatching(`mon-[a-z]\.ceph\.example\.com`),
		).Draw(t, "host")
		return fmt.Sprintf("%s:%d", host, rapid.SampledFrom([]int{6789, 3300}).Draw(t, "port"))
	}), 1, 3).Draw(t, "monitors")
}

// SecretRef generates a valid PV secret reference.
func SecretRef(t *rapid.T) *v1.SecretReference {
	return &v1.SecretReference{Name: DNSSubdomain().Draw(t, "secretName"), Namespace: DNSLabel().Draw(t, "secretNS")}
}

// InTreeSecretRef generates the secretRef of an in-tree RBD or CephFS PV in
// every form the API server accepts: absent, empty, without a name (no
// secret, in-tree), without a namespace (the pod's, in-tree: generated only
// when claim is set, whose namespace it then is), or whole. named requires
// a name.
func InTreeSecretRef(t *rapid.T, claim *v1.ObjectReference, named bool) *v1.SecretReference {
	forms := []string{"whole", "whole", "whole", "noNamespace"}
	if !named {
		forms = append(forms, "absent", "empty", "noName")
	}
	switch rapid.SampledFrom(forms).Draw(t, "secretRefForm") {
	case "absent":
		return nil
	case "empty":
		return &v1.SecretReference{}
	case "noName":
		return &v1.SecretReference{Namespace: DNSLabel().Draw(t, "secretNS")}
	case "noNamespace":
		if claim != nil {
			return &v1.SecretReference{Name: DNSSubdomain().Draw(t, "secretName")}
		}
	}
	return SecretRef(t)
}

// RBDImage generates image names: dynamic ones, and static ones with any
// name, including those the migration handle cannot represent.
func RBDImage(t *rapid.T) string {
	return rapid.OneOf(
		rapid.StringMatching(`kubernetes-dynamic-pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`),
		rapid.StringMatching(`[a-zA-Z0-9][a-zA-Z0-9_.-]{0,20}`),
		rapid.StringMatching(`kubernetes-dynamic-pvc-[a-z0-9_-]{1,12}`),
		// Edges of Ceph CSI's handle reader: the bare prefix, the markers
		// it searches for inside the name.
		rapid.SampledFrom([]string{"kubernetes-dynamic-pvc-", "kubernetes-dynamic-pvc-image-1", "kubernetes-dynamic-pvc-mons-1", "kubernetes-dynamic-pvc-mig"}),
	).Draw(t, "image")
}

// RBDPV generates valid in-tree RBD PVs.
func RBDPV(t *rapid.T) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: Meta(t)}
	Spec(t, &pv.Spec)
	src := &v1.RBDPersistentVolumeSource{
		CephMonitors: Monitors(t),
		RBDImage:     RBDImage(t),
		RBDPool:      rapid.SampledFrom([]string{"", "rbd", "replicapool", "pool_with_underscores", "kube"}).Draw(t, "pool"),
		RadosUser:    rapid.SampledFrom([]string{"", "admin", "kube", "client-a"}).Draw(t, "user"),
		Keyring:      rapid.SampledFrom([]string{"", "/etc/ceph/keyring", "/etc/ceph/kube.keyring"}).Draw(t, "keyring"),
		FSType:       rapid.SampledFrom([]string{"", "ext4", "xfs"}).Draw(t, "fsType"),
		ReadOnly:     rapid.Bool().Draw(t, "readOnly"),
	}
	src.SecretRef = InTreeSecretRef(t, pv.Spec.ClaimRef, false)
	pv.Spec.RBD = src
	if rapid.IntRange(0, 5).Draw(t, "rbdAnnotations") == 0 {
		if pv.Annotations == nil {
			pv.Annotations = map[string]string{}
		}
		pv.Annotations["imageFeatures"] = rapid.SampledFrom([]string{"layering", "layering,exclusive-lock", ""}).Draw(t, "imageFeatures")
		pv.Annotations["imageFormat"] = rapid.SampledFrom([]string{"2", ""}).Draw(t, "imageFormat")
		pv.Annotations["journalPool"] = rapid.SampledFrom([]string{"", "journal"}).Draw(t, "journalPool")
	}
	return pv
}

// CephFSPV generates valid in-tree CephFS PVs. secretFileOnly volumes are
// produced only when allowSecretFileOnly is set.
func CephFSPV(t *rapid.T, allowSecretFileOnly bool) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: Meta(t)}
	Spec(t, &pv.Spec)
	src := &v1.CephFSPersistentVolumeSource{
		Monitors:   Monitors(t),
		Path:       rapid.SampledFrom([]string{"", "/", "/volumes/csi/a", "volumes/b", "/with space/ü_x", "/a_b/c"}).Draw(t, "path"),
		User:       rapid.SampledFrom([]string{"", "admin", "kube", "client.x"}).Draw(t, "user"),
		SecretFile: rapid.SampledFrom([]string{"", "/etc/ceph/admin.secret"}).Draw(t, "secretFile"),
		ReadOnly:   rapid.Bool().Draw(t, "readOnly"),
	}
	if rapid.IntRange(0, 3).Draw(t, "emptyNS") == 0 && pv.Spec.ClaimRef == nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: DNSLabel().Draw(t, "claimNS"), Name: DNSSubdomain().Draw(t, "claimName")}
	}
	src.SecretRef = InTreeSecretRef(t, pv.Spec.ClaimRef, !allowSecretFileOnly)
	if rapid.Bool().Draw(t, "fsName") {
		opt := rapid.SampledFrom([]string{"mds_namespace=", "fs="}).Draw(t, "fsOpt") + rapid.StringMatching(`[a-z][a-z0-9]{0,8}`).Draw(t, "fs")
		pv.Spec.MountOptions = append(pv.Spec.MountOptions, opt)
	}
	pv.Spec.CephFS = src
	return pv
}

var zoneKeys = []string{v1.LabelTopologyZone, v1.LabelFailureDomainBetaZone}
var regionKeys = []string{v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion}

// VSpherePV generates valid in-tree vSphere PVs with and without node
// affinity and zone/region labels, GA and beta keys.
func VSpherePV(t *rapid.T) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: Meta(t)}
	Spec(t, &pv.Spec)
	pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{
		VolumePath: rapid.OneOf(
			rapid.StringMatching(`\[[a-zA-Z][a-zA-Z0-9 ]{0,10}\] kubevols/[a-z0-9-]{1,20}\.vmdk`),
			rapid.StringMatching(`\[DatastoreCluster/ds[0-9]\] kubevols/[a-z0-9-]{1,20}\.vmdk`),
			// Published example PVs name the disk without ".vmdk"; the
			// in-tree plugin appended it.
			rapid.StringMatching(`\[[a-zA-Z][a-zA-Z0-9]{0,10}\] volumes/[a-zA-Z0-9-]{1,20}`),
		).Draw(t, "volumePath"),
		FSType:            rapid.SampledFrom([]string{"", "ext4", "xfs"}).Draw(t, "fsType"),
		StoragePolicyName: rapid.SampledFrom([]string{"", "gold", "vSAN Default Storage Policy"}).Draw(t, "policyName"),
		StoragePolicyID:   rapid.SampledFrom([]string{"", "aa6d5a82-1c88-45da-85d3-3d74b91a5bad"}).Draw(t, "policyID"),
	}
	zoneVal := rapid.StringMatching(`zone-[a-c]`)
	regionVal := rapid.StringMatching(`region-[1-2]`)
	if rapid.Bool().Draw(t, "affinity") {
		terms := rapid.IntRange(1, 2).Draw(t, "terms")
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{}}
		for i := 0; i < terms; i++ {
			var exprs []v1.NodeSelectorRequirement
			if rapid.Bool().Draw(t, "zoneExpr") {
				exprs = append(exprs, v1.NodeSelectorRequirement{Key: rapid.SampledFrom(zoneKeys).Draw(t, "zoneKey"), Operator: v1.NodeSelectorOpIn,
					Values: rapid.SliceOfNDistinct(zoneVal, 1, 2, rapid.ID).Draw(t, "zones")})
			}
			if rapid.Bool().Draw(t, "regionExpr") {
				exprs = append(exprs, v1.NodeSelectorRequirement{Key: rapid.SampledFrom(regionKeys).Draw(t, "regionKey"), Operator: v1.NodeSelectorOpIn,
					Values: []string{regionVal.Draw(t, "region")}})
			}
			if len(exprs) == 0 || rapid.Bool().Draw(t, "hostExpr") {
				exprs = append(exprs, v1.NodeSelectorRequirement{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{DNSLabel().Draw(t, "host")}})
			}
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms = append(pv.Spec.NodeAffinity.Required.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: exprs})
		}
	}
	if rapid.Bool().Draw(t, "topologyLabels") {
		if pv.Labels == nil {
			pv.Labels = map[string]string{}
		}
		if rapid.Bool().Draw(t, "zoneLabel") {
			// A volume on a datastore shared by zones: "zone-a__zone-b".
			zones := rapid.SliceOfNDistinct(zoneVal, 1, 3, rapid.ID).Draw(t, "zoneLabelValues")
			pv.Labels[rapid.SampledFrom(zoneKeys).Draw(t, "zoneLabelKey")] = strings.Join(zones, "__")
		}
		if rapid.Bool().Draw(t, "regionLabel") {
			pv.Labels[rapid.SampledFrom(regionKeys).Draw(t, "regionLabelKey")] = regionVal.Draw(t, "regionLabelValue")
		}
	}
	return pv
}

// HostileString generates strings that stress parsers and encoders.
func HostileString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", ",", "[", "[\"", "_", "/", "a,b", "mig_mons-_image-_", "\x00", strings.Repeat("x", 300)}))
}

// HostilePV generates PVs that no validation would accept: any source set
// with arbitrary field values, nil pieces, conflicting annotations.
func HostilePV(t *rapid.T) *v1.PersistentVolume {
	s := HostileString()
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: s.Draw(t, "name")}}
	if rapid.Bool().Draw(t, "annotations") {
		pv.Annotations = rapid.MapOf(rapid.SampledFrom([]string{
			"rbd.csi.ceph.com/volume-handle", "clusterID", "imageFeatures", "csimigrate.io/csi-overrides", "csimigrate.io/access-modes",
			"rbd.csimigrate.io/monitors", "rbd.csimigrate.io/user", "cephfs.csimigrate.io/secret-ref", "cephfs.csimigrate.io/mount-options",
			"cephfs.csimigrate.io/node-stage-secret", "vsphere.csimigrate.io/topology", "x",
		}), s).Draw(t, "annotationMap")
	}
	if rapid.Bool().Draw(t, "labels") {
		pv.Labels = rapid.MapOf(rapid.SampledFrom(append(append([]string{"x"}, zoneKeys...), regionKeys...)), s).Draw(t, "labelMap")
	}
	pv.Spec.AccessModes = rapid.SliceOf(rapid.Map(s, func(x string) v1.PersistentVolumeAccessMode { return v1.PersistentVolumeAccessMode(x) })).Draw(t, "modes")
	pv.Spec.MountOptions = rapid.SliceOf(s).Draw(t, "mountOptions")
	if rapid.Bool().Draw(t, "claim") {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: s.Draw(t, "claimNS")}
	}
	if rapid.Bool().Draw(t, "affinity") {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{}
		if rapid.Bool().Draw(t, "required") {
			pv.Spec.NodeAffinity.Required = &v1.NodeSelector{NodeSelectorTerms: rapid.SliceOf(rapid.Custom(func(t *rapid.T) v1.NodeSelectorTerm {
				return v1.NodeSelectorTerm{MatchExpressions: rapid.SliceOf(rapid.Custom(func(t *rapid.T) v1.NodeSelectorRequirement {
					return v1.NodeSelectorRequirement{Key: rapid.SampledFrom(append(append([]string{"x", "topology.csi.vmware.com/zone"}, zoneKeys...), regionKeys...)).Draw(t, "key"),
						Operator: v1.NodeSelectorOpIn, Values: rapid.SliceOf(s).Draw(t, "values")}
				})).Draw(t, "exprs")}
			})).Draw(t, "terms")}
		}
	}
	ref := func(t *rapid.T) *v1.SecretReference {
		if rapid.Bool().Draw(t, "nilRef") {
			return nil
		}
		return &v1.SecretReference{Name: s.Draw(t, "refName"), Namespace: s.Draw(t, "refNS")}
	}
	switch rapid.IntRange(0, 4).Draw(t, "source") {
	case 0:
		pv.Spec.RBD = &v1.RBDPersistentVolumeSource{CephMonitors: rapid.SliceOf(s).Draw(t, "mons"), RBDImage: s.Draw(t, "image"),
			RBDPool: s.Draw(t, "pool"), RadosUser: s.Draw(t, "user"), Keyring: s.Draw(t, "keyring"), SecretRef: ref(t), ReadOnly: rapid.Bool().Draw(t, "ro")}
	case 1:
		pv.Spec.CephFS = &v1.CephFSPersistentVolumeSource{Monitors: rapid.SliceOf(s).Draw(t, "mons"), Path: s.Draw(t, "path"),
			User: s.Draw(t, "user"), SecretFile: s.Draw(t, "secretFile"), SecretRef: ref(t), ReadOnly: rapid.Bool().Draw(t, "ro")}
	case 2:
		pv.Spec.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: s.Draw(t, "path"), FSType: s.Draw(t, "fs"),
			StoragePolicyName: s.Draw(t, "policy"), StoragePolicyID: s.Draw(t, "policyID")}
	case 3:
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{
			Driver:       rapid.SampledFrom([]string{"rbd.csi.ceph.com", "cephfs.csi.ceph.com", "csi.vsphere.vmware.com", "other"}).Draw(t, "driver"),
			VolumeHandle: s.Draw(t, "handle"), FSType: s.Draw(t, "fs"), ReadOnly: rapid.Bool().Draw(t, "ro"),
			VolumeAttributes: rapid.MapOf(rapid.SampledFrom([]string{"imageName", "pool", "clusterID", "monitors", "adminId", "rootPath", "fsName",
				"initialvolumefilepath", "storagepolicyname", "staticVolume", "x"}), s).Draw(t, "attrs"),
			NodeStageSecretRef: ref(t), NodeExpandSecretRef: ref(t), ControllerExpandSecretRef: ref(t),
		}
	}
	return pv
}

// RBDStorageClass generates valid in-tree RBD StorageClasses, with keys in
// mixed case.
func RBDStorageClass(t *rapid.T) *storagev1.StorageClass {
	key := func(k string) string {
		if rapid.Bool().Draw(t, "upper"+k) {
			return strings.ToUpper(k[:1]) + k[1:]
		}
		return k
	}
	mons := Monitors(t)
	sep := rapid.SampledFrom([]string{",", ", "}).Draw(t, "sep")
	p := map[string]string{
		key("monitors"):        strings.Join(mons, sep),
		key("adminSecretName"): DNSSubdomain().Draw(t, "adminSecret"),
	}
	opt := func(k string, g *rapid.Generator[string]) {
		if rapid.Bool().Draw(t, "has"+k) {
			p[key(k)] = g.Draw(t, k)
		}
	}
	opt("adminId", rapid.SampledFrom([]string{"admin", "kube"}))
	opt("adminSecretNamespace", DNSLabel())
	opt("pool", rapid.SampledFrom([]string{"rbd", "kube"}))
	opt("userId", rapid.SampledFrom([]string{"kube"}))
	opt("userSecretName", DNSSubdomain())
	opt("userSecretNamespace", DNSLabel())
	opt("keyring", rapid.Just("/etc/ceph/keyring"))
	opt("imageFormat", rapid.SampledFrom([]string{"1", "2"}))
	opt("imageFeatures", rapid.Just("layering"))
	opt("fsType", rapid.SampledFrom([]string{"ext4", "xfs"}))
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: DNSSubdomain().Draw(t, "name")}, Provisioner: "kubernetes.io/rbd", Parameters: p}
}

// VSphereStorageClass generates in-tree vSphere StorageClasses with every
// parameter (the vSAN ones included) and allowed topologies.
func VSphereStorageClass(t *rapid.T) *storagev1.StorageClass {
	p := map[string]string{}
	opt := func(k string, g *rapid.Generator[string]) {
		if rapid.Bool().Draw(t, "has"+k) {
			if rapid.Bool().Draw(t, "upper"+k) {
				k = strings.ToUpper(k)
			}
			p[k] = g.Draw(t, k)
		}
	}
	opt("diskformat", rapid.SampledFrom([]string{"thin", "zeroedthick", "eagerzeroedthick"}))
	opt("datastore", rapid.SampledFrom([]string{"vsanDatastore", "ds 1"}))
	opt("fstype", rapid.SampledFrom([]string{"ext4", "xfs"}))
	if rapid.Bool().Draw(t, "policy") {
		opt("storagepolicyname", rapid.SampledFrom([]string{"gold"}))
	} else {
		opt("hostfailurestotolerate", rapid.SampledFrom([]string{"0", "1", "3"}))
		opt("forceprovisioning", rapid.SampledFrom([]string{"0", "1"}))
		opt("cachereservation", rapid.SampledFrom([]string{"0", "20"}))
		opt("diskstripes", rapid.SampledFrom([]string{"1", "12"}))
		opt("objectspacereservation", rapid.SampledFrom([]string{"0", "100"}))
		opt("iopslimit", rapid.SampledFrom([]string{"0", "500"}))
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: DNSSubdomain().Draw(t, "name")}, Provisioner: "kubernetes.io/vsphere-volume", Parameters: p}
	if rapid.Bool().Draw(t, "topology") {
		keys := append(append([]string{"example.com/rack"}, zoneKeys...), regionKeys...)
		sc.AllowedTopologies = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) v1.TopologySelectorTerm {
			return v1.TopologySelectorTerm{MatchLabelExpressions: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) v1.TopologySelectorLabelRequirement {
				return v1.TopologySelectorLabelRequirement{Key: rapid.SampledFrom(keys).Draw(t, "key"), Values: []string{DNSLabel().Draw(t, "value")}}
			}), 1, 3).Draw(t, "exprs")}
		}), 1, 2).Draw(t, "terms")
	}
	return sc
}

// UUID generates lowercase RFC 4122 text.
func UUID() *rapid.Generator[string] {
	return rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
}

// provisionedMeta is what external-provisioner sets on a PV it creates.
func provisionedMeta(t *rapid.T, driver string) (metav1.ObjectMeta, v1.PersistentVolumeSpec) {
	uid := UUID().Draw(t, "claimUID")
	m := metav1.ObjectMeta{Name: "pvc-" + uid, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": driver}}
	fs := v1.PersistentVolumeFilesystem
	s := v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(fmt.Sprintf("%dGi", rapid.IntRange(1, 2048).Draw(t, "gi")))},
		AccessModes:                   []v1.PersistentVolumeAccessMode{rapid.SampledFrom([]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany}).Draw(t, "mode")},
		PersistentVolumeReclaimPolicy: rapid.SampledFrom([]v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimDelete}).Draw(t, "reclaim"),
		StorageClassName:              DNSSubdomain().Draw(t, "sc"),
		VolumeMode:                    &fs,
		ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: DNSLabel().Draw(t, "claimNS"),
			Name: DNSSubdomain().Draw(t, "claimName"), UID: types.UID(uid)},
	}
	return m, s
}

// RBDProvisionedPV generates the CSI PV external-provisioner builds when Ceph
// CSI provisions a volume for a migrated in-tree RBD StorageClass, before it
// translates the PV back to in-tree to store it: a Ceph CSI volume ID as the
// handle, the class's parameters and what Ceph CSI adds in the volume
// context, the admin secret as every reference.
func RBDProvisionedPV(t *rapid.T) *v1.PersistentVolume {
	m, s := provisionedMeta(t, "rbd.csi.ceph.com")
	mons := strings.Join(Monitors(t), rapid.SampledFrom([]string{",", ", "}).Draw(t, "sep"))
	clusterID := fmt.Sprintf("%x", md5.Sum([]byte(mons)))
	uuid := UUID().Draw(t, "imageUUID")
	pool := rapid.SampledFrom([]string{"rbd", "kube", "replica.pool-2"}).Draw(t, "pool")
	handle := fmt.Sprintf("0001-%04x-%s-%016x-%s", len(clusterID), clusterID, rapid.IntRange(1, 300).Draw(t, "poolID"), uuid)
	attrs := map[string]string{"clusterID": clusterID, "pool": pool, "imageName": "csi-vol-" + uuid, "migration": "true",
		"monitors": mons, "imageFeatures": "layering"}
	if rapid.Bool().Draw(t, "journalPool") {
		attrs["journalPool"] = pool
	}
	if rapid.Bool().Draw(t, "imageFormat") {
		attrs["imageFormat"] = "2"
	}
	if rapid.Bool().Draw(t, "adminId") {
		attrs["adminId"] = rapid.SampledFrom([]string{"admin", "kube"}).Draw(t, "admin")
	}
	s.PersistentVolumeSource.CSI = &v1.CSIPersistentVolumeSource{Driver: "rbd.csi.ceph.com", VolumeHandle: handle,
		FSType: rapid.SampledFrom([]string{"", "ext4", "xfs"}).Draw(t, "fsType"), VolumeAttributes: attrs}
	if rapid.IntRange(0, 4).Draw(t, "secret") > 0 {
		ref := SecretRef(t)
		c := s.PersistentVolumeSource.CSI
		c.NodeStageSecretRef, c.ControllerExpandSecretRef = ref, &v1.SecretReference{Name: ref.Name, Namespace: ref.Namespace}
		if rapid.Bool().Draw(t, "nodeExpand") {
			c.NodeExpandSecretRef = &v1.SecretReference{Name: ref.Name, Namespace: ref.Namespace}
		}
		m.Annotations["volume.kubernetes.io/provisioner-deletion-secret-name"] = ref.Name
		m.Annotations["volume.kubernetes.io/provisioner-deletion-secret-namespace"] = ref.Namespace
	}
	return &v1.PersistentVolume{ObjectMeta: m, Spec: s}
}

// VSphereProvisionedPV generates the CSI PV external-provisioner builds when
// the vSphere CSI driver provisions a volume for a migrated in-tree
// StorageClass: the FCD ID as the handle, the .vmdk path in
// initialvolumefilepath, the driver's topology keys in node affinity.
func VSphereProvisionedPV(t *rapid.T) *v1.PersistentVolume {
	m, s := provisionedMeta(t, "csi.vsphere.vmware.com")
	id := UUID().Draw(t, "fcd")
	attrs := map[string]string{"type": "vSphere CNS Block Volume",
		"initialvolumefilepath": fmt.Sprintf("[%s] fcd/%s.vmdk", rapid.SampledFrom([]string{"vsanDatastore", "ds 1", "DatastoreCluster/ds2"}).Draw(t, "ds"), strings.ReplaceAll(id, "-", ""))}
	if rapid.Bool().Draw(t, "policy") {
		attrs["storagepolicyname"] = rapid.SampledFrom([]string{"gold", "vSAN Default Storage Policy"}).Draw(t, "policyName")
	}
	s.PersistentVolumeSource.CSI = &v1.CSIPersistentVolumeSource{Driver: "csi.vsphere.vmware.com", VolumeHandle: id,
		FSType: rapid.SampledFrom([]string{"", "ext4", "xfs"}).Draw(t, "fsType"), VolumeAttributes: attrs}
	if rapid.Bool().Draw(t, "topology") {
		var exprs []v1.NodeSelectorRequirement
		if rapid.Bool().Draw(t, "zone") {
			exprs = append(exprs, v1.NodeSelectorRequirement{Key: "topology.csi.vmware.com/zone", Operator: v1.NodeSelectorOpIn, Values: []string{rapid.StringMatching(`zone-[a-c]`).Draw(t, "zoneValue")}})
		}
		if len(exprs) == 0 || rapid.Bool().Draw(t, "region") {
			exprs = append(exprs, v1.NodeSelectorRequirement{Key: "topology.csi.vmware.com/region", Operator: v1.NodeSelectorOpIn, Values: []string{rapid.StringMatching(`region-[1-2]`).Draw(t, "regionValue")}})
		}
		s.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: exprs}}}}
	}
	return &v1.PersistentVolume{ObjectMeta: m, Spec: s}
}

// RBDInline generates a pod's inline rbd volume, every optional field
// absent or present.
func RBDInline(t *rapid.T) *v1.Volume {
	src := &v1.RBDVolumeSource{
		CephMonitors: Monitors(t),
		RBDImage:     RBDImage(t),
		RBDPool:      rapid.SampledFrom([]string{"", "rbd", "kube"}).Draw(t, "pool"),
		RadosUser:    rapid.SampledFrom([]string{"", "admin", "kube"}).Draw(t, "user"),
		Keyring:      rapid.SampledFrom([]string{"", "/etc/ceph/keyring"}).Draw(t, "keyring"),
		FSType:       rapid.SampledFrom([]string{"", "ext4", "xfs"}).Draw(t, "fsType"),
		ReadOnly:     rapid.Bool().Draw(t, "readOnly"),
	}
	if rapid.Bool().Draw(t, "secret") {
		src.SecretRef = &v1.LocalObjectReference{Name: DNSSubdomain().Draw(t, "secretName")}
	}
	return &v1.Volume{Name: DNSLabel().Draw(t, "volume"), VolumeSource: v1.VolumeSource{RBD: src}}
}

// VSphereInline generates a pod's inline vsphereVolume, every optional field
// absent or present.
func VSphereInline(t *rapid.T) *v1.Volume {
	src := &v1.VsphereVirtualDiskVolumeSource{
		VolumePath:        rapid.StringMatching(`\[[a-zA-Z][a-zA-Z0-9 ]{0,10}\] kubevols/[a-z0-9-]{1,20}\.vmdk`).Draw(t, "volumePath"),
		FSType:            rapid.SampledFrom([]string{"", "ext4"}).Draw(t, "fsType"),
		StoragePolicyName: rapid.SampledFrom([]string{"", "gold"}).Draw(t, "policyName"),
		StoragePolicyID:   rapid.SampledFrom([]string{"", "aa6d5a82-1c88-45da-85d3-3d74b91a5bad"}).Draw(t, "policyID"),
	}
	return &v1.Volume{Name: DNSLabel().Draw(t, "volume"), VolumeSource: v1.VolumeSource{VsphereVolume: src}}
}

// AnyPV draws a PV of every kind the checks meet: in-tree RBD, CephFS and
// vSphere PVs, CSI PVs their drivers provisioned, hostile PVs, and the
// translations of in-tree PVs (migration handles) that translate gives (the
// in-tree PV itself where it fails).
func AnyPV(t *rapid.T, translate func(*v1.PersistentVolume) (*v1.PersistentVolume, error)) *v1.PersistentVolume {
	return rapid.OneOf(
		rapid.Custom(RBDPV), rapid.Custom(func(t *rapid.T) *v1.PersistentVolume { return CephFSPV(t, true) }), rapid.Custom(VSpherePV),
		rapid.Custom(RBDProvisionedPV), rapid.Custom(VSphereProvisionedPV), rapid.Custom(HostilePV),
		rapid.Custom(func(t *rapid.T) *v1.PersistentVolume {
			in := rapid.OneOf(rapid.Custom(RBDPV), rapid.Custom(VSpherePV)).Draw(t, "inTree")
			out, err := translate(in)
			if err != nil {
				return in
			}
			return out
		}),
	).Draw(t, "pv")
}
