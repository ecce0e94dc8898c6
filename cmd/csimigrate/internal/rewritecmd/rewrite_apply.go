package rewritecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// runApply carries out the rewrite, or with -undo its undo, on the
// targets: the PVs and StorageClasses of the reviewed input, or of the live
// cluster, narrowed to names.
func runApply(c *cli.Common, tr *translate.Translator, o applyOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a, done, code := newApplier(c, tr, o, stdout, stderr)
	defer done()
	if code != cli.ExitOK {
		return code
	}
	// Ctrl-C (or SIGTERM) ends the run between writes: every object is
	// left where a rerun resumes it, and the run says so.
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx := interrupted
	live, err := a.readServed(ctx, c, o.Adopt && c.CephConfig == "")
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitBlocked
	}
	// The writer, once, with every option: the flags', the access they
	// ask for and the entries Ceph CSI serves.
	if err := a.build(); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitUsage
	}
	targets, classes, code := a.selectTargets(ctx, c, names, stdin, stderr)
	if code != cli.ExitOK {
		return code
	}
	if a.results != nil {
		a.results.selected(targets, classes)
	}
	if o.reviewFile != "" {
		// What runs is what was reviewed: its options, targets and
		// objects, each as it was then; checked before the first write.
		if code := a.checkReview(ctx, o, targets, classes, stderr); code != cli.ExitOK {
			return code
		}
	}
	targets, classes, err = a.withoutBlocked(ctx, targets, classes)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitBlocked
	}
	targets, classes = a.withPlanVerdicts(live, targets, classes)
	if o.writer.DryRun {
		// What the real run would wait for before its first write, then
		// what it would do, counted as it counts.
		switch holder, lerr := apply.LeaseHolder(ctx, a.client, o.writer.StateNamespace); {
		case lerr != nil:
			err = fmt.Errorf("reading the writer Lease: %w", lerr)
		case holder != "":
			a.say("the writer Lease %s/%s is held by %s: the real run would wait up to %s (-lease-wait) for it, then refuse\n", o.writer.StateNamespace, apply.LeaseName, holder, o.leaseWait)
		}
		err = errors.Join(err, a.applyAll(ctx, targets, classes))
		a.report(stdout, err)
	} else {
		// One writer at a time: the Lease every csimigrate writer holds,
		// which the Writer checks before each write.
		if ctx, a.lease, err = apply.HoldLeaseSaying(ctx, a.client, o.writer.StateNamespace, o.leaseWait, func(s string) { a.say("%s\n", s) }); err != nil {
			if interrupted.Err() != nil {
				err = errors.New("interrupted while waiting for the writer Lease: nothing was written")
			}
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitBlocked
		}
		err = a.applyAll(ctx, targets, classes)
		// Released at once, interrupted or not: the next run need not
		// wait for a stale Lease.
		a.lease.Release(context.Background())
		a.report(stdout, err)
		if interrupted.Err() != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: interrupted: objects begun are left half-done, their replacements saved in ConfigMaps in %s (csimigrate plan names them); run the same rewrite -apply again to resume\n", o.writer.StateNamespace)
			return cli.ExitBlocked
		}
	}
	if kept := a.w.Kept(); len(kept) > 0 {
		fmt.Fprintf(a.out, "%d PersistentVolumes kept at reclaim policy Retain instead of Delete (see above): %s\n", len(kept), strings.Join(kept, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %s\n", output.CommandError(err))
		return cli.ExitBlocked
	}
	if a.refused.Refused > 0 {
		return cli.ExitBlocked
	}
	return cli.ExitOK
}

// newApplier is the applier of the options: its client, the Ceph and
// vCenter access -adopt and the vSphere flags ask for, and the drivers the
// cluster has (a backend without its driver is not rewritten). done closes
// what it opened, whatever the code; a code other than cli.ExitOK is the
// command's exit status, its reason written to stderr.
func newApplier(c *cli.Common, tr *translate.Translator, o applyOptions, stdout, stderr io.Writer) (a *applier, done func(), code int) {
	done = func() {}
	client, err := cli.ClientFor(c.Kubeconfig, c.Context, o.qps32, o.burst)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return nil, done, cli.ExitUsage
	}
	// The writer's options as the flags bound them, with the access they
	// ask for.
	a = &applier{client: client, tr: tr, logger: c.Logger(stderr), out: stdout, opts: o.writer}
	if c.Output == "json" {
		// A result per object on stdout; the run's lines on stderr.
		a.out, a.results = stderr, newObjectResults()
	}
	if o.Adopt {
		a.opts.Ceph, a.opts.CephFSSecret = o.CephFlags.Tools, o.CephFSSecret
		if a.opts.CephConfig, err = c.ClusterConfig(); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, done, cli.ExitUsage
		}
	}
	if o.VSphere.Wanted() {
		vc, _, err := o.VSphere.Open(context.Background(), client, c.Logger(stderr))
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: vCenter: %v\n", err)
			return nil, done, cli.ExitInput
		}
		a.opts.VSphere, done = vc, func() { vc.Close() }
	}
	drivers, err := cli.ListDrivers(context.Background(), client)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return nil, done, cli.ExitBlocked
	}
	if a.tr, a.blocked, err = cli.DriversFor(tr, drivers, c.Drivers, stderr); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return nil, done, cli.ExitUsage
	}
	return a, done, cli.ExitOK
}

// readServed reads, for a rewrite (an undo needs none), the plan of the
// live cluster and the cluster entries the Ceph CSI drivers serve: the
// writer checks each Ceph PV against them before its first write to it,
// and, with adoptServed (-adopt without -ceph-config), an adoption names the
// drivers' own entries from them.
func (a *applier) readServed(ctx context.Context, c *cli.Common, adoptServed bool) (*plan.Plan, error) {
	if a.opts.Direction.IsUndo() {
		return nil, nil
	}
	result, served, err := cli.LivePlan(ctx, a.client, a.tr, plan.Options{Drivers: c.Drivers, SourceChanged: a.opts.SourceChanged, Online: a.opts.Online, Namespace: c.Scope()}, true)
	if err != nil {
		return nil, err
	}
	byDriver := result.CephServed()
	a.opts.CephServed = func(_ context.Context, driver string) (ceph.ClusterConfig, error) { return byDriver.For(driver) }
	if adoptServed && len(served.Entries()) > 0 {
		a.opts.CephConfig = served
	}
	return result, nil
}

// withPlanVerdicts are the targets that the plan of the live cluster does
// not block; the others are refused with the plan's verdict (every reason,
// with its code, as the review gives it: what the review shows is what the
// run does), counted and left as they are. The writer's own checks judge
// the rest. An undo (no plan) is judged by the writer alone.
func (a *applier) withPlanVerdicts(live *plan.Plan, pvs, scs []apply.Target) (keptPVs, keptSCs []apply.Target) {
	if live == nil {
		return pvs, scs
	}
	v := verdictsOf(live, true)
	for _, t := range pvs {
		if pv, ok := v.pvs[t.Name]; ok {
			a.refuseVerdict(rewrite.PVRef(t.Name), pv)
			continue
		}
		keptPVs = append(keptPVs, t)
	}
	for _, t := range scs {
		if sc, ok := v.classes[t.Name]; ok {
			a.refuseVerdict(rewrite.ClassRef(t.Name), sc)
			continue
		}
		keptSCs = append(keptSCs, t)
	}
	return keptPVs, keptSCs
}

// refuseVerdict reports an object the plan blocks, as the writer reports
// its refusals, and counts it by each of its codes.
func (a *applier) refuseVerdict(obj rewrite.ObjectRef, v planVerdict) {
	fmt.Fprintf(a.out, "%s: refused (%s), left as it was: %s\n", obj.Resource(), strings.Join(v.codes, ", "), v.text)
	if a.results != nil {
		a.results.refuse(obj, v.codes, v.text)
	}
	a.refused.Refused++
	if a.refused.RefusedBy == nil {
		a.refused.RefusedBy = map[rewrite.Code]int{}
	}
	for _, c := range v.codes {
		a.refused.RefusedBy[rewrite.Code(c)]++
	}
}

// refuse reports an object the run leaves as it was before the writer
// sees it (its backend's driver, its Ceph entry), and counts it as the
// writer counts its own refusals.
func (a *applier) refuse(obj rewrite.ObjectRef, r *rewrite.Refusal) {
	textEvents{a.out}.Refused(obj, r)
	if a.results != nil {
		a.results.refuse(obj, codeStrings(r), output.RefusalText(r))
	}
	a.refused.Refused++
	if a.refused.RefusedBy == nil {
		a.refused.RefusedBy = map[rewrite.Code]int{}
	}
	for _, c := range r.Codes() {
		a.refused.RefusedBy[c]++
	}
}

// withoutBlocked are the targets whose backend's driver the cluster has;
// the others are refused with the plan's code (CSIDriverMissing,
// CSIDriverAmbiguous), counted and left as they are (only a rewrite needs
// the driver; an undo does not).
func (a *applier) withoutBlocked(ctx context.Context, pvs, scs []apply.Target) (keptPVs, keptSCs []apply.Target, err error) {
	if len(a.blocked) == 0 || a.opts.Direction.IsUndo() {
		return pvs, scs, nil
	}
	pvBackendOf := func(name string) (string, error) {
		pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return cli.PVBackend(pv), err
	}
	classBackendOf := func(name string) (string, error) {
		sc, err := a.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cli.ClassBackend(sc), nil
	}
	if keptPVs, err = a.keepServed(pvs, rewrite.PVRef, pvBackendOf); err != nil {
		return nil, nil, err
	}
	keptSCs, err = a.keepServed(scs, rewrite.ClassRef, classBackendOf)
	return keptPVs, keptSCs, err
}

// keepServed are the targets (ref makes their reference) whose backend
// (backendOf reads it from the cluster) is not blocked; a target gone from
// the cluster (deleted by an interrupted run: its saved replacement is
// created again by the writer, whose checks judge it) is kept.
func (a *applier) keepServed(targets []apply.Target, ref func(string) rewrite.ObjectRef, backendOf func(string) (string, error)) (kept []apply.Target, err error) {
	for _, t := range targets {
		backend, err := backendOf(t.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", ref(t.Name).Resource(), err)
		case a.blocked[backend] != nil && a.blocked[backend].Code != string(rewrite.CodeCSIDriverMissing):
			a.refuse(ref(t.Name), rewrite.FindingRefusal(*a.blocked[backend]))
			continue
		}
		// A driver not installed the writer's checks refuse too, with
		// every other reason (as the review gives them).
		kept = append(kept, t)
	}
	return kept, nil
}

// selectTargets are the PVs and StorageClasses a run acts on: those of the
// reviewed input that the run's direction replaces, each with the uid it had
// there, or else the cluster's (and those whose run was interrupted after the
// delete), narrowed to names; or the exit code of what went wrong.
func (a *applier) selectTargets(ctx context.Context, c *cli.Common, names []string, stdin io.Reader, stderr io.Writer) (pvs, scs []apply.Target, code int) {
	dir := a.opts.Direction
	where := "cluster"
	if len(c.Files) > 0 {
		where = "reviewed input"
		inv := &input.Inventory{}
		if err := c.ReadInput(stdin, stderr, inv); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, nil, cli.ExitInput
		}
		for _, pv := range inv.PVs {
			if a.w.IsSource(pv) && (len(names) > 0 || inNamespace(pv, c.Scope())) {
				pvs = append(pvs, apply.Target{Name: pv.Name, UID: pv.UID})
			}
		}
		for _, sc := range inv.StorageClasses {
			if a.w.IsSourceClass(sc) && (len(names) > 0 || c.Scope() == "") {
				scs = append(scs, apply.Target{Name: sc.Name, UID: sc.UID})
			}
		}
		a.say("%d %s PersistentVolumes and %d %s StorageClasses in the reviewed input\n", len(pvs), dir.Scope(), len(scs), dir.Scope())
	} else {
		var err error
		if pvs, err = a.w.LiveTargets(ctx); err == nil {
			scs, err = a.w.LiveClassTargets(ctx)
		}
		if err == nil && len(names) == 0 && c.Scope() != "" {
			// -n: the PVs of the namespace's claims, and no class.
			where = "namespace " + c.Scope()
			scs = nil
			pvs, err = a.inNamespace(ctx, pvs, c.Scope())
		}
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, nil, cli.ExitBlocked
		}
		a.say("%d %s PersistentVolumes and %d %s StorageClasses (or interrupted runs) in the %s\n", len(pvs), dir.Scope(), len(scs), dir.Scope(), where)
	}
	if len(names) == 0 {
		return pvs, scs, cli.ExitOK
	}
	ts, err := parseTargets(names)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return nil, nil, cli.ExitUsage
	}
	// A claim or namespace names PVs by the claim each is bound to: the
	// reviewed input's, else the live PV's (or, where an interrupted run
	// deleted it, the claim its saved state names).
	claims := map[string]string{}
	if slices.ContainsFunc(ts, target.byClaim) {
		if claims, err = a.claimsOf(ctx, c, pvs, stdin); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return nil, nil, cli.ExitInput
		}
	}
	var namedPVs, namedSCs []apply.Target
	matched := make([]bool, len(ts))
	// Each object once, in the order of the input or the cluster.
	for _, p := range pvs {
		named := false
		for i, t := range ts {
			if t.selectsPV(p.Name, claims[p.Name]) {
				named, matched[i] = true, true
			}
		}
		if named {
			namedPVs = append(namedPVs, p)
		}
	}
	for _, sc := range scs {
		named := false
		for i, t := range ts {
			if t.selectsClass(sc.Name) {
				named, matched[i] = true, true
			}
		}
		if named {
			namedSCs = append(namedSCs, sc)
		}
	}
	for i, t := range ts {
		if matched[i] {
			continue
		}
		switch {
		case t.namespace != "":
			a.say("%s: no %s PersistentVolume is bound to a claim of it; nothing to do\n", t.given, dir.Scope())
			continue
		case where == "cluster" && !t.byClaim() && a.alreadyDone(ctx, t.ref):
			// Named again after its run: nothing left to do.
			a.say("%s: already %s; nothing to do\n", t.ref.Resource(), dir.Done())
			continue
		case where == "cluster" && t.claim != "" && a.claimDone(ctx, t.claim):
			a.say("%s: its PV is already %s; nothing to do\n", t.given, dir.Done())
			continue
		}
		kind, name := "PV", t.ref.Name
		switch {
		case t.claim != "":
			kind, name = "claim", t.claim
		case t.ref.Kind == rewrite.KindStorageClass:
			kind = "StorageClass"
		}
		if t.claim != "" {
			fmt.Fprintf(stderr, "csimigrate rewrite: claim %q is bound to no %s PV of the %s\n", name, dir.Scope(), where)
		} else {
			fmt.Fprintf(stderr, "csimigrate rewrite: %s %q is not %s %s of the %s\n", kind, name, dir.AScope(), kind, where)
		}
		return nil, nil, cli.ExitUsage
	}
	a.say("%d PersistentVolumes and %d StorageClasses of them named\n", len(namedPVs), len(namedSCs))
	return namedPVs, namedSCs, cli.ExitOK
}

// checkReview compares the run with the review of -review: its options,
// targets and objects, then each object's live uid and resourceVersion. It
// names every difference, and the run stops before its first write.
func (a *applier) checkReview(ctx context.Context, o applyOptions, pvs, classes []apply.Target, stderr io.Writer) int {
	rec, err := readReview(o.reviewFile)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitUsage
	}
	if diffs := rec.differences(o.recorded, o.recordedTargets, pvs, classes); len(diffs) > 0 {
		fmt.Fprintf(stderr, "csimigrate rewrite: this run is not the one reviewed in %s, nothing written:\n  %s\nreview again with this run's options and targets, or run the ones reviewed\n", o.reviewFile, strings.Join(diffs, "\n  "))
		return cli.ExitUsage
	}
	changed, err := a.changedSinceReview(ctx, rec)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitBlocked
	}
	if len(changed) > 0 {
		fmt.Fprintf(stderr, "csimigrate rewrite: the cluster changed since the review in %s, nothing written:\n  %s\nreview again\n", o.reviewFile, strings.Join(changed, "\n  "))
		return cli.ExitBlocked
	}
	a.say("the run is the one reviewed in %s: %d objects, each as it was then\n", o.reviewFile, len(rec.Objects))
	return cli.ExitOK
}

// claimsOf is the claim ("namespace/name") each target PV is bound to: in
// the reviewed input, else on the cluster (a PV an interrupted run deleted:
// the claim its saved state names).
func (a *applier) claimsOf(ctx context.Context, c *cli.Common, targets []apply.Target, stdin io.Reader) (map[string]string, error) {
	out := map[string]string{}
	if len(c.Files) > 0 {
		inv := &input.Inventory{}
		if err := c.ReadInput(stdin, io.Discard, inv); err != nil {
			return nil, err
		}
		for _, pv := range inv.PVs {
			out[pv.Name] = claimOf(pv)
		}
		return out, nil
	}
	for _, t := range targets {
		pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if claim, ok := a.w.SavedClaim(ctx, t.Name); ok {
				out[t.Name] = claim.Namespace + "/" + claim.Name
			}
		case err != nil:
			return nil, fmt.Errorf("reading pv/%s: %w", t.Name, err)
		default:
			out[t.Name] = claimOf(pv)
		}
	}
	return out, nil
}

// claimDone reports whether the claim ("namespace/name") is bound to a PV
// that the run's direction has made already.
func (a *applier) claimDone(ctx context.Context, claim string) bool {
	ns, name, _ := strings.Cut(claim, "/")
	pvc, err := a.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	return err == nil && pvc.Spec.VolumeName != "" && a.alreadyDone(ctx, rewrite.PVRef(pvc.Spec.VolumeName))
}

// inNamespace are the targets whose live PV is bound to a claim of
// namespace ns (those whose PV is gone, an interrupted run's, by the claim
// their saved state names).
func (a *applier) inNamespace(ctx context.Context, targets []apply.Target, ns string) ([]apply.Target, error) {
	var out []apply.Target
	for _, t := range targets {
		pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, t.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if claim, ok := a.w.SavedClaim(ctx, t.Name); ok && claim.Namespace == ns {
				out = append(out, t)
			}
		case err != nil:
			return nil, fmt.Errorf("reading pv/%s: %w", t.Name, err)
		case inNamespace(pv, ns):
			out = append(out, t)
		}
	}
	return out, nil
}

// alreadyDone reports whether the live object ref names is what the run's
// direction makes: the reverse direction would replace it.
func (a *applier) alreadyDone(ctx context.Context, ref rewrite.ObjectRef) bool {
	back := a.opts.Direction.Reverse()
	if ref.Kind == rewrite.KindStorageClass {
		sc, err := a.client.StorageV1().StorageClasses().Get(ctx, ref.Name, metav1.GetOptions{})
		return err == nil && back.ReplacesClass(a.tr, sc)
	}
	pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, ref.Name, metav1.GetOptions{})
	return err == nil && back.ReplacesPV(a.tr, pv)
}

// applyAll takes the steps of every target PV, then of every target
// StorageClass (whose in-tree form the PVs' deletion secrets are read from),
// and prints the summary.
//
// A dry run (Options.DryRun) takes the same path: the writer checks and
// dry-runs each object, and the summary counts what the real run would do.
func (a *applier) applyAll(ctx context.Context, targets, classes []apply.Target) error {
	r, pvErr := a.rewriteAll(ctx, targets)
	if r.Done > 0 && !a.opts.DryRun {
		a.waitClaimsBound(ctx, targets)
	}
	var rc apply.Result
	var scErr error
	if !errors.Is(pvErr, apply.ErrWriteLimit) {
		rc, scErr = a.rewriteClasses(ctx, classes)
	}
	refused := a.refused.Refused + r.Refused + rc.Refused
	byCode := map[rewrite.Code]int{}
	for _, m := range []map[rewrite.Code]int{a.refused.RefusedBy, r.RefusedBy, rc.RefusedBy} {
		for c, n := range m {
			byCode[c] += n
		}
	}
	a.refused.Refused, a.refused.RefusedBy = refused, byCode
	codes := ""
	if len(byCode) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(byCode)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, byCode[c]))
		}
		codes = " (" + strings.Join(parts, ", ") + ")"
	}
	done, steps := a.opts.Direction.Done()+" or already done", fmt.Sprintf("%d steps taken", a.steps)
	if a.opts.DryRun {
		done, steps = "would be "+a.opts.Direction.Done()+" or are already done", "nothing written (dry run)"
	}
	a.say("%d PersistentVolumes and %d StorageClasses %s, %d refused and left as they were%s, %s\n",
		r.Done, rc.Done, done, refused, codes, steps)
	return errors.Join(pvErr, scErr)
}

// report writes, with -o json, each object's outcome on stdout.
func (a *applier) report(stdout io.Writer, runErr error) {
	if a.results == nil {
		return
	}
	if err := a.results.write(stdout, a.opts.Direction, a.opts.DryRun, a.refused.RefusedBy, a.steps, runErr); err != nil {
		fmt.Fprintf(a.out, "csimigrate rewrite: writing the output: %v\n", err)
	}
}

// claimsBoundWait is how long rewrite -apply waits for the claims of the
// PVs it replaced to be Bound again (kube-controller-manager's claim sync
// period is 15 s by default).
var claimsBoundWait = 60 * time.Second

// waitClaimsBound waits, up to claimsBoundWait, while claims of the target
// PVs show Lost (apply.Writer.LostClaims), and names those still Lost: the
// control plane must not be upgraded before they are Bound again.
func (a *applier) waitClaimsBound(ctx context.Context, targets []apply.Target) {
	deadline := time.Now().Add(claimsBoundWait)
	said := false
	for {
		lost, err := a.w.LostClaims(ctx, targets)
		if err != nil {
			a.say("reading the claims' phases: %v\n", err)
			return
		}
		if len(lost) == 0 {
			return
		}
		if time.Now().After(deadline) {
			a.say("claims %s still show Lost after %s: kube-controller-manager binds them again at its next sync of each claim; check that they are Bound (kubectl get pvc) before upgrading the control plane\n",
				strings.Join(lost, ", "), claimsBoundWait)
			return
		}
		if !said {
			a.say("waiting for claims %s to be Bound again (kube-controller-manager showed them Lost while their PVs were replaced)\n", strings.Join(lost, ", "))
			said = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// applier is rewrite -apply's writer (package apply) with the command's
// options and its output.
type applier struct {
	client kubernetes.Interface
	tr     *translate.Translator
	logger klog.Logger
	out    io.Writer
	// opts are the writer's options: the flags' (bound to them), the Ceph
	// and vCenter access -adopt asks for, and the cluster entries.
	opts apply.Options
	// blocked are the backends the cluster has no (chosen) driver for.
	blocked cli.BlockedDrivers

	w *apply.Writer // built once by build, from opts
	// lease is the writer Lease once taken (nil before: w reviews but does
	// not write).
	lease *apply.Lease
	// steps is how many writes w took, as of its last run.
	steps int
	// refused counts the objects left as they were: those refused before
	// the writer saw them, then (after applyAll) every refusal of the run.
	refused apply.Result
	// results, with -o json, are each object's outcome (nil otherwise).
	results *objectResults
}

// build builds the applier's apply.Writer from its options, once they are
// complete; it writes only while the run holds the writer Lease.
func (a *applier) build() error {
	o := a.opts
	o.Lease = apply.HolderFunc(func() bool { return a.lease.Holding() })
	var err error
	var events apply.Events = textEvents{a.out}
	if a.results != nil {
		events = resultEvents{textEvents{a.out}, a.results}
	}
	a.w, err = apply.New(a.client, a.tr, a.logger, events, o)
	return err
}

// rewriteAll runs the writer over the target PVs.
func (a *applier) rewriteAll(ctx context.Context, targets []apply.Target) (apply.Result, error) {
	r, err := a.w.PVs(ctx, targets)
	a.steps = a.w.Writes()
	return r, err
}

// rewriteClasses runs the writer over the target StorageClasses.
func (a *applier) rewriteClasses(ctx context.Context, targets []apply.Target) (apply.Result, error) {
	r, err := a.w.Classes(ctx, targets)
	a.steps = a.w.Writes()
	return r, err
}

// say prints a line of the run's own (a count, a summary).
func (a *applier) say(format string, args ...any) { fmt.Fprintf(a.out, format, args...) }

// textEvents prints the writer's events as rewrite -apply's lines.
type textEvents struct{ w io.Writer }

func (e textEvents) Writing(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) Noted(obj rewrite.ObjectRef, what string) {
	fmt.Fprintf(e.w, "%s: %s\n", obj.Resource(), what)
}
func (e textEvents) KeptRetain(pv rewrite.ObjectRef, why string) {
	fmt.Fprintf(e.w, "%s: kept at %s\n", pv.Resource(), why)
}
func (e textEvents) Refused(obj rewrite.ObjectRef, r *rewrite.Refusal) {
	fmt.Fprintf(e.w, "%s: refused (%s), left as it was: %s\n", obj.Resource(), output.CodesText(r), output.RefusalText(r))
}

// applyOptions are the flags of rewrite -apply.
type applyOptions struct {
	// writer are the writer's options the flags bind to (-state-namespace,
	// -concurrency, -online; Direction from -undo and -adopt-csi).
	writer apply.Options
	// undo and adoptCSI are -undo and -adopt-csi, which make the writer's
	// Direction (directionOf).
	undo, adoptCSI bool
	qps32          float32
	burst          int
	// leaseWait is how long to wait for the writer Lease.
	leaseWait time.Duration
	// AdoptFlags: -adopt registers RBD images (and CephFS subvolumes) in
	// Ceph CSI's journal, reaching Ceph with its tools, and vSphere disks
	// as First Class Disks.
	cli.AdoptFlags
	// reviewFile is -review: the review this run must be; recorded are
	// the run's own options and targets, as a review records them.
	reviewFile      string
	recorded        []string
	recordedTargets []string
}
