package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The rewrite and its undo keep their state in the cluster, never in a
// local file: the PVs themselves and, from just before a PV is deleted until
// its replacement exists, a ConfigMap holding the replacement and what it
// was built from (one per PV, whichever the direction).
const (
	stateKey = "state.json"
	// stateLabel names the PV a state ConfigMap belongs to.
	stateLabel = rewrite.AnnRunOf
	// annStateSHA256 is the SHA-256 of the state, to refuse a hand-edited
	// ConfigMap.
	annStateSHA256 = "csimigrate.io/state-sha256"
	// pvProtection is the only finalizer the rewrite ever removes, and only
	// from the object it deleted.
	pvProtection = rewrite.PVProtection
)

// StateName is the name of the ConfigMap, in the state namespace, that
// holds a PV's replacement while its rewrite or undo is in progress.
func StateName(pv string) string { return stateNameWith("csimigrate-rewrite-", pv) }

// stateNameWith is prefix+name, or prefix and a hash of name where that
// would be too long for a ConfigMap name.
func stateNameWith(prefix, name string) string {
	if n := prefix + name; len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:16])
}

// rewriteState is what a run saves before it deletes a PV: the
// replacement, and what proves on resuming that the cluster is still what
// the replacement was built from.
type rewriteState struct {
	PV string `json:"pv"`
	// Undo says the state is an undo's: the PV deleted is a CSI PV that
	// csimigrate created, the replacement the in-tree PV it came from.
	Undo bool `json:"undo,omitempty"`
	// Direction is "adopt" for the adoption of a CSI PV with a migration
	// handle ("unadopt" with Undo), "" for the rewrite and its undo.
	Direction string `json:"direction,omitempty"`
	// UID and ResourceVersion are the deleted PV's when the state was
	// saved; the delete carries them as preconditions.
	UID             types.UID `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	// The claim the PV was bound to ("" when unbound), which must still be
	// there, with this uid and bound to the PV, when the replacement is
	// created.
	ClaimNamespace string    `json:"claimNamespace,omitempty"`
	ClaimName      string    `json:"claimName,omitempty"`
	ClaimUID       types.UID `json:"claimUID,omitempty"`
	// What the replacement must keep: capacity, and the CSI driver and
	// volume handle the volume is known by (the translation's, for an
	// in-tree replacement).
	Capacity    string               `json:"capacity"`
	Driver      string               `json:"driver"`
	Handle      string               `json:"handle"`
	Replacement *v1.PersistentVolume `json:"replacement"`
	// KeptRetain says why the replacement keeps reclaim policy Retain
	// where the in-tree PV had Delete ("" when it keeps the policy); the
	// run that removes the state names the PV with it.
	KeptRetain string `json:"keptRetain,omitempty"`
	// Journal is, for the undo of an adopted PV, the entry of Ceph CSI's
	// journal to remove once the replacement exists. (The rewrite's entry
	// to write is recorded on its replacement.)
	Journal *adopt.Journal `json:"journal,omitempty"`

	// cmVersion is the resourceVersion of the ConfigMap it was read from.
	cmVersion string
}

// checkState compares the replacement with what the state says it keeps.
func (a *Writer) checkState(s *rewriteState) error {
	r := s.Replacement
	if r == nil {
		return errors.New("the state holds no replacement")
	}
	var diffs []string
	if r.Name != s.PV {
		diffs = append(diffs, fmt.Sprintf("name %q, state %q", r.Name, s.PV))
	}
	if s.Direction == "" && (r.Spec.CSI == nil) != s.Undo {
		diffs = append(diffs, fmt.Sprintf("a replacement of another kind (CSI: %t) than the state's direction (undo: %t)", r.Spec.CSI != nil, s.Undo))
	}
	if driver, handle, err := a.Identity(r); err != nil || driver != s.Driver || handle != s.Handle {
		diffs = append(diffs, fmt.Sprintf("driver/handle %s/%s (%v), state %s/%s", driver, handle, err, s.Driver, s.Handle))
	}
	q := r.Spec.Capacity[v1.ResourceStorage]
	if q.String() != s.Capacity {
		diffs = append(diffs, fmt.Sprintf("capacity %s, state %s", q.String(), s.Capacity))
	}
	var ns, name string
	var uid types.UID
	if c := r.Spec.ClaimRef; c != nil {
		ns, name, uid = c.Namespace, c.Name, c.UID
	}
	if ns != s.ClaimNamespace || name != s.ClaimName || uid != s.ClaimUID {
		diffs = append(diffs, fmt.Sprintf("claim %s/%s (uid %s), state %s/%s (uid %s)", ns, name, uid, s.ClaimNamespace, s.ClaimName, s.ClaimUID))
	}
	if len(diffs) > 0 {
		return errors.New("the saved replacement does not match its state: " + strings.Join(diffs, "; "))
	}
	return nil
}

// listState lists the state ConfigMaps once for a run.
func (a *Writer) listState(ctx context.Context) error {
	list, err := a.client.CoreV1().ConfigMaps(a.o.StateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return err
	}
	m := map[string]bool{}
	for _, cm := range list.Items {
		if pv := cm.Annotations[stateLabel]; pv != "" {
			m[pv] = true
		}
	}
	a.withState = m
	return nil
}

// knownNoState reports whether the run's listing (or the States lister)
// showed no state for pv.
func (a *Writer) knownNoState(pv string) bool {
	if a.listers.States != nil {
		_, err := a.listers.States.ConfigMaps(a.o.StateNamespace).Get(StateName(pv))
		return apierrors.IsNotFound(err)
	}
	return a.withState != nil && !a.withState[pv]
}

// readState verifies a state ConfigMap's checksum and decodes it into v.
func (a *Writer) readState(cm *v1.ConfigMap, v any) error {
	where := fmt.Sprintf("ConfigMap %s/%s", a.o.StateNamespace, cm.Name)
	raw := cm.Data[stateKey]
	sum := sha256.Sum256([]byte(raw))
	if want := cm.Annotations[annStateSHA256]; want != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("%s was changed after csimigrate saved it (SHA-256 %s, saved %s); nothing is created from it: restore it, or delete it and check the object by hand", where, hex.EncodeToString(sum[:]), want)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// writeState stores v, the state of the object of that kind and name about
// to be deleted, in a new ConfigMap with its checksum.
func (a *Writer) writeState(ctx context.Context, cmName, ofLabel, of string, v any) (*v1.ConfigMap, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: a.o.StateNamespace,
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "csimigrate"},
		Annotations: map[string]string{ofLabel: of, annStateSHA256: hex.EncodeToString(sum[:])}},
		Data: map[string]string{stateKey: string(b)}}
	return a.client.CoreV1().ConfigMaps(a.o.StateNamespace).Create(ctx, cm, metav1.CreateOptions{})
}

// loadState reads and verifies a PV's state ConfigMap.
func (a *Writer) loadState(cm *v1.ConfigMap) (*rewriteState, error) {
	var s rewriteState
	if err := a.readState(cm, &s); err != nil {
		return nil, err
	}
	if err := a.checkState(&s); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", a.o.StateNamespace, cm.Name, err)
	}
	return &s, nil
}

// saveState stores the state of a PV about to be deleted: its replacement
// repl, kept (why repl ends with Retain where the PV had Delete), and
// whether it is an undo's.
func (a *Writer) saveState(ctx context.Context, cur, repl *v1.PersistentVolume, kept string, dir Direction) (*v1.ConfigMap, error) {
	undo := dir.IsUndo()
	driver, handle, err := a.Identity(repl)
	if err != nil {
		return nil, refuse(rewrite.CodeNotTranslatable, "the replacement: %v", err)
	}
	s := rewriteState{PV: cur.Name, Undo: undo, UID: cur.UID, ResourceVersion: cur.ResourceVersion, Driver: driver, Handle: handle,
		Replacement: repl, KeptRetain: kept, Direction: dir.stateName()}
	if undo {
		if s.Journal, err = journalOf(cur); err != nil {
			return nil, err
		}
	}
	q := repl.Spec.Capacity[v1.ResourceStorage]
	s.Capacity = q.String()
	if c := repl.Spec.ClaimRef; c != nil {
		s.ClaimNamespace, s.ClaimName, s.ClaimUID = c.Namespace, c.Name, c.UID
	}
	return a.writeState(ctx, StateName(cur.Name), stateLabel, cur.Name, &s)
}

// StateOf names the object (a PV or a StorageClass) a state ConfigMap of
// the writer belongs to; ok is false for another ConfigMap.
func StateOf(cm *v1.ConfigMap) (obj rewrite.ObjectRef, ok bool) {
	if cm == nil || cm.Labels["app.kubernetes.io/managed-by"] != "csimigrate" {
		return rewrite.ObjectRef{}, false
	}
	if pv := cm.Annotations[stateLabel]; pv != "" {
		return rewrite.PVRef(pv), true
	}
	if sc := cm.Annotations[stateLabelSC]; sc != "" {
		return rewrite.ClassRef(sc), true
	}
	return rewrite.ObjectRef{}, false
}

// SavedClaim is the claim the saved state of PV pv names (a run saved it
// before deleting the PV), for a program that scopes its runs by the claims'
// namespace; ok is false when there is no such state, it cannot be read, or
// it names no claim.
func (a *Writer) SavedClaim(ctx context.Context, pv string) (claim types.NamespacedName, ok bool) {
	cm, err := getOrNil(a.client.CoreV1().ConfigMaps(a.o.StateNamespace).Get(ctx, StateName(pv), metav1.GetOptions{}))
	if err != nil || cm == nil {
		return types.NamespacedName{}, false
	}
	var s rewriteState
	if err := a.readState(cm, &s); err != nil || s.ClaimName == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: s.ClaimNamespace, Name: s.ClaimName}, true
}

// InProgressError: an object's saved state belongs to a run in the other
// direction (a rewrite's state met by an undo, or the other way round, or
// an adoption's): nothing is done with it until that run is finished.
// Programs name the run to finish in their own terms (Run).
type InProgressError struct {
	// ConfigMap is the state, "namespace/name".
	ConfigMap string
	// Object is the PV or StorageClass the state is of.
	Object rewrite.ObjectRef
	// Run is the direction of the run in progress.
	Run Direction
}

// Error names the run in the engine's words.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("ConfigMap %s holds %s of %s in progress; finish it first, nothing is done with it here", e.ConfigMap, e.Run.What(), e.Object.Resource())
}

// ClassStateName is the name of the ConfigMap, in the state namespace,
// that holds a StorageClass's replacement while it is being replaced.
func ClassStateName(sc string) string { return stateNameWith("csimigrate-rewrite-sc-", sc) }

// scState is what a run saves before it deletes a StorageClass (a class's
// parameters and provisioner cannot be updated): the replacement and what
// proves on resuming that it still applies.
type scState struct {
	StorageClass string `json:"storageClass"`
	// Undo says the state is an undo's: the class deleted is a CSI class
	// csimigrate created, the replacement the in-tree class it replaced.
	Undo            bool                    `json:"undo,omitempty"`
	UID             types.UID               `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	Replacement     *storagev1.StorageClass `json:"replacement"`
}

const (
	// stateLabelSC names the StorageClass a state ConfigMap belongs to.
	stateLabelSC = rewrite.AnnRunOfClass
)
