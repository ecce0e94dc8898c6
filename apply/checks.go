package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// finalizersWaitFor is how long a run waits for the owners of
// deletionProtection finalizers to remove them once Retain is in force.
var finalizersWaitFor = 60 * time.Second

// refuse is a refusal with a code and a formatted reason.
func refuse(code rewrite.Code, format string, args ...any) error {
	return rewrite.Refuse(code, format, args...)
}

// objectRefusal and claimRefusal are the rewrite's rules for the PV object
// and its claim; the plan applies the same.
var (
	objectRefusal = rewrite.ObjectRefusal
	claimRefusal  = rewrite.ClaimRefusal
)

// keptRefusal is rewrite.KeptRefusal with the objects the options name.
func (a *Writer) keptRefusal(kind string, o metav1.Object) error {
	return rewrite.KeptRefusal(kind, o, a.o.SourceChanged.Has(kind, o.GetNamespace(), o.GetName()))
}

// storageClass returns the live StorageClass of a PV, nil when it has none
// or the class is gone.
func (a *Writer) storageClass(ctx context.Context, pv *v1.PersistentVolume) (*storagev1.StorageClass, error) {
	name := pv.Spec.StorageClassName
	if name == "" {
		return nil, nil
	}
	return readThrough(a, &a.classes, name, func() (*storagev1.StorageClass, error) {
		return getOrNil(a.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{}))
	})
}

// reasons gathers the refusals of one object's checks, so that its refusal
// names every reason at once (rewrite.JoinRefusals).
type reasons struct{ list []*rewrite.Refusal }

// add keeps err's refusal and returns nil; any other error (a failed read)
// is returned as it is, and ends the checks.
func (rs *reasons) add(err error) error {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		rs.list = append(rs.list, r)
		return nil
	}
	return err
}

// err is the object's refusal, or nil when no check refused it.
func (rs *reasons) err() error {
	if r := rewrite.JoinRefusals(rs.list...); r != nil {
		return r
	}
	return nil
}

// claimChecks refuses a PV for what its object says and for its claim,
// which it returns (nil when the PV is not bound) with the refusal that
// names every such reason.
func (a *Writer) claimChecks(ctx context.Context, cur *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	var rs reasons
	if err := rs.add(objectRefusal(cur)); err != nil {
		return nil, err
	}
	if err := rs.add(a.keptRefusal("PersistentVolume", cur)); err != nil {
		return nil, err
	}
	var pvc *v1.PersistentVolumeClaim
	if c := cur.Spec.ClaimRef; c != nil && c.UID != "" {
		var err error
		if pvc, err = a.claim(ctx, c.Namespace, c.Name); err != nil {
			return nil, err
		}
	}
	if err := rs.add(claimRefusal(cur, pvc)); err != nil {
		return nil, err
	}
	return pvc, rs.err()
}

// driverRefusal is why the rewrite leaves an object alone whose
// replacement names CSI driver driver while no CSIDriver object registers
// it: nothing would provision, attach or mount for it (the plan's
// CSIDriverMissing).
//
// The CSIDrivers are listed (the right the plan and the controller's
// informer have already), once per cacheFor.
func (a *Writer) driverRefusal(ctx context.Context, driver string) error {
	names, err := readThrough(a, &a.drivers, "", func() ([]string, error) {
		list, err := a.client.StorageV1().CSIDrivers().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, len(list.Items))
		for i, d := range list.Items {
			names[i] = d.Name
		}
		return names, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("listing CSIDrivers: %w", err)
	case !slices.Contains(names, driver):
		return &rewrite.Refusal{Code: rewrite.CodeCSIDriverMissing, Reason: fmt.Sprintf("no CSIDriver object registers %s, the driver the replacement names: nothing would provision, attach or mount its volumes", driver),
			Remedy: "install the driver first (kubectl get csidrivers lists what is installed)"}
	}
	return nil
}

// inUseRefusal refuses a PV that pods which have not finished use (it
// returns them), unless -online and onlineSafe hold for the in-tree form
// of the volume, inTree, and the CSI driver and handle it is handled as.
func (a *Writer) inUseRefusal(ctx context.Context, cur, inTree *v1.PersistentVolume, driver, handle string) (pods []v1.Pod, err error) {
	c := cur.Spec.ClaimRef
	if c == nil {
		return nil, nil
	}
	if pods, err = a.podsUsing(ctx, c.Namespace, c.Name); err != nil {
		return nil, err
	}
	return pods, a.inUseRefusalOf(ctx, cur, inTree, driver, handle, pods)
}

// inUseRefusalOf is inUseRefusal's refusal of the pods that use cur's
// claim ("" handle: no CSI form to check online).
func (a *Writer) inUseRefusalOf(ctx context.Context, cur, inTree *v1.PersistentVolume, driver, handle string, pods []v1.Pod) error {
	c := cur.Spec.ClaimRef
	if c == nil || len(pods) == 0 {
		return nil
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	if !a.o.Online {
		return &rewrite.Refusal{Code: rewrite.CodeInUse, Reason: fmt.Sprintf("in use by pods %s of claim %s/%s", strings.Join(names, ", "), c.Namespace, c.Name),
			Remedy: "stop them first, or rewrite it online where the plugin is already migrated on their nodes", Action: plugin.ActionStopPods, ActsOn: "PersistentVolumeClaim " + c.Namespace + "/" + c.Name}
	}
	why := "no CSI form to hand the volume to"
	if handle != "" {
		err := a.onlineSafe(ctx, inTree, driver, handle, pods)
		if err == nil {
			return nil
		}
		why = err.Error()
	}
	return refuse(rewrite.CodeInUse, "in use by pods %s of claim %s/%s, and not safe online: %s", strings.Join(names, ", "), c.Namespace, c.Name, why)
}

// nodePluginRefusal is why the rewrite leaves a PV alone whose pods (not
// finished) run on nodes whose CSINode registers no node plugin of driver,
// the replacement's (the plan's CSINodeDriverMissing): the driver would
// not mount it there. A node without a CSINode has none.
func (a *Writer) nodePluginRefusal(ctx context.Context, driver string, pods []v1.Pod) error {
	var missing []string
	for _, pod := range pods {
		node := pod.Spec.NodeName
		if node == "" || slices.Contains(missing, node) {
			continue
		}
		cn, err := a.client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading CSINode %s: %w", node, err)
		case slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }):
			continue
		}
		missing = append(missing, node)
	}
	if len(missing) == 0 {
		return nil
	}
	return &rewrite.Refusal{Code: rewrite.CodeCSINodeDriverMissing,
		Reason: fmt.Sprintf("the node plugin of %s is not registered on node(s) %s, where the volume's pods run: it would not mount there", driver, strings.Join(missing, ", ")),
		Remedy: "run the driver's node plugin on those nodes (its DaemonSet's node selector and tolerations), or move the pods to nodes that run it", ActsOn: "CSINode " + strings.Join(missing, ", ")}
}

// podsUsing lists the pods of a namespace, not finished, that use a claim.
func (a *Writer) podsUsing(ctx context.Context, ns, claim string) ([]v1.Pod, error) {
	var out []v1.Pod
	if a.listers.PodsUsing != nil {
		pods, err := a.listers.PodsUsing(ns, claim)
		switch {
		case errors.Is(err, ErrNotCached):
			// Read from the API server, below.
		case err != nil:
			return nil, err
		default:
			for i := range pods {
				if pods[i].Status.Phase != v1.PodSucceeded && pods[i].Status.Phase != v1.PodFailed {
					out = append(out, pods[i])
				}
			}
			return out, nil
		}
	} else if a.listers.Pods != nil {
		// From the lister's own objects, read only: a copy of each that
		// uses the claim, not of every pod of the namespace (a check of a
		// namespace of thousands of pods would copy them all).
		list, err := a.listers.Pods.Pods(ns).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, pod := range list {
			if usesClaim(pod, claim) {
				out = append(out, *pod)
			}
		}
		return out, nil
	}
	pods, err := a.podsIn(ctx, ns)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if usesClaim(&pods[i], claim) {
			out = append(out, pods[i])
		}
	}
	return out, nil
}

// usesClaim reports whether a pod that has not finished uses the claim.
func usesClaim(pod *v1.Pod, claim string) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	return slices.Contains(rewrite.PodClaims(pod.Name, &pod.Spec), claim)
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
// remove only deleted pods', in v1.37.2, as in v1.36.3).
//
// The attachment's name must be the one kube-controller-manager computes
// from the replacement's handle (featuregate.AttachmentName): the proof that
// it attached the volume with that handle, so that after the rewrite it
// finds the same attachment instead of attaching anew and detaching this
// one.
func (a *Writer) onlineSafe(ctx context.Context, pv *v1.PersistentVolume, driver, handle string, pods []v1.Pod) error {
	inTreeName := plugin.InTreeNameOfPV(pv)
	attach := true
	if d, err := a.client.StorageV1().CSIDrivers().Get(ctx, driver, metav1.GetOptions{}); err == nil && d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired {
		attach = false
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var vas []storagev1.VolumeAttachment
	if attach {
		var err error
		if vas, err = a.volumeAttachments(ctx); err != nil {
			return err
		}
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
		if !slices.Contains(featuregate.ParseMigratedPlugins(cn.Annotations[featuregate.AnnMigratedPlugins]), inTreeName) {
			return fmt.Errorf("the kubelet of node %s does not migrate %s (CSINode annotation %s = %q)", node, inTreeName, featuregate.AnnMigratedPlugins, cn.Annotations[featuregate.AnnMigratedPlugins])
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
// cacheFor (without a Pods lister).
func (a *Writer) podsIn(ctx context.Context, ns string) ([]v1.Pod, error) {
	return readThrough(a, &a.pods, ns, func() ([]v1.Pod, error) {
		var pods []v1.Pod
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := a.client.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			pods = append(pods, list.Items...)
			if list.Continue == "" {
				return pods, nil
			}
			opts.Continue = list.Continue
		}
	})
}

// claimStillThere checks, before a replacement is created, that its claim
// is the one it was built for and still bound to the PV's name.
func (a *Writer) claimStillThere(ctx context.Context, s *rewriteState) error {
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

// secret reads a Secret for the checks (nil when there is none), reusing
// one read less than cacheFor ago: PVs that share a Secret are checked
// with one read. Its values only decide the checks' verdicts.
func (a *Writer) secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return readThrough(a, &a.secrets, ns+"/"+name, func() (*v1.Secret, error) {
		return getOrNil(a.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}))
	})
}

// readThrough is the value of key in cache m when it was read less than
// cacheFor ago, else what read returns now (kept in m). Concurrent
// workers may read the same key at once; the last answer is kept.
func readThrough[T any](a *Writer, m *map[string]cached[T], key string, read func() (T, error)) (T, error) {
	a.mu.Lock()
	c, ok := (*m)[key]
	a.mu.Unlock()
	if ok && time.Since(c.at) < cacheFor {
		return c.v, nil
	}
	at := time.Now()
	v, err := read()
	if err != nil {
		var zero T
		return zero, err
	}
	a.mu.Lock()
	if *m == nil {
		*m = map[string]cached[T]{}
	}
	(*m)[key] = cached[T]{v, at}
	a.mu.Unlock()
	return v, nil
}

// checkedPV is a PV that passed every check before the first write to it:
// what the checks read, and the replacement they built.
type checkedPV struct {
	uid types.UID
	sc  *storagev1.StorageClass
	pvc *v1.PersistentVolumeClaim
	// repl is the replacement; kept says why it ends with Retain where the
	// PV had Delete ("" when it keeps the policy).
	repl *v1.PersistentVolume
	kept string
	// adoption is what the checks decided for an RBD image or a CephFS
	// subvolume (nil without Ceph access, or for another plugin).
	adoption *adoption
}
