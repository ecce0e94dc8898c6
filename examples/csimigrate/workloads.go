package main

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// workload is an object whose pod spec can hold inline volumes: a Pod, or
// the pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet,
// Job, CronJob or ReplicationController.
type workload struct {
	Kind, Namespace, Name string
	Spec                  *v1.PodSpec
	// Owner is the controller owning it ("Kind/name", same namespace), ""
	// when none.
	Owner string
	// ClaimTemplates are a StatefulSet's volumeClaimTemplates.
	ClaimTemplates []v1.PersistentVolumeClaim
	// Finished is set for a pod that succeeded or failed.
	Finished bool
	// Obj is the object itself, Meta its metadata.
	Obj  runtime.Object
	Meta *metav1.ObjectMeta
}

// ID is "Kind namespace/name".
func (w *workload) ID() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// key is "Kind/namespace/name", as owner references are resolved.
func (w *workload) key() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// workloadOf returns the workload of obj, false for other objects.
func workloadOf(obj any) (*workload, bool) {
	var w workload
	var meta *metav1.ObjectMeta
	switch o := obj.(type) {
	case *v1.Pod:
		w = workload{Kind: "Pod", Spec: &o.Spec, Finished: o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed}
		meta = &o.ObjectMeta
	case *appsv1.Deployment:
		w, meta = workload{Kind: "Deployment", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *appsv1.StatefulSet:
		w, meta = workload{Kind: "StatefulSet", Spec: &o.Spec.Template.Spec, ClaimTemplates: o.Spec.VolumeClaimTemplates}, &o.ObjectMeta
	case *appsv1.DaemonSet:
		w, meta = workload{Kind: "DaemonSet", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *appsv1.ReplicaSet:
		w, meta = workload{Kind: "ReplicaSet", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *batchv1.Job:
		w, meta = workload{Kind: "Job", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	case *batchv1.CronJob:
		w, meta = workload{Kind: "CronJob", Spec: &o.Spec.JobTemplate.Spec.Template.Spec}, &o.ObjectMeta
	case *v1.ReplicationController:
		if o.Spec.Template == nil {
			return nil, false
		}
		w, meta = workload{Kind: "ReplicationController", Spec: &o.Spec.Template.Spec}, &o.ObjectMeta
	default:
		return nil, false
	}
	w.Namespace, w.Name, w.Meta, w.Obj = meta.Namespace, meta.Name, meta, obj.(runtime.Object)
	if ref := metav1.GetControllerOfNoCopy(meta); ref != nil {
		w.Owner = ref.Kind + "/" + ref.Name
	}
	return &w, true
}

// inlineClaimName is the name of the PV and of the claim that replace the
// inline volume vol of workload w: "<workload>-<volume>", a valid name for
// both (a DNS-1123 subdomain), shortened with a hash of both names when too
// long or not valid as is.
func inlineClaimName(w *workload, vol string) string {
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

// inlineCapacity is the size given to PVs and claims made for inline
// volumes, which carry no size (-inline-capacity).
var defaultInlineCapacity = resource.MustParse("1Gi")

// inlinePV is the in-tree PV that serves the inline volume vol of pod
// namespace ns under name: the same source (an inline RBD or CephFS
// secret, which names no namespace, is the pod's namespace's, as the
// in-tree plugin read it), pre-bound to the claim of the same name in ns,
// reclaim policy Retain (Kubernetes never deleted an inline volume), access
// mode ReadWriteOnce (ReadOnlyMany for a read-only volume; ReadWriteMany for
// CephFS, which pods on several nodes share). nil for a source csimigrate
// does not translate.
func inlinePV(vol *v1.Volume, ns, name string, capacity resource.Quantity) *v1.PersistentVolume {
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

// inlineClaim is the claim bound to pv, in namespace ns.
func inlineClaim(pv *v1.PersistentVolume, ns string) *v1.PersistentVolumeClaim {
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

// isInTreeInline reports whether vol is an inline volume of a plugin
// csimigrate knows.
func isInTreeInline(vol *v1.Volume) bool { return plugin.InTreeNameOfVolume(vol) != "" }

// kinds gives the apiVersion of each workload kind, for objects listed from
// a cluster (which come without their TypeMeta).
var workloadAPIVersion = map[string]string{"Pod": "v1", "ReplicationController": "v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1",
	"DaemonSet": "apps/v1", "ReplicaSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}

// forCreate clears what the server sets on a workload object: metadata it
// owns and the status.
func forCreate(w *workload) {
	m := w.Meta
	m.ResourceVersion, m.UID, m.Generation, m.CreationTimestamp, m.ManagedFields = "", "", 0, metav1.Time{}, nil
	clearSelfLink(m)
	switch o := w.Obj.(type) {
	case *v1.Pod:
		o.Status = v1.PodStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
	case *v1.ReplicationController:
		o.Status = v1.ReplicationControllerStatus{}
	}
	if t, ok := w.Obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		t.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(workloadAPIVersion[w.Kind], w.Kind))
	}
}

// inlineForm is the PV form of the inline volume vol of workload w, named
// name: the in-tree PV (nil for a source csimigrate does not translate),
// its CSI translation, and the blocking findings of the in-tree PV, each with
// the remedy that applies to a workload's volume.
type inlineForm struct {
	inTree, csi *v1.PersistentVolume
	err         error
	blockers    []plugin.Finding
}

func newInlineForm(tr *translate.Translator, logger klog.Logger, w *workload, vol *v1.Volume, name string, capacity resource.Quantity) inlineForm {
	pv := inlinePV(vol, w.Namespace, name, capacity)
	if pv == nil || !tr.IsPVMigratable(pv) {
		return inlineForm{}
	}
	f := inlineForm{inTree: pv}
	for _, c := range tr.CheckPV(pv) {
		if c.Severity == plugin.SeverityBlocker {
			c.Remedy = inlineRemedy(w, c)
			f.blockers = append(f.blockers, c)
		}
	}
	f.csi, f.err = tr.TranslateInTreePVToCSI(logger, pv)
	return f
}
