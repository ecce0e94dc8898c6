package controller

import (
	"fmt"
	"hash/maphash"
	"unique"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/csimigrate/csimigrate/rewrite"
)

// The informers of a large cluster hold most of its PVs, claims and pods
// only so that the few the controller acts on can be checked: a CSI PV its
// drivers provisioned, its claim and the pods of that claim are never
// written. They are held as stubs: what the checks and the controller read
// of them, in structs a fraction of a typed object's size (a v1.Pod is
// 1,240 bytes before any of its fields, a PV 616, a claim 480). A stub is a
// metav1.Object, which is all an informer's store and its handlers ask of
// what they hold. The objects the controller acts on stay typed and whole.

// stubMeta is the identity of a stub: what an informer's store keys it by
// and compares (the resourceVersion), and its deletion. It implements
// metav1.Object; the setters do nothing (a stub is never written).
type stubMeta struct {
	namespace, name string
	uid             types.UID
	rv              string
	deletion        *metav1.Time
}

func metaOf(m *metav1.ObjectMeta) stubMeta {
	return stubMeta{namespace: intern(m.Namespace), name: m.Name, uid: m.UID, rv: m.ResourceVersion, deletion: m.DeletionTimestamp}
}

// intern returns the one copy of a string that many objects repeat (a
// namespace, a driver, a phase, a pool), so that each object does not keep
// its own.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func (m *stubMeta) GetNamespace() string                                       { return m.namespace }
func (m *stubMeta) SetNamespace(string)                                        {}
func (m *stubMeta) GetName() string                                            { return m.name }
func (m *stubMeta) SetName(string)                                             {}
func (m *stubMeta) GetGenerateName() string                                    { return "" }
func (m *stubMeta) SetGenerateName(string)                                     {}
func (m *stubMeta) GetUID() types.UID                                          { return m.uid }
func (m *stubMeta) SetUID(types.UID)                                           {}
func (m *stubMeta) GetResourceVersion() string                                 { return m.rv }
func (m *stubMeta) SetResourceVersion(string)                                  {}
func (m *stubMeta) GetGeneration() int64                                       { return 0 }
func (m *stubMeta) SetGeneration(int64)                                        {}
func (m *stubMeta) GetSelfLink() string                                        { return "" }
func (m *stubMeta) SetSelfLink(string)                                         {}
func (m *stubMeta) GetCreationTimestamp() metav1.Time                          { return metav1.Time{} }
func (m *stubMeta) SetCreationTimestamp(metav1.Time)                           {}
func (m *stubMeta) GetDeletionTimestamp() *metav1.Time                         { return m.deletion }
func (m *stubMeta) SetDeletionTimestamp(*metav1.Time)                          {}
func (m *stubMeta) GetDeletionGracePeriodSeconds() *int64                      { return nil }
func (m *stubMeta) SetDeletionGracePeriodSeconds(*int64)                       {}
func (m *stubMeta) GetLabels() map[string]string                               { return nil }
func (m *stubMeta) SetLabels(map[string]string)                                {}
func (m *stubMeta) GetAnnotations() map[string]string                          { return nil }
func (m *stubMeta) SetAnnotations(map[string]string)                           {}
func (m *stubMeta) GetFinalizers() []string                                    { return nil }
func (m *stubMeta) SetFinalizers([]string)                                     {}
func (m *stubMeta) GetOwnerReferences() []metav1.OwnerReference                { return nil }
func (m *stubMeta) SetOwnerReferences([]metav1.OwnerReference)                 {}
func (m *stubMeta) GetManagedFields() []metav1.ManagedFieldsEntry              { return nil }
func (m *stubMeta) SetManagedFields(managedFields []metav1.ManagedFieldsEntry) {}

var _ metav1.Object = &stubMeta{}

// pvStub is a PV no direction acts on (apply.KeptWhole false): what
// apply.SlimPV keeps of it, and the volume it names (rewrite.VolumeKey),
// for the adoption's check that no other PV names an image.
type pvStub struct {
	stubMeta
	labels                    map[string]string
	class, phase              string
	driver                    string
	claimKind, claimNamespace string
	claimName                 string
	claimUID                  types.UID
	hasClaim                  bool
	// key is the hash of the volume the PV names (rewrite.VolumeKey:
	// volumeKeyHash), keyed whether it names one: the adoption's check that
	// no other PV names an image asks only that (Controller.pvsNaming),
	// and the handle and attributes it is made of are most of a stub.
	key   uint64
	keyed bool
}

// keySeed seeds the volume keys' hashes, one per process.
var keySeed = maphash.MakeSeed()

// volumeKeyHash is the hash a stub keeps of a volume key. Two keys of one
// hash (about one chance in 10^10 among 120,000 volumes) make the check
// that no other PV names an image find one more PV, which leaves the
// volume unadopted: the safe side.
func volumeKeyHash(key string) uint64 { return maphash.String(keySeed, key) }

// newPVStub is the stub of a PV no direction acts on.
func newPVStub(pv *v1.PersistentVolume) *pvStub {
	s := &pvStub{stubMeta: metaOf(&pv.ObjectMeta), labels: pv.Labels, class: intern(pv.Spec.StorageClassName), phase: intern(string(pv.Status.Phase)),
		driver: intern(pv.Spec.CSI.Driver)}
	if c := pv.Spec.ClaimRef; c != nil {
		s.hasClaim, s.claimKind, s.claimNamespace, s.claimName, s.claimUID = true, intern(c.Kind), intern(c.Namespace), c.Name, c.UID
	}
	if key, ok := rewrite.VolumeKey(pv); ok {
		s.key, s.keyed = volumeKeyHash(key), true
	}
	return s
}

// pv is the stub as apply.SlimPV gives the PV it was made of, without the
// volume's handle and attributes (its key's hash stands for them).
func (s *pvStub) pv() *v1.PersistentVolume {
	out := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, UID: s.uid, ResourceVersion: s.rv, Labels: s.labels, DeletionTimestamp: s.deletion},
		Spec: v1.PersistentVolumeSpec{StorageClassName: s.class,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: s.driver}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.PersistentVolumePhase(s.phase)},
	}
	if s.hasClaim {
		out.Spec.ClaimRef = &v1.ObjectReference{Kind: s.claimKind, Namespace: s.claimNamespace, Name: s.claimName, UID: s.claimUID}
	}
	return out
}

// claimStub is a claim the controller does not expect to check (not bound
// to a PV its informer keeps whole when it arrived): its binding, which
// the controller's own reads use. The writer's check of it reads the API
// server's copy (claimLister).
type claimStub struct {
	stubMeta
	volumeName string
	phase      string
}

func newClaimStub(pvc *v1.PersistentVolumeClaim) *claimStub {
	return &claimStub{stubMeta: metaOf(&pvc.ObjectMeta), volumeName: pvc.Spec.VolumeName, phase: intern(string(pvc.Status.Phase))}
}

// podUse is a pod as the in-use check reads it: its node, its phase and
// the claims it names (rewrite.PodClaims).
type podUse struct {
	stubMeta
	node   string
	phase  string
	claims []string
}

// newPodUse is what the controller keeps of a pod.
func newPodUse(pod *v1.Pod) *podUse {
	u := &podUse{stubMeta: metaOf(&pod.ObjectMeta), node: intern(pod.Spec.NodeName), phase: intern(string(pod.Status.Phase))}
	u.claims = rewrite.PodClaims(pod.Name, &pod.Spec)
	return u
}

// pod is the pod as the writer's in-use check reads it.
func (u *podUse) pod() v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: u.namespace, Name: u.name, UID: u.uid, ResourceVersion: u.rv, DeletionTimestamp: u.deletion},
		Spec: v1.PodSpec{NodeName: u.node}, Status: v1.PodStatus{Phase: v1.PodPhase(u.phase)}}
}

// pvLister reads the PV informer's store of PVs and stubs: Get gives a
// stub as apply.SlimPV would have kept it, List gives the typed (whole)
// PVs only, which are the ones any direction acts on (the stubs' volumes
// are answered by Controller.pvsNaming).
type pvLister struct{ store cache.Store }

var _ corelisters.PersistentVolumeLister = pvLister{}

func (l pvLister) List(selector labels.Selector) ([]*v1.PersistentVolume, error) {
	var out []*v1.PersistentVolume
	for _, o := range l.store.List() {
		if pv, ok := o.(*v1.PersistentVolume); ok && selector.Matches(labels.Set(pv.Labels)) {
			out = append(out, pv)
		}
	}
	return out, nil
}

func (l pvLister) Get(name string) (*v1.PersistentVolume, error) {
	obj, ok, err := l.store.GetByKey(name)
	if err != nil {
		return nil, err
	}
	switch pv := obj.(type) {
	case *v1.PersistentVolume:
		return pv, nil
	case *pvStub:
		return pv.pv(), nil
	}
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("persistentvolumes"), name)
	}
	return nil, fmt.Errorf("PV %s: unexpected %T in the informer's store", name, obj)
}

// claimLister reads the claim informer's store: a stub is not found, so
// that the writer reads that claim from the API server (apply.Listers).
type claimLister struct{ store cache.Store }

var _ corelisters.PersistentVolumeClaimLister = claimLister{}

func (l claimLister) List(selector labels.Selector) ([]*v1.PersistentVolumeClaim, error) {
	return l.list("", selector)
}

func (l claimLister) list(ns string, selector labels.Selector) ([]*v1.PersistentVolumeClaim, error) {
	var out []*v1.PersistentVolumeClaim
	for _, o := range l.store.List() {
		if pvc, ok := o.(*v1.PersistentVolumeClaim); ok && (ns == "" || pvc.Namespace == ns) && selector.Matches(labels.Set(pvc.Labels)) {
			out = append(out, pvc)
		}
	}
	return out, nil
}

func (l claimLister) PersistentVolumeClaims(ns string) corelisters.PersistentVolumeClaimNamespaceLister {
	return claimNamespaceLister{l, ns}
}

type claimNamespaceLister struct {
	l  claimLister
	ns string
}

func (n claimNamespaceLister) List(selector labels.Selector) ([]*v1.PersistentVolumeClaim, error) {
	return n.l.list(n.ns, selector)
}

func (n claimNamespaceLister) Get(name string) (*v1.PersistentVolumeClaim, error) {
	obj, _, err := n.l.store.GetByKey(n.ns + "/" + name)
	if err != nil {
		return nil, err
	}
	if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok {
		return pvc, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), name)
}
