package rewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// Workload is an object whose pod spec can hold inline volumes: a Pod, or
// the pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet,
// Job, CronJob or ReplicationController.
type Workload struct {
	Kind, Namespace, Name string
	// APIVersion is the kind's group and version ("apps/v1"), which
	// objects listed from a cluster come without.
	APIVersion string
	Spec       *v1.PodSpec
	// Owner is the controller owning it ("Kind/name", same namespace), ""
	// when none.
	Owner string
	// ClaimTemplates are a StatefulSet's volumeClaimTemplates.
	ClaimTemplates []v1.PersistentVolumeClaim
	// Finished is set for a pod that succeeded or failed.
	Finished bool
	// Stuck says, of a pod on a node whose containers cannot start yet,
	// what its status shows (PodStuck), "" otherwise.
	Stuck string
	// Obj is the object itself, Meta its metadata.
	Obj  runtime.Object
	Meta *metav1.ObjectMeta
}

// ID is "Kind namespace/name".
func (w *Workload) ID() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// Key is "Kind/namespace/name", as owner references are resolved.
func (w *Workload) Key() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// WorkloadOf returns the workload of obj, false for other objects (and
// nil).
func WorkloadOf(obj any) (*Workload, bool) {
	var w Workload
	var meta *metav1.ObjectMeta
	switch o := obj.(type) {
	case *v1.Pod:
		w = Workload{Kind: "Pod", APIVersion: "v1", Spec: &o.Spec, Finished: o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed, Stuck: PodStuck(o)}
		meta = &o.ObjectMeta
	case *appsv1.Deployment:
		w, meta = Workload{Kind: "Deployment", APIVersion: "apps/v1", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *appsv1.StatefulSet:
		w, meta = Workload{Kind: "StatefulSet", APIVersion: "apps/v1", Spec: &o.Spec.Template.Spec, ClaimTemplates: o.Spec.VolumeClaimTemplates}, &o.ObjectMeta
	case *appsv1.DaemonSet:
		w, meta = Workload{Kind: "DaemonSet", APIVersion: "apps/v1", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *appsv1.ReplicaSet:
		w, meta = Workload{Kind: "ReplicaSet", APIVersion: "apps/v1", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *batchv1.Job:
		w, meta = Workload{Kind: "Job", APIVersion: "batch/v1", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *batchv1.CronJob:
		w, meta = Workload{Kind: "CronJob", APIVersion: "batch/v1", Spec: &o.Spec.JobTemplate.Spec.Template.Spec}, &o.ObjectMeta
	case *v1.ReplicationController:
		if o.Spec.Template == nil {
			return nil, false
		}
		w, meta = Workload{Kind: "ReplicationController", APIVersion: "v1", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	default:
		return nil, false
	}
	w.Namespace, w.Name, w.Meta, w.Obj = meta.Namespace, meta.Name, meta, obj.(runtime.Object)
	if ref := metav1.GetControllerOfNoCopy(meta); ref != nil {
		w.Owner = ref.Kind + "/" + ref.Name
	}
	return &w, true
}

// PodStuck says what a pod's status shows when it is on a node and its
// containers cannot start, as kubectl and the kubelet print it: a
// container (or init container) waiting in ContainerCreating (the
// kubelet has not mounted its volumes), or condition PodReadyToStartContainers
// False (no sandbox, which the kubelet makes only once the volumes are
// mounted). It returns "" for a pod that runs, has finished, is being
// deleted or is not scheduled yet, and for nil.
func PodStuck(p *v1.Pod) string {
	if p == nil || p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return ""
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil && w.Reason == "ContainerCreating" {
				return w.Reason
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReadyToStartContainers && c.Status == v1.ConditionFalse {
			return string(v1.PodReadyToStartContainers) + " False"
		}
	}
	return ""
}

// InlineClaimName is the name of the PV and of the claim that replace the
// inline volume vol of workload w: "<workload>-<volume>", a valid name for
// both (a DNS-1123 subdomain), shortened with a hash of both names when too
// long or not valid as is.
func InlineClaimName(w *Workload, vol string) string {
	if w == nil {
		w = &Workload{}
	}
	n := strings.ToLower(w.Name + "-" + vol)
	if len(validation.IsDNS1123Subdomain(n)) == 0 && len(n) <= 63 {
		return n
	}
	sum := sha256.Sum256([]byte(w.Kind + "/" + w.Namespace + "/" + w.Name + "/" + vol))
	var b strings.Builder
	for _, r := range n {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if prefix == "" {
		prefix = "inline"
	}
	return prefix + "-" + hex.EncodeToString(sum[:6])
}

// DefaultInlineCapacity is the size given to PVs and claims made for
// inline volumes, which carry no size, unless the caller chooses another.
var DefaultInlineCapacity = resource.MustParse("1Gi")

// InlinePV is the in-tree PV that serves the inline volume vol of pod
// namespace ns under name: the same source (an inline RBD or CephFS
// secret, which names no namespace, is the pod's namespace's, as the
// in-tree plugin read it), pre-bound to the claim of the same name in ns,
// reclaim policy Retain (Kubernetes never deleted an inline volume), access
// mode ReadWriteOnce (ReadOnlyMany for a read-only volume; ReadWriteMany for
// CephFS, which pods on several nodes share). nil for a source csimigrate
// does not translate.
func InlinePV(vol *v1.Volume, ns, name string, capacity resource.Quantity) *v1.PersistentVolume {
	if vol == nil {
		return nil
	}
	pv := &v1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: capacity},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &v1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: name},
			StorageClassName:              "",
		},
	}
	mode := v1.ReadWriteOnce
	readOnly := false
	switch {
	case vol.RBD != nil:
		s := vol.RBD
		src := &v1.RBDPersistentVolumeSource{CephMonitors: s.CephMonitors, RBDImage: s.RBDImage, FSType: s.FSType, RBDPool: s.RBDPool,
			RadosUser: s.RadosUser, Keyring: s.Keyring, ReadOnly: s.ReadOnly}
		if s.SecretRef != nil && s.SecretRef.Name != "" {
			src.SecretRef = &v1.SecretReference{Name: s.SecretRef.Name, Namespace: ns}
		}
		pv.Spec.RBD, readOnly = src, s.ReadOnly
	case vol.CephFS != nil:
		s := vol.CephFS
		src := &v1.CephFSPersistentVolumeSource{Monitors: s.Monitors, Path: s.Path, User: s.User, SecretFile: s.SecretFile, ReadOnly: s.ReadOnly}
		if s.SecretRef != nil && s.SecretRef.Name != "" {
			src.SecretRef = &v1.SecretReference{Name: s.SecretRef.Name, Namespace: ns}
		}
		pv.Spec.CephFS, readOnly, mode = src, s.ReadOnly, v1.ReadWriteMany
	case vol.VsphereVolume != nil:
		s := *vol.VsphereVolume
		pv.Spec.VsphereVolume = &s
	default:
		return nil
	}
	if readOnly {
		mode = v1.ReadOnlyMany
	}
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{mode}
	return pv
}

// InlineClaim is the claim bound to pv, in namespace ns.
func InlineClaim(pv *v1.PersistentVolume, ns string) *v1.PersistentVolumeClaim {
	empty := ""
	return &v1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: pv.Name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      pv.Spec.AccessModes,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: pv.Spec.Capacity[v1.ResourceStorage]}},
			VolumeName:       pv.Name,
			StorageClassName: &empty,
		},
	}
}

// InlineForm is the PV form of an inline volume: the in-tree PV (nil for a
// source csimigrate does not translate), its CSI translation or the error,
// and the blocking findings of the in-tree PV, each with the remedy that
// applies to a workload's volume.
type InlineForm struct {
	InTree, CSI *v1.PersistentVolume
	Err         error
	Blockers    []plugin.Finding
}

// NewInlineForm is the PV form, named name, of the inline volume vol of
// workload w; remedy gives a blocking finding the remedy that applies to
// the workload (nil keeps the plugin's).
func NewInlineForm(tr *translate.Translator, logger klog.Logger, w *Workload, vol *v1.Volume, name string, capacity resource.Quantity, remedy func(*Workload, plugin.Finding) string) InlineForm {
	if tr == nil || w == nil {
		return InlineForm{}
	}
	pv := InlinePV(vol, w.Namespace, name, capacity)
	if pv == nil || !tr.IsPVMigratable(pv) {
		return InlineForm{}
	}
	f := InlineForm{InTree: pv}
	for _, c := range tr.CheckPV(pv) {
		if c.Severity == plugin.SeverityBlocker {
			if remedy != nil {
				c.Remedy = remedy(w, c)
			}
			f.Blockers = append(f.Blockers, c)
		}
	}
	f.CSI, f.Err = tr.TranslateInTreePVToCSI(logger, pv)
	return f
}

// PodClaims are the claims a pod with this name and spec mounts, in the
// order of its volumes: a persistentVolumeClaim volume's claim, and a
// generic ephemeral volume's, which Kubernetes names <pod>-<volume> (its
// ephemeral volume controller creates that claim, owned by the pod). An
// in-tree PV bound to either is in use while the pod runs.
func PodClaims(podName string, spec *v1.PodSpec) []string {
	if spec == nil {
		return nil
	}
	var out []string
	for i := range spec.Volumes {
		switch vol := &spec.Volumes[i]; {
		case vol.PersistentVolumeClaim != nil:
			out = append(out, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil && podName != "":
			out = append(out, podName+"-"+vol.Name)
		}
	}
	return out
}
