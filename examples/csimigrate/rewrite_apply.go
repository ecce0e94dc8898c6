package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/translate"
)

// runApply carries out the rewrite on the targets: the in-tree PVs of the
// reviewed input, or of the live cluster, narrowed to names.
func runApply(c *common, tr *translate.Translator, o applyOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if c.live {
		fmt.Fprintln(stderr, "csimigrate rewrite: -apply reads the live cluster itself; give -f for reviewed input, or neither")
		return exitUsage
	}
	client, err := clientFor(c.kubeconfig, o.qps, o.burst)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return exitUsage
	}
	a := &applier{client: client, tr: tr, logger: c.logger(stderr), stateNS: o.stateNS, out: stdout, concurrency: o.concurrency, online: o.online}
	ctx := context.Background()
	var targets, classes []target
	where := "cluster"
	if len(c.files) > 0 {
		where = "reviewed input"
		inv := &Inventory{}
		if err := c.read(stdin, stderr, inv); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return exitInput
		}
		for _, pv := range inv.PVs {
			if plugins.InTreeNameOfPV(pv) != "" && tr.IsPVMigratable(pv) {
				targets = append(targets, target{name: pv.Name, uid: pv.UID})
			}
		}
		for _, sc := range inv.StorageClasses {
			if tr.IsMigratableIntreePluginByName(sc.Provisioner) {
				classes = append(classes, target{name: sc.Name, uid: sc.UID})
			}
		}
		fmt.Fprintf(stdout, "%d in-tree PersistentVolumes and %d in-tree StorageClasses in the reviewed input\n", len(targets), len(classes))
	} else {
		if targets, err = a.liveTargets(ctx); err == nil {
			classes, err = a.liveClassTargets(ctx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return exitBlocked
		}
		fmt.Fprintf(stdout, "%d in-tree PersistentVolumes and %d in-tree StorageClasses (or interrupted rewrites) in the cluster\n", len(targets), len(classes))
	}
	if len(names) > 0 {
		var pvs, scs []target
		for _, n := range names {
			list, kind, name := &pvs, "PV", n
			from := targets
			if rest, ok := strings.CutPrefix(n, "storageclass/"); ok {
				list, kind, name, from = &scs, "StorageClass", rest, classes
			}
			i := slices.IndexFunc(from, func(t target) bool { return t.name == name })
			if i < 0 {
				fmt.Fprintf(stderr, "csimigrate rewrite: %s %q is not an in-tree %s of the %s\n", kind, name, kind, where)
				return exitUsage
			}
			*list = append(*list, from[i])
		}
		targets, classes = pvs, scs
		fmt.Fprintf(stdout, "%d PersistentVolumes and %d StorageClasses of them named\n", len(targets), len(classes))
	}
	if o.dry {
		err = errors.Join(a.dryRun(ctx, targets), a.dryRunClasses(ctx, classes))
	} else {
		r, pvErr := a.rewriteAll(ctx, targets)
		var rc result
		var scErr error
		if !errors.Is(pvErr, errInterrupted) {
			rc, scErr = a.rewriteClasses(ctx, classes)
		}
		err = errors.Join(pvErr, scErr)
		fmt.Fprintf(stdout, "%d PersistentVolumes and %d StorageClasses rewritten or already done, %d refused and left as they were, %d steps taken\n",
			r.done, rc.done, r.refused+rc.refused, a.steps)
	}
	if len(a.kept) > 0 {
		slices.Sort(a.kept)
		fmt.Fprintf(stdout, "%d PersistentVolumes kept at reclaim policy Retain instead of Delete (see above): %s\n", len(a.kept), strings.Join(a.kept, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return exitBlocked
	}
	return exitOK
}

// The rewrite keeps its state in the cluster, never in a local file: the
// PVs themselves and, from just before an in-tree PV is deleted until its
// CSI replacement exists, a ConfigMap holding the replacement and what it
// was built from.
const (
	stateKey = "state.json"
	// stateLabel names the PV a state ConfigMap belongs to.
	stateLabel = "csimigrate.io/rewrite-of"
	// annStateSHA256 is the SHA-256 of the state, to refuse a hand-edited
	// ConfigMap.
	annStateSHA256 = "csimigrate.io/state-sha256"
	// pvProtection is the only finalizer the rewrite ever removes, and only
	// from the object it deleted.
	pvProtection = "kubernetes.io/pv-protection"
)

// deletionProtection are the finalizers with which Kubernetes' PV controller
// (HonorPVReclaimPolicy, on by default from 1.31) and external-provisioner
// hold a PV whose reclaim policy is Delete until they have deleted the
// volume. Their owners remove them when the policy becomes Retain; the
// rewrite waits for that and never removes them itself.
var deletionProtection = []string{"kubernetes.io/pv-controller", "external-provisioner.volume.kubernetes.io/finalizer"}

// finalizersWaitFor is how long a run waits for the owners of
// deletionProtection finalizers to remove them once Retain is in force.
var finalizersWaitFor = 60 * time.Second

// known reports whether a finalizer is one the rewrite knows the owner and
// meaning of.
func knownFinalizer(f string) bool {
	return f == pvProtection || slices.Contains(deletionProtection, f)
}

// stateName is the ConfigMap name for a PV.
func stateName(pv string) string { return stateNameWith("csimigrate-rewrite-", pv) }

// stateNameWith is prefix+name, or prefix and a hash of name where that
// would be too long for a ConfigMap name.
func stateNameWith(prefix, name string) string {
	if n := prefix + name; len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:16])
}

// rewriteState is what a run saves before it deletes an in-tree PV: the
// replacement, and what proves on resuming that the cluster is still what
// the replacement was built from.
type rewriteState struct {
	PV string `json:"pv"`
	// UID and ResourceVersion are the in-tree PV's when the state was
	// saved; the delete carries them as preconditions.
	UID             types.UID `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	// The claim the PV was bound to ("" when unbound), which must still be
	// there, with this uid and bound to the PV, when the replacement is
	// created.
	ClaimNamespace string    `json:"claimNamespace,omitempty"`
	ClaimName      string    `json:"claimName,omitempty"`
	ClaimUID       types.UID `json:"claimUID,omitempty"`
	// What the replacement must keep.
	Capacity    string               `json:"capacity"`
	Driver      string               `json:"driver"`
	Handle      string               `json:"handle"`
	Replacement *v1.PersistentVolume `json:"replacement"`
	// KeptRetain says why the replacement keeps reclaim policy Retain
	// where the in-tree PV had Delete ("" when it keeps the policy); the
	// run that removes the state names the PV with it.
	KeptRetain string `json:"keptRetain,omitempty"`

	// cmVersion is the resourceVersion of the ConfigMap it was read from.
	cmVersion string
}

// check compares the replacement with what the state says it keeps.
func (s *rewriteState) check() error {
	r := s.Replacement
	if r == nil || r.Spec.CSI == nil {
		return errors.New("the saved replacement has no CSI source")
	}
	var diffs []string
	if r.Name != s.PV {
		diffs = append(diffs, fmt.Sprintf("name %q, state %q", r.Name, s.PV))
	}
	if r.Spec.CSI.Driver != s.Driver || r.Spec.CSI.VolumeHandle != s.Handle {
		diffs = append(diffs, fmt.Sprintf("driver/handle %s/%s, state %s/%s", r.Spec.CSI.Driver, r.Spec.CSI.VolumeHandle, s.Driver, s.Handle))
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

var errInterrupted = errors.New("interrupted (step limit)")

// refusal is a PV the rewrite leaves exactly as it was, and why; remedy
// says what an admin can do about it, when the reason does not.
type refusal struct{ reason, remedy string }

func (r *refusal) Error() string {
	if r.remedy == "" {
		return r.reason
	}
	return r.reason + "; " + r.remedy
}

func refuse(format string, args ...any) error { return &refusal{reason: fmt.Sprintf(format, args...)} }

// objectRefusal is why the rewrite leaves a PV alone for what the PV
// object itself says (being deleted, finalizers it does not know), or nil.
// The plan applies the same rule.
func objectRefusal(cur *v1.PersistentVolume) error {
	if cur.DeletionTimestamp != nil {
		return &refusal{reason: fmt.Sprintf("being deleted (since %s); a rewrite would undo that delete", cur.DeletionTimestamp.UTC().Format(time.RFC3339)),
			remedy: "let the deletion finish; nothing is left to migrate"}
	}
	if others := slices.DeleteFunc(slices.Clone(cur.Finalizers), knownFinalizer); len(others) > 0 {
		return &refusal{reason: fmt.Sprintf("finalizers %q: csimigrate knows only %s (which it removes from the object it deleted) and %q (whose owners remove them once Retain is set)",
			others, pvProtection, deletionProtection), remedy: "wait for the finalizers' owners to remove them, or remove them if their owner is gone"}
	}
	return nil
}

// claimRefusal is why the rewrite leaves a PV alone for its claim, or nil:
// pvc is the claim the PV names (nil when there is none of that name). A
// PV pre-bound to a claim but not yet bound (no uid) is refused without
// reading the claim. The plan applies the same rule.
func claimRefusal(cur *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	c := cur.Spec.ClaimRef
	if c == nil {
		return nil
	}
	switch {
	case c.UID == "":
		return &refusal{reason: fmt.Sprintf("pre-bound to claim %s/%s but not bound yet", c.Namespace, c.Name),
			remedy: "create the claim (or wait until it binds), or clear spec.claimRef"}
	case pvc == nil:
		return &refusal{reason: fmt.Sprintf("its claim %s/%s does not exist (the PV is released)", c.Namespace, c.Name),
			remedy: "reclaim it (delete the image by hand, then the PV), or re-bind it: clear spec.claimRef.uid and create a claim with spec.volumeName " + cur.Name}
	case pvc.UID != c.UID:
		return &refusal{reason: fmt.Sprintf("claim %s/%s has uid %s, the PV names uid %s (a new claim of the same name)", c.Namespace, c.Name, pvc.UID, c.UID),
			remedy: "re-bind the PV to the claim that uses it, or reclaim it"}
	case pvc.DeletionTimestamp != nil:
		return &refusal{reason: fmt.Sprintf("its claim %s/%s is being deleted; the PV will be released", c.Namespace, c.Name),
			remedy: "let the deletion finish; the PV is then reclaimed by its policy"}
	case pvc.Spec.VolumeName != cur.Name:
		return &refusal{reason: fmt.Sprintf("claim %s/%s is bound to volume %q, not to this PV", c.Namespace, c.Name, pvc.Spec.VolumeName),
			remedy: "clear this PV's spec.claimRef, or fix the binding"}
	}
	return nil
}

// target is a PV the user named for the rewrite: by its name and, when it
// comes from reviewed input, the uid it had there.
type target struct {
	name string
	uid  types.UID
}

// applier carries out the rewrite against a live cluster. Every call to
// rewrite observes the cluster and takes the next step, so it can be run
// again after an interruption at any point and converges to the same state.
type applier struct {
	client  kubernetes.Interface
	tr      *translate.Translator
	logger  klog.Logger
	stateNS string
	out     io.Writer
	// concurrency is how many PVs are rewritten at once (each PV's steps
	// stay in order); 0 means 1.
	concurrency int
	// online allows rewriting PVs that running pods use where onlineSafe
	// holds.
	online    bool
	stepLimit int // tests: stop after this many mutating steps (0: no limit)

	mu    sync.Mutex // guards what follows, and out
	steps int
	// kept names the PVs rewritten with Retain instead of Delete.
	kept []string
	// Lists read for the checks, shared by the workers for a short while.
	classes map[string]cached[*storagev1.StorageClass]
	pods    map[string]cached[[]v1.Pod]
	// withState names the PVs that had a state ConfigMap when the run
	// listed them (nil: not listed); a PV not in it needs no read of its
	// ConfigMap before its first write (a ConfigMap created since makes
	// that write fail, and is then read).
	withState map[string]bool
}

// listState lists the state ConfigMaps once for a run.
func (a *applier) listState(ctx context.Context) error {
	list, err := a.client.CoreV1().ConfigMaps(a.stateNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
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

// knownNoState reports whether the run's listing showed no state for pv.
func (a *applier) knownNoState(pv string) bool {
	return a.withState != nil && !a.withState[pv]
}

// cached is a value read from the cluster at a time.
type cached[T any] struct {
	v  T
	at time.Time
}

// cacheFor is how long a StorageClass or a namespace's pod list is reused
// by the checks of other PVs: long enough for thousands of PVs in a few
// namespaces, short enough that a pod started during a run is seen.
const cacheFor = 5 * time.Second

// step announces the next write to obj ("pv/NAME" or "storageclass/NAME"),
// or returns errInterrupted when a test's step limit is reached.
func (a *applier) step(obj, what string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stepLimit > 0 && a.steps >= a.stepLimit {
		return errInterrupted
	}
	a.steps++
	fmt.Fprintf(a.out, "%s: %s\n", obj, what)
	return nil
}

// keptRetain names, on its own line, a PV rewritten with reclaim policy
// Retain instead of Delete, and why; the summary counts them.
func (a *applier) keptRetain(pv, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kept = append(a.kept, pv)
	fmt.Fprintf(a.out, "pv/%s: kept at %s\n", pv, why)
}

func (a *applier) say(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.out, format, args...)
}

// storageClass returns the live StorageClass of a PV, nil when it has none
// or the class is gone.
func (a *applier) storageClass(ctx context.Context, pv *v1.PersistentVolume) (*storagev1.StorageClass, error) {
	name := pv.Spec.StorageClassName
	if name == "" {
		return nil, nil
	}
	a.mu.Lock()
	c, ok := a.classes[name]
	a.mu.Unlock()
	if ok && time.Since(c.at) < cacheFor {
		return c.v, nil
	}
	sc, err := a.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.classes == nil {
		a.classes = map[string]cached[*storagev1.StorageClass]{}
	}
	a.classes[name] = cached[*storagev1.StorageClass]{sc, time.Now()}
	a.mu.Unlock()
	return sc, nil
}

// checks is what check read from the cluster for a PV.
type checks struct {
	uid types.UID
	sc  *storagev1.StorageClass
	pvc *v1.PersistentVolumeClaim
	r   RewritePV
}

// check runs every check on a live in-tree PV before the first write to it
// and returns what it read, with the PV's replacement; a refusal says why
// the PV is left alone.
func (a *applier) check(ctx context.Context, cur *v1.PersistentVolume) (*checks, error) {
	if err := objectRefusal(cur); err != nil {
		return nil, err
	}
	var pvc *v1.PersistentVolumeClaim
	if c := cur.Spec.ClaimRef; c != nil && c.UID != "" {
		var err error
		pvc, err = a.client.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			pvc, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if err := claimRefusal(cur, pvc); err != nil {
		return nil, err
	}
	sc, err := a.storageClass(ctx, cur)
	if err != nil {
		return nil, err
	}
	r, err := replacement(a.tr, a.logger, cur, sc, pvc)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if c := cur.Spec.ClaimRef; c != nil {
		pods, err := a.podsUsing(ctx, c.Namespace, c.Name)
		if err != nil {
			return nil, err
		}
		if len(pods) > 0 {
			names := make([]string, len(pods))
			for i, p := range pods {
				names[i] = p.Name
			}
			if !a.online {
				return nil, refuse("in use by pods %s of claim %s/%s; stop them first (csimigrate plan lists them), or use -online where the plugin is migrated on their nodes",
					strings.Join(names, ", "), c.Namespace, c.Name)
			}
			if err := a.onlineSafe(ctx, cur, r.CSI.Spec.CSI.Driver, r.CSI.Spec.CSI.VolumeHandle, pods); err != nil {
				return nil, refuse("in use by pods %s of claim %s/%s, and not safe online: %v", strings.Join(names, ", "), c.Namespace, c.Name, err)
			}
		}
	}
	return &checks{uid: cur.UID, sc: sc, pvc: pvc, r: r}, nil
}

// podsUsing lists the pods of a namespace, not finished, that use a claim.
func (a *applier) podsUsing(ctx context.Context, ns, claim string) ([]v1.Pod, error) {
	pods, err := a.podsIn(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, pod := range pods {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim {
				out = append(out, pod)
				break
			}
		}
	}
	return out, nil
}

// onlineSafe reports why a PV used by running pods cannot be rewritten
// under them, or nil. It can when the kubelet and kube-controller-manager
// already handle the volume as CSI, with the driver and handle the
// replacement has (the handle contract), so that the volume name the
// kubelet tracks and the VolumeAttachment do not change: every pod is
// scheduled to a node whose CSINode lists the in-tree plugin in
// storage.alpha.kubernetes.io/migrated-plugins and has the driver, and,
// unless the driver's CSIDriver says attachRequired: false, a
// VolumeAttachment of this PV on that node names the driver as attacher
// (kube-controller-manager attaches it as CSI). While the PV object is gone
// neither the kubelet's nor the attach/detach controller's desired state
// drops the volume (both skip a volume whose spec cannot be built, and
// remove only deleted pods', in v1.36.3).
//
// The attachment's name must be the one kube-controller-manager computes
// from the replacement's handle (featuregate.AttachmentName): the proof that
// it attached the volume with that handle, so that after the rewrite it
// finds the same attachment instead of attaching anew and detaching this
// one.
func (a *applier) onlineSafe(ctx context.Context, pv *v1.PersistentVolume, driver, handle string, pods []v1.Pod) error {
	plugin := plugins.InTreeNameOfPV(pv)
	attach := true
	if d, err := a.client.StorageV1().CSIDrivers().Get(ctx, driver, metav1.GetOptions{}); err == nil && d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired {
		attach = false
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var vas []storagev1.VolumeAttachment
	if attach {
		list, err := a.client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		vas = list.Items
	}
	for _, pod := range pods {
		node := pod.Spec.NodeName
		if node == "" {
			return fmt.Errorf("pod %s is not scheduled yet", pod.Name)
		}
		cn, err := a.client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s of pod %s has no CSINode (no CSI driver registered there)", node, pod.Name)
		}
		if err != nil {
			return err
		}
		if !slices.Contains(featuregate.ParseMigratedPlugins(cn.Annotations[featuregate.AnnMigratedPlugins]), plugin) {
			return fmt.Errorf("the kubelet of node %s does not migrate %s (CSINode annotation %s = %q)", node, plugin, featuregate.AnnMigratedPlugins, cn.Annotations[featuregate.AnnMigratedPlugins])
		}
		if !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }) {
			return fmt.Errorf("driver %s is not registered on node %s", driver, node)
		}
		if !attach {
			continue
		}
		i := slices.IndexFunc(vas, func(va storagev1.VolumeAttachment) bool {
			return va.Spec.NodeName == node && va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == pv.Name
		})
		switch {
		case i < 0:
			return fmt.Errorf("no VolumeAttachment of this PV on node %s: kube-controller-manager does not attach it as CSI (migration off there?)", node)
		case vas[i].Spec.Attacher != driver:
			return fmt.Errorf("VolumeAttachment %s has attacher %s, not %s", vas[i].Name, vas[i].Spec.Attacher, driver)
		case vas[i].Name != featuregate.AttachmentName(handle, driver, node):
			return fmt.Errorf("VolumeAttachment %s is not named for the replacement's handle %q (kube-controller-manager translated it to another handle; it would attach the replacement anew)", vas[i].Name, handle)
		}
	}
	return nil
}

// podsIn lists the pods of a namespace, reusing a list younger than
// cacheFor.
func (a *applier) podsIn(ctx context.Context, ns string) ([]v1.Pod, error) {
	a.mu.Lock()
	c, ok := a.pods[ns]
	a.mu.Unlock()
	if ok && time.Since(c.at) < cacheFor {
		return c.v, nil
	}
	at := time.Now()
	var pods []v1.Pod
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.client.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		pods = append(pods, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	a.mu.Lock()
	if a.pods == nil {
		a.pods = map[string]cached[[]v1.Pod]{}
	}
	a.pods[ns] = cached[[]v1.Pod]{pods, at}
	a.mu.Unlock()
	return pods, nil
}

// readState verifies a state ConfigMap's checksum and decodes it into v.
func (a *applier) readState(cm *v1.ConfigMap, v any) error {
	where := fmt.Sprintf("ConfigMap %s/%s", a.stateNS, cm.Name)
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
func (a *applier) writeState(ctx context.Context, cmName, ofLabel, of string, v any) (*v1.ConfigMap, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: a.stateNS,
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "csimigrate"},
		Annotations: map[string]string{ofLabel: of, annStateSHA256: hex.EncodeToString(sum[:])}},
		Data: map[string]string{stateKey: string(b)}}
	return a.client.CoreV1().ConfigMaps(a.stateNS).Create(ctx, cm, metav1.CreateOptions{})
}

// loadState reads and verifies a PV's state ConfigMap.
func (a *applier) loadState(cm *v1.ConfigMap) (*rewriteState, error) {
	var s rewriteState
	if err := a.readState(cm, &s); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", a.stateNS, cm.Name, err)
	}
	return &s, nil
}

// saveState stores the state of a PV about to be deleted.
func (a *applier) saveState(ctx context.Context, cur *v1.PersistentVolume, r RewritePV) (*v1.ConfigMap, error) {
	s := rewriteState{PV: cur.Name, UID: cur.UID, ResourceVersion: cur.ResourceVersion, Driver: r.CSI.Spec.CSI.Driver, Handle: r.CSI.Spec.CSI.VolumeHandle,
		Replacement: r.CSI}
	s.KeptRetain = r.KeptRetain()
	q := r.CSI.Spec.Capacity[v1.ResourceStorage]
	s.Capacity = q.String()
	if c := r.CSI.Spec.ClaimRef; c != nil {
		s.ClaimNamespace, s.ClaimName, s.ClaimUID = c.Namespace, c.Name, c.UID
	}
	return a.writeState(ctx, stateName(cur.Name), stateLabel, cur.Name, &s)
}

// rewrite replaces one PV, resuming from whatever state the cluster is in.
// A *refusal means the PV was left exactly as it was.
func (a *applier) rewrite(ctx context.Context, t target) error {
	name := t.name
	pvs := a.client.CoreV1().PersistentVolumes()
	cms := a.client.CoreV1().ConfigMaps(a.stateNS)
	var waitingSince time.Time
	// What this run's own writes returned is used instead of reading the
	// object again; anything else (a conflict, a missing object) is read
	// afresh on the next round.
	var cur *v1.PersistentVolume
	var cm *v1.ConfigMap
	var state *rewriteState
	var checked *checks
	havePV, haveCM := false, a.knownNoState(name)
	for attempt := 0; attempt < 1000; attempt++ {
		if !havePV {
			got, err := pvs.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				cur = nil
			case err != nil:
				return err
			default:
				cur = got
			}
		}
		if !haveCM {
			got, err := cms.Get(ctx, stateName(name), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				cm = nil
			case err != nil:
				return err
			default:
				cm = got
			}
		}
		havePV, haveCM = false, false
		if cm == nil {
			state = nil
		} else if state == nil || state.cmVersion != cm.ResourceVersion {
			s, err := a.loadState(cm)
			if err != nil {
				return err
			}
			if t.uid != "" && s.UID != t.uid {
				return fmt.Errorf("ConfigMap %s/%s was saved for uid %s, the reviewed PV has uid %s; nothing is created from it", a.stateNS, cm.Name, s.UID, t.uid)
			}
			s.cmVersion = cm.ResourceVersion
			state = s
		}
		switch {
		case cur == nil && state == nil:
			return refuse("not found, and no saved replacement (ConfigMap %s/%s)", a.stateNS, stateName(name))

		case cur == nil:
			// Deleted by this rewrite: create the replacement if the claim
			// is still the one it was built for.
			if err := a.claimStillThere(ctx, state); err != nil {
				return fmt.Errorf("ConfigMap %s/%s: %w; nothing is created from it", a.stateNS, cm.Name, err)
			}
			if err := a.step("pv/"+name, "create the CSI PV (reclaim policy Retain for now)"); err != nil {
				return err
			}
			csi := state.Replacement.DeepCopy()
			created, err := pvs.Create(ctx, csi, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			if err == nil {
				cur, havePV, haveCM = created, true, true
			}

		case cur.Spec.CSI != nil:
			if cur.Annotations[AnnMigratedFrom] == "" {
				if state != nil {
					return fmt.Errorf("pv/%s is a CSI PV csimigrate did not create, and ConfigMap %s/%s holds a replacement for it; not touching either", name, a.stateNS, cm.Name)
				}
				return refuse("a CSI PV csimigrate did not create")
			}
			if state != nil && (cur.Spec.CSI.Driver != state.Driver || cur.Spec.CSI.VolumeHandle != state.Handle) {
				return fmt.Errorf("pv/%s is %s %q, ConfigMap %s/%s saved %s %q; not touching either", name, cur.Spec.CSI.Driver, cur.Spec.CSI.VolumeHandle, a.stateNS, cm.Name, state.Driver, state.Handle)
			}
			if want, ok := cur.Annotations[AnnReclaimPolicy]; ok {
				if err := a.step("pv/"+name, "restore reclaim policy "+want); err != nil {
					return err
				}
				upd := cur.DeepCopy()
				upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimPolicy(want)
				delete(upd.Annotations, AnnReclaimPolicy)
				updated, err := a.updatePV(ctx, upd)
				if err != nil {
					return err
				}
				if updated != nil {
					cur, havePV, haveCM = updated, true, true
				}
				continue
			}
			if state != nil {
				if err := a.step("pv/"+name, "remove the saved replacement"); err != nil {
					return err
				}
				if state.KeptRetain != "" {
					a.keptRetain(name, state.KeptRetain)
				}
				uid := cm.UID
				if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				cm, haveCM, havePV = nil, true, true
				continue
			}
			return nil

		case plugins.InTreeNameOfPV(cur) == "" || !a.tr.IsPVMigratable(cur):
			return refuse("neither an in-tree PV csimigrate translates nor a CSI PV it created")

		case t.uid != "" && cur.UID != t.uid:
			return refuse("the live PV has uid %s, the reviewed one %s (replaced since the review)", cur.UID, t.uid)

		case state != nil && cur.UID != state.UID:
			return fmt.Errorf("ConfigMap %s/%s was saved for uid %s, pv/%s now has uid %s; nothing is done with it: delete it once the PV is checked", a.stateNS, cm.Name, state.UID, name, cur.UID)

		case state != nil && cur.DeletionTimestamp != nil:
			// Deleted by this rewrite (Retain is in force: the policy was
			// checked before the state was saved): only pv-protection may
			// hold it, and only that is removed.
			if others := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == pvProtection }); len(others) > 0 {
				return fmt.Errorf("pv/%s is being deleted and held by finalizers %q besides %s; csimigrate removes only that one: remove the others or wait for their owners, then run again", name, others, pvProtection)
			}
			if len(cur.Finalizers) == 0 {
				time.Sleep(100 * time.Millisecond) // deletion in progress
				continue
			}
			if err := a.step("pv/"+name, "remove finalizer "+pvProtection+" from the deleted in-tree PV (Retain is in force)"); err != nil {
				return err
			}
			// Applies only to this object (uid) with exactly this finalizer
			// list; otherwise the test fails and the PV is read again.
			fins, _ := json.Marshal(cur.Finalizers)
			uid, _ := json.Marshal(string(cur.UID))
			patch := `[{"op":"test","path":"/metadata/uid","value":` + string(uid) + `},{"op":"test","path":"/metadata/finalizers","value":` + string(fins) +
				`},{"op":"remove","path":"/metadata/finalizers"}]`
			_, err := pvs.Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			switch {
			case err == nil:
				cur, havePV, haveCM = nil, true, true // no finalizer left: gone
			case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
			default:
				return err
			}

		case state != nil && cur.ResourceVersion != state.ResourceVersion:
			return fmt.Errorf("pv/%s changed after its replacement was saved in ConfigMap %s/%s (resourceVersion %s, saved %s); nothing is done with it: delete the ConfigMap and run again to rebuild it", name, a.stateNS, cm.Name, cur.ResourceVersion, state.ResourceVersion)

		case state != nil:
			if cur.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
				return fmt.Errorf("pv/%s has reclaim policy %s although its replacement was saved; not deleting it", name, cur.Spec.PersistentVolumeReclaimPolicy)
			}
			if err := a.step("pv/"+name, "delete the in-tree PV object (Retain: the volume is kept)"); err != nil {
				return err
			}
			uid, rv := cur.UID, cur.ResourceVersion
			err := pvs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
			switch {
			case err == nil && len(cur.Finalizers) == 0:
				cur, havePV, haveCM = nil, true, true
			case err == nil:
				// Held by its finalizers: marked deleted (its
				// resourceVersion is unknown; the next step does not need
				// it).
				deleted := cur.DeepCopy()
				now := metav1.Now()
				deleted.DeletionTimestamp = &now
				cur, havePV, haveCM = deleted, true, true
			case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			default:
				return err
			}

		default:
			// No state yet: every check on the live object, then the first
			// write. The checks read other objects once; the replacement is
			// built again from the PV as it is now.
			if checked == nil || checked.uid != cur.UID {
				c, err := a.check(ctx, cur)
				if err != nil {
					return err
				}
				checked = c
			}
			r, err := replacement(a.tr, a.logger, cur, checked.sc, checked.pvc)
			if err != nil {
				return refuse("%v", err)
			}
			if cur.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
				if err := a.step("pv/"+name, "set reclaim policy Retain (was "+string(cur.Spec.PersistentVolumeReclaimPolicy)+")"); err != nil {
					return err
				}
				upd := cur.DeepCopy()
				if upd.Annotations == nil {
					upd.Annotations = map[string]string{}
				}
				upd.Annotations[AnnReclaimPolicy] = string(cur.Spec.PersistentVolumeReclaimPolicy)
				upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
				// The update carries cur's resourceVersion: it applies to
				// this exact object or fails.
				updated, err := a.updatePV(ctx, upd)
				if err != nil {
					return err
				}
				if updated != nil {
					cur, havePV, haveCM = updated, true, true
				}
				continue
			}
			if held := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return !slices.Contains(deletionProtection, f) }); len(held) > 0 {
				// Retain is in force; the owners remove their finalizers.
				if waitingSince.IsZero() {
					waitingSince = time.Now()
				}
				if time.Since(waitingSince) > finalizersWaitFor {
					return fmt.Errorf("pv/%s: finalizers %q are still there %s after Retain was set; their owners (kube-controller-manager's persistentvolume-binder, external-provisioner) remove them: is the owner running? csimigrate does not remove them; run again once they are gone", name, held, finalizersWaitFor)
				}
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if err := a.step("pv/"+name, fmt.Sprintf("save the CSI replacement in ConfigMap %s/%s", a.stateNS, stateName(name))); err != nil {
				return err
			}
			saved, err := a.saveState(ctx, cur, r)
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			if err == nil {
				cm, haveCM, havePV = saved, true, true
			}
		}
	}
	return fmt.Errorf("pv/%s: did not converge", name)
}

// updatePV sends upd, which carries the resourceVersion it was read with,
// and returns the PV as updated; nil, nil on a conflict (the PV changed:
// it is read again).
func (a *applier) updatePV(ctx context.Context, upd *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	updated, err := a.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil, nil
	}
	return updated, err
}

// claimStillThere checks, before a replacement is created, that its claim
// is the one it was built for and still bound to the PV's name.
func (a *applier) claimStillThere(ctx context.Context, s *rewriteState) error {
	if s.ClaimName == "" {
		return nil
	}
	pvc, err := a.client.CoreV1().PersistentVolumeClaims(s.ClaimNamespace).Get(ctx, s.ClaimName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("claim %s/%s is gone (a replacement bound to it would be released and reclaimed)", s.ClaimNamespace, s.ClaimName)
	case err != nil:
		return err
	case pvc.UID != s.ClaimUID:
		return fmt.Errorf("claim %s/%s has uid %s, saved %s (a new claim of the same name)", s.ClaimNamespace, s.ClaimName, pvc.UID, s.ClaimUID)
	case pvc.Spec.VolumeName != s.PV:
		return fmt.Errorf("claim %s/%s is bound to volume %q now, not %q", s.ClaimNamespace, s.ClaimName, pvc.Spec.VolumeName, s.PV)
	case pvc.DeletionTimestamp != nil:
		return fmt.Errorf("claim %s/%s is being deleted (a replacement bound to it would be released and reclaimed)", s.ClaimNamespace, s.ClaimName)
	}
	return nil
}

// liveTargets lists the in-tree PVs of the live cluster csimigrate
// translates, and the PVs whose rewrite was interrupted after the delete
// (they exist only as saved state).
func (a *applier) liveTargets(ctx context.Context) ([]target, error) {
	seen := map[string]bool{}
	var out []target
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.client.CoreV1().PersistentVolumes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			pv := &list.Items[i]
			if plugins.InTreeNameOfPV(pv) != "" && a.tr.IsPVMigratable(pv) && !seen[pv.Name] {
				seen[pv.Name] = true
				out = append(out, target{name: pv.Name})
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	cms, err := a.client.CoreV1().ConfigMaps(a.stateNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=csimigrate"})
	if err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		if pv := cm.Annotations[stateLabel]; pv != "" && !seen[pv] {
			seen[pv] = true
			out = append(out, target{name: pv})
		}
	}
	slices.SortFunc(out, func(x, y target) int { return strings.Compare(x.name, y.name) })
	return out, nil
}

// result counts what a run did.
type result struct {
	done, refused int
	errs          []error
}

// record counts the outcome of one object's rewrite and reports a refusal;
// it returns whether the run was interrupted.
func (r *result) record(a *applier, obj string, err error) (interrupted bool) {
	var ref *refusal
	switch {
	case errors.Is(err, errInterrupted):
		return true
	case errors.As(err, &ref):
		r.refused++
		a.say("%s: refused, left as it was: %s\n", obj, ref.reason)
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	case err != nil:
		r.errs = append(r.errs, fmt.Errorf("%s: %w", obj, err))
	default:
		r.done++
	}
	return false
}

// rewriteAll rewrites every target, a.concurrency at a time, each PV's
// steps in order. A refused PV is reported and left as it was; the others
// go on. Errors are sorted by PV name.
func (a *applier) rewriteAll(ctx context.Context, targets []target) (result, error) {
	var r result
	if err := a.listState(ctx); err != nil {
		return r, err
	}
	var mu sync.Mutex
	interrupted := false
	work := make(chan target)
	var wg sync.WaitGroup
	for range max(1, a.concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				err := a.rewrite(ctx, t)
				mu.Lock()
				if r.record(a, "pv/"+t.name, err) {
					interrupted = true
				}
				mu.Unlock()
			}
		}()
	}
	for _, t := range targets {
		mu.Lock()
		stop := interrupted
		mu.Unlock()
		if stop {
			break
		}
		work <- t
	}
	close(work)
	wg.Wait()
	if interrupted {
		return r, errInterrupted
	}
	slices.SortFunc(r.errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return r, errors.Join(r.errs...)
}

// dryRunEach dry-runs each target with one, which sends the target's steps
// with server-side dry run and returns the errors of those that fail, each
// naming the object and the step.
func dryRunEach(targets []target, one func(t target) []error) error {
	var errs []error
	for _, t := range targets {
		errs = append(errs, one(t)...)
	}
	return errors.Join(errs...)
}

// dryRun runs every check and sends each step of every rewrite to the API
// server with server-side dry run (the replacement is validated under a
// temporary name, since the original still exists).
func (a *applier) dryRun(ctx context.Context, targets []target) error {
	dry := []string{metav1.DryRunAll}
	return dryRunEach(targets, func(t target) []error {
		cur, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.name, metav1.GetOptions{})
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.name, err)}
		}
		if plugins.InTreeNameOfPV(cur) == "" {
			a.say("pv/%s: not an in-tree PV; nothing to do\n", t.name)
			return nil
		}
		if t.uid != "" && cur.UID != t.uid {
			return []error{fmt.Errorf("pv/%s: the live PV has uid %s, the reviewed one %s", t.name, cur.UID, t.uid)}
		}
		c, err := a.check(ctx, cur)
		if err != nil {
			return []error{fmt.Errorf("pv/%s: %w", t.name, err)}
		}
		var errs []error
		upd := cur.DeepCopy()
		upd.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		if _, err := a.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: Retain: %w", t.name, err))
		}
		if err := a.client.CoreV1().PersistentVolumes().Delete(ctx, cur.Name, metav1.DeleteOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: delete: %w", t.name, err))
		}
		csi := c.r.CSI.DeepCopy()
		csi.Name = "csimigrate-dry-run-" + string(cur.UID)
		if _, err := a.client.CoreV1().PersistentVolumes().Create(ctx, csi, metav1.CreateOptions{DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("pv/%s: create CSI PV: %w", t.name, err))
		} else {
			a.say("pv/%s: Retain, delete and create as %s would be accepted\n", t.name, csi.Spec.CSI.Driver)
			if why := c.r.KeptRetain(); why != "" {
				a.keptRetain(t.name, why)
			}
		}
		return errs
	})
}

// applyOptions are the flags of rewrite -apply.
type applyOptions struct {
	dry         bool
	stateNS     string
	concurrency int
	qps         float32
	burst       int
	online      bool
}
