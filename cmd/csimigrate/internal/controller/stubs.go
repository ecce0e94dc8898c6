package controller

import (
	"fmt"
	"hash/maphash"
	"strconv"
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
// metav1.Object; the setters do nothing (a stub is never written). The
// uid and resourceVersion are held as the bytes and number their usual
// forms spell (a UUID, a decimal), 24 bytes where their strings take 112
// with their headers; any other form, a deletion and a PV's labels are in
// extra, which most stubs do not have.
type stubMeta struct {
	name  string
	ns    unique.Handle[string]
	uid   [16]byte
	rv    uint64
	extra *stubExtra
}

// stubExtra is what few stubs have.
type stubExtra struct {
	// uid, rv and claimUID, where rawUID, rawRV and rawClaimUID say the
	// packed field does not spell it.
	uid, claimUID              types.UID
	rv                         string
	rawUID, rawRV, rawClaimUID bool
	deletion                   *metav1.Time
	labels                     map[string]string
}

func metaOf(m *metav1.ObjectMeta) stubMeta {
	s := stubMeta{name: m.Name}
	if m.Namespace != "" {
		s.ns = unique.Make(m.Namespace)
	}
	var ok bool
	if s.uid, ok = packUID(m.UID); !ok {
		s.more().uid, s.extra.rawUID = m.UID, true
	}
	if s.rv, ok = packRV(m.ResourceVersion); !ok {
		s.more().rv, s.extra.rawRV = m.ResourceVersion, true
	}
	if m.DeletionTimestamp != nil {
		s.more().deletion = m.DeletionTimestamp
	}
	return s
}

// more is the stub's extra, made if it has none.
func (m *stubMeta) more() *stubExtra {
	if m.extra == nil {
		m.extra = &stubExtra{}
	}
	return m.extra
}

// packUID is a UUID's 16 bytes, if u is one in its canonical form
// (lowercase, 8-4-4-4-12), the form the API server gives every object.
func packUID(u types.UID) (b [16]byte, ok bool) {
	if len(u) != 36 {
		return b, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if u[i] != '-' {
				return b, false
			}
			i++
			continue
		}
		hi, ok1 := lowerHex(u[i])
		lo, ok2 := lowerHex(u[i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b[j] = hi<<4 | lo
		i, j = i+2, j+1
	}
	return b, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// unpackUID spells a packed UID as packUID read it.
func unpackUID(b [16]byte) types.UID {
	const digits = "0123456789abcdef"
	var out [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = digits[c>>4], digits[c&15]
		j += 2
	}
	return types.UID(out[:])
}

// packRV is a resourceVersion's number, if it is a decimal that
// strconv.FormatUint spells back (etcd's revisions, as kube-apiserver
// gives them).
func packRV(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || s[0] == '0' && len(s) > 1 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func (m *stubMeta) namespace() string {
	if m.ns == (unique.Handle[string]{}) {
		return ""
	}
	return m.ns.Value()
}

func (m *stubMeta) deletion() *metav1.Time {
	if m.extra == nil {
		return nil
	}
	return m.extra.deletion
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

func (m *stubMeta) GetNamespace() string    { return m.namespace() }
func (m *stubMeta) SetNamespace(string)     {}
func (m *stubMeta) GetName() string         { return m.name }
func (m *stubMeta) SetName(string)          {}
func (m *stubMeta) GetGenerateName() string { return "" }
func (m *stubMeta) SetGenerateName(string)  {}
func (m *stubMeta) GetUID() types.UID {
	if m.extra != nil && m.extra.rawUID {
		return m.extra.uid
	}
	return unpackUID(m.uid)
}
func (m *stubMeta) SetUID(types.UID) {}
func (m *stubMeta) GetResourceVersion() string {
	if m.extra != nil && m.extra.rawRV {
		return m.extra.rv
	}
	return strconv.FormatUint(m.rv, 10)
}
func (m *stubMeta) SetResourceVersion(string)                                  {}
func (m *stubMeta) GetGeneration() int64                                       { return 0 }
func (m *stubMeta) SetGeneration(int64)                                        {}
func (m *stubMeta) GetSelfLink() string                                        { return "" }
func (m *stubMeta) SetSelfLink(string)                                         {}
func (m *stubMeta) GetCreationTimestamp() metav1.Time                          { return metav1.Time{} }
func (m *stubMeta) SetCreationTimestamp(metav1.Time)                           {}
func (m *stubMeta) GetDeletionTimestamp() *metav1.Time                         { return m.deletion() }
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
// for the adoption's check that no other PV names an image. The fields
// many PVs share (class, phase, driver, the claim's kind and namespace)
// are one interned profile; 112 bytes in all, beside its name's and its
// claim's name's strings.
type pvStub struct {
	stubMeta
	profile   unique.Handle[pvProfile]
	claimName string
	claimUID  [16]byte
	// key is the hash of the volume the PV names (rewrite.VolumeKey:
	// volumeKeyHash), keyed whether it names one: the adoption's check that
	// no other PV names an image asks only that (Controller.pvsNaming),
	// and the handle and attributes it is made of are most of a stub.
	key             uint64
	keyed, hasClaim bool
}

// pvProfile is what many PVs' stubs share.
type pvProfile struct {
	class, phase, driver      string
	claimKind, claimNamespace string
}

func (s *pvStub) prof() pvProfile {
	if s.profile == (unique.Handle[pvProfile]{}) {
		return pvProfile{}
	}
	return s.profile.Value()
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
	p := pvProfile{class: pv.Spec.StorageClassName, phase: string(pv.Status.Phase), driver: pv.Spec.CSI.Driver}
	s := &pvStub{stubMeta: metaOf(&pv.ObjectMeta)}
	if pv.Labels != nil {
		s.more().labels = pv.Labels
	}
	if c := pv.Spec.ClaimRef; c != nil {
		s.hasClaim, p.claimKind, p.claimNamespace, s.claimName = true, c.Kind, c.Namespace, c.Name
		var ok bool
		if s.claimUID, ok = packUID(c.UID); !ok {
			s.more().claimUID, s.extra.rawClaimUID = c.UID, true
		}
	}
	s.profile = unique.Make(p)
	if key, ok := rewrite.VolumeKey(pv); ok {
		s.key, s.keyed = volumeKeyHash(key), true
	}
	return s
}

func (s *pvStub) labels() map[string]string {
	if s.extra == nil {
		return nil
	}
	return s.extra.labels
}

func (s *pvStub) claimRefUID() types.UID {
	if s.extra != nil && s.extra.rawClaimUID {
		return s.extra.claimUID
	}
	return unpackUID(s.claimUID)
}

// pv is the stub as apply.SlimPV gives the PV it was made of, without the
// volume's handle and attributes (its key's hash stands for them).
func (s *pvStub) pv() *v1.PersistentVolume {
	p := s.prof()
	out := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, UID: s.GetUID(), ResourceVersion: s.GetResourceVersion(), Labels: s.labels(), DeletionTimestamp: s.deletion()},
		Spec: v1.PersistentVolumeSpec{StorageClassName: p.class,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: p.driver}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.PersistentVolumePhase(p.phase)},
	}
	if s.hasClaim {
		out.Spec.ClaimRef = &v1.ObjectReference{Kind: p.claimKind, Namespace: p.claimNamespace, Name: s.claimName, UID: s.claimRefUID()}
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
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: u.namespace(), Name: u.name, UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(), DeletionTimestamp: u.deletion()},
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
