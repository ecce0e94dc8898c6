package rewritecmd

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/internal/shell"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// options are rewrite's flags; names are the PVs and
// storageclass/NAMEs after them (with -apply).
type options struct {
	cli.Common
	applyOptions
	doApply bool
	qps     float64
	names   []string
	// targets are names as read (parseTarget).
	targets []target
	// applyFlags are the flags only -apply takes (as registered);
	// applyOnly those of them given.
	applyFlags map[string]bool
	applyOnly  []string
	tr         *translate.Translator
}

// Summary is what csimigrate rewrite does, as its help and docs/flags.md say.
const Summary = "Replaces each in-tree PV by a CSI PV of the same name without losing its claim or its data: set\n" +
	"Retain, save the replacement, delete the old PV object, create the CSI PV with the same name, claimRef and\n" +
	"capacity, restore the reclaim policy. By default prints the steps for review (-o script: a bash script that\n" +
	"reads the cluster before every step; -o yaml: the CSI PVs). With -apply it carries them out against the\n" +
	"cluster of -kubeconfig, on the PVs of -f (the reviewed input, each only while its live uid is the reviewed\n" +
	"one) or, without -f, on every in-tree PV of the cluster; targets after the flags narrow that further.\n" +
	"Every check runs before the first write to a PV; a PV that fails one is reported and left as it was. Every\n" +
	"run derives its state from the cluster (the PVs and a ConfigMap per PV in -state-namespace), so an\n" +
	"interrupted run is resumed by running it again. The in-tree StorageClasses in scope are replaced too,\n" +
	"after the PVs (delete, then create the translated class; name one as storageclass/NAME). -dry-run sends\n" +
	"every step with the API server's server-side dry run instead. -undo takes the same steps the other way:\n" +
	"each CSI PV and StorageClass csimigrate's rewrite created is replaced by the in-tree one it replaced."

// Run runs csimigrate rewrite with args and returns its exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.RunCommand("rewrite", Summary, &options{}, args, stdin, stdout, stderr)
}

func (o *options) Register(fs *flag.FlagSet) {
	o.Common.Register(fs, "script", "yaml", "json")
	fs.BoolVar(&o.doApply, "apply", false, "carry out the rewrite against the cluster of -kubeconfig")
	cli.RegisterSourceChanged(fs, &o.writer.SourceChanged)
	// -online changes the verdict of a PV in use: the review takes it as
	// -apply does, so that it shows what that run does.
	fs.BoolVar(&o.writer.Online, "online", false, cli.OnlineUsage+" (the review's verdicts as -apply -online gives them)")
	fs.BoolVar(&o.undo, "undo", false, "replace the CSI PVs and StorageClasses csimigrate's rewrite created by the in-tree ones they replaced (the review, or with -apply the undo itself)")
	// The flags only -apply takes: what is registered here.
	o.applyFlags = registered(fs, func() {
		fs.BoolVar(&o.writer.DryRun, "dry-run", false, "with -apply: use the API server's server-side dry run")
		fs.StringVar(&o.writer.StateNamespace, "state-namespace", apply.DefaultStateNamespace, "with -apply: namespace of the ConfigMaps that hold replacements between steps")
		fs.IntVar(&o.writer.Concurrency, "concurrency", 8, "with -apply: how many PVs to rewrite at once (each PV's steps stay in order)")
		fs.Float64Var(&o.qps, "qps", 100, "with -apply: the client's request rate limit towards the API server, per second")
		fs.IntVar(&o.burst, "burst", 200, "with -apply: the client's burst above -qps")
		fs.DurationVar(&o.leaseWait, "lease-wait", 30*time.Second, "with -apply: how long to wait while another csimigrate writer holds the Lease "+apply.LeaseName+" in -state-namespace")
		fs.StringVar(&o.reviewFile, "review", "", "with -apply: the review this run must be (the output of rewrite with the same options and targets): the run refuses before its first write if the options, the targets or the objects differ, or an object changed since (its uid or resourceVersion), and names the difference")
		fs.BoolVar(&o.adoptCSI, "adopt-csi", false, "with -apply -adopt: adopt the CSI PVs of rbd.csi.ceph.com that carry a migration handle (an earlier rewrite's, or Kubernetes' own migration's), and the static CSI PVs of cephfs.csi.ceph.com (with -cephfs-secret), instead of rewriting in-tree PVs; with -undo, give such adopted PVs their migration handle or static form back")
	})
	o.AdoptFlags.Register(fs, "with -apply: ", "; with -undo, undo such PVs too (their entries removed)")
}

// registered runs register and names the flags it added to fs.
func registered(fs *flag.FlagSet, register func()) map[string]bool {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	register()
	added := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			added[f.Name] = true
		}
	})
	return added
}

func (o *options) Complete(fs *flag.FlagSet) error {
	o.names = fs.Args()
	if !o.doApply {
		// The review reads what -apply reads: the live cluster without -f.
		o.LiveByDefault()
	}
	fs.Visit(func(f *flag.Flag) {
		if o.applyFlags[f.Name] {
			o.applyOnly = append(o.applyOnly, "-"+f.Name)
		}
	})
	// What a review records, and an apply of it compares.
	o.recorded, o.recordedTargets = recordedArgs(fs, o.applyFlags), o.names
	if err := o.AdoptFlags.Complete(fs); err != nil {
		return err
	}
	o.writer.Direction = output.DirectionOf(o.undo, o.Adopt && o.adoptCSI)
	o.qps32 = float32(o.qps)
	var err error
	o.tr, err = o.Translator()
	return err
}

func (o *options) Validate() error {
	if err := o.Common.Validate(); err != nil {
		return err
	}
	var err error
	if o.targets, err = parseTargets(o.names); err != nil {
		return err
	}
	switch {
	case !o.doApply && len(o.applyOnly) > 0:
		// The review of an adoption takes -adopt and the Ceph flags: its
		// Ceph-side writes are in the script.
		return fmt.Errorf("%s only with -apply (without it, rewrite prints the steps for review)", strings.Join(o.applyOnly, ", "))
	case !o.doApply && o.Output == "json":
		return errors.New("-o json only with -apply (a result per object); a review prints -o script or -o yaml")
	case o.adoptCSI && !o.Adopt:
		return o.AdoptFlags.Validate("-adopt-csi")
	case !o.Adopt && o.AdoptFlags.Validate() != nil:
		return o.AdoptFlags.Validate()
	case !o.doApply && !o.Adopt && o.VSphere.Wanted():
		return errors.New("-vsphere-conf and -vsphere-secret in a review only with -adopt (the adoption's decisions read vCenter)")
	case !o.doApply && o.Adopt && !o.Live:
		return errors.New("-adopt in a review needs -live: the adoption's checks read the cluster and Ceph, as -apply does")
	case o.doApply && o.Live:
		return errors.New("-apply reads the live cluster itself; give -f for reviewed input, or neither")
	case o.doApply && (o.writer.Concurrency < 1 || o.qps <= 0 || o.burst < 1):
		return fmt.Errorf("-concurrency %d, -qps %g, -burst %d: want each at least 1", o.writer.Concurrency, o.qps, o.burst)
	}
	return nil
}

func (o *options) Run(stdin io.Reader, stdout, stderr io.Writer) int {
	if !o.doApply {
		return runReview(&o.Common, o.tr, o.applyOptions, o.targets, stdin, stdout, stderr)
	}
	return runApply(&o.Common, o.tr, o.applyOptions, o.names, stdin, stdout, stderr)
}

// runReview prints the steps of the rewrite (or its undo) of the input for
// review. The input is read twice (three times when a class's secret
// template needs claims): first the StorageClasses, then the PVs, each
// written as it is read, so memory does not grow with the number of PVs.
// Standard input is kept in a temporary file for that.
func runReview(c *cli.Common, tr *translate.Translator, o applyOptions, targets []target, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := c.SpoolStdin(stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitInput
	}
	defer c.Cleanup()
	rv := &review{tr: tr, dir: o.writer.Direction, script: c.Output == "script", stderr: stderr, sourceChanged: o.writer.SourceChanged, scope: c.Scope(), targets: targets, record: &reviewRecord{Args: o.recorded, Targets: o.recordedTargets},
		in: &rewriteInputs{classes: map[string]*storagev1.StorageClass{}}, w: bufio.NewWriterSize(stdout, 1<<16)}
	if err := rv.readInputs(c, stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitInput
	}
	if !o.writer.Direction.IsUndo() {
		// The plan's verdict of each in-tree object, as -apply's checks
		// give it on the same cluster: a refused object's steps are not
		// in the review.
		var err error
		if rv.planVerdicts, err = reviewVerdicts(c, tr, o.writer, stdin); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitInput
		}
	}
	// The PVs and classes name the drivers the input's CSIDrivers have.
	var err error
	if rv.tr, _, err = cli.DriversFor(tr, rv.in.drivers, c.Drivers, stderr); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitUsage
	}
	if o.Adopt {
		// The adoption's decisions are the writer's own, on the live
		// cluster and Ceph: its checks, without its writes.
		client, err := cli.ClientFor(c.Kubeconfig, c.Context, 50, 100)
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitUsage
		}
		cfg, err := c.ClusterConfig()
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitUsage
		}
		rv.ceph = o.CephFlags.Tools
		wo := apply.Options{Direction: o.writer.Direction, Ceph: o.CephFlags.Tools, CephConfig: cfg, CephFSSecret: o.CephFSSecret, SourceChanged: o.writer.SourceChanged, Online: o.writer.Online}
		if o.VSphere.Wanted() {
			// A vSphere adoption's decisions read vCenter, as -apply's.
			vc, _, err := o.VSphere.Open(context.Background(), client, c.Logger(stderr))
			if err != nil {
				fmt.Fprintf(stderr, "csimigrate rewrite: vCenter: %v\n", err)
				return cli.ExitInput
			}
			defer vc.Close()
			wo.VSphere = vc
		}
		// What it decides (adopted or why not) goes to stderr, beside the
		// script.
		if rv.writer, err = apply.New(client, rv.tr, c.Logger(stderr), textEvents{stderr}, wo); err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitUsage
		}
	} else if c.Live && o.writer.Direction.IsUndo() {
		// The undo's verdicts are the writer's own on the live cluster:
		// its release (no undo to a removed plugin), claims and pods.
		client, err := cli.ClientFor(c.Kubeconfig, c.Context, 50, 100)
		if err == nil {
			rv.writer, err = apply.New(client, rv.tr, c.Logger(stderr), textEvents{stderr}, apply.Options{Direction: o.writer.Direction, Online: o.writer.Online, SourceChanged: o.writer.SourceChanged})
		}
		if err != nil {
			fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
			return cli.ExitUsage
		}
	}
	if rv.script {
		// A failed write is reported with the rest of the output's.
		rv.werr = writeScriptHeader(rv.w, rv.dir)
		if rv.werr == nil && rv.writer != nil {
			rv.werr = writeScriptJournal(rv.w, rv.ceph)
		}
	}
	if c.Sample && rv.werr == nil {
		// Said first (after the script's shebang and header) and on stderr.
		_, rv.werr = fmt.Fprintf(rv.w, "# %s\n", output.SampleNote)
		fmt.Fprintln(stderr, output.SampleNote)
	}
	if err := c.ReadInput(stdin, io.Discard, input.SinkFunc(rv.pv)); err != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: %v\n", err)
		return cli.ExitInput
	}
	// The StorageClasses after the PVs, as -apply replaces them.
	for _, name := range rv.in.order {
		rv.class(rv.in.classes[name])
	}
	if rv.script {
		writeScriptFooter(rv.w, rv.dir, rv.pvs, rv.classes)
	}
	if rv.refusedObjects > 0 && rv.werr == nil {
		// The summary of what -apply would refuse, in the output and on
		// stderr, by code.
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(rv.refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, rv.refused[c]))
		}
		line := fmt.Sprintf("%d objects refused and left as they are (%s): rewrite -apply refuses them too; resolve them (csimigrate plan says how), then review again", rv.refusedObjects, strings.Join(parts, ", "))
		_, rv.werr = fmt.Fprintf(rv.w, "\n# %s\n", line)
		fmt.Fprintln(stderr, line)
	}
	if rv.werr == nil {
		// The record, last: an apply given this review checks it.
		_, rv.werr = io.WriteString(rv.w, "\n"+rv.record.line())
	}
	if rv.werr == nil {
		rv.werr = rv.w.Flush()
	}
	if rv.werr != nil {
		fmt.Fprintf(stderr, "csimigrate rewrite: writing the output: %v\n", rv.werr)
		return cli.ExitOutput
	}
	if rv.failed {
		return cli.ExitBlocked
	}
	return cli.ExitOK
}

// review writes the steps of the rewrite or undo of each object read.
type review struct {
	tr     *translate.Translator
	dir    apply.Direction
	script bool // -o script, else -o yaml
	in     *rewriteInputs
	w      *bufio.Writer
	stderr io.Writer
	// writer, for a review of an adoption (-adopt), makes the decisions
	// (reading the live cluster and Ceph with ceph's tools).
	writer *apply.Writer
	ceph   cephtool.Tools
	// sourceChanged are -source-changed's objects (rewrite.KeptRefusal).
	sourceChanged rewrite.ChangedSources
	// planVerdicts are the plan's refusals of in-tree objects (a rewrite's
	// review).
	planVerdicts planVerdicts
	// refused counts the objects refused, by code.
	refused map[string]int
	// scope is -n's namespace ("" for every one); targets the objects
	// named (none: every one in scope).
	scope   string
	targets []target
	// record is what the review records of itself (its last line).
	record *reviewRecord
	// What was written (and refused), whether an object failed, and the
	// first write error.
	pvs, classes, refusedObjects int
	failed                       bool
	werr                         error
}

// readInputs reads the StorageClasses, and the claims when a class's secret
// template needs them.
func (rv *review) readInputs(c *cli.Common, stdin io.Reader) error {
	if err := c.ReadInput(stdin, rv.stderr, classSink{rv.in}); err != nil {
		return err
	}
	if !rv.in.needClaims(rv.tr) {
		return nil
	}
	rv.in.claims = map[types.NamespacedName]*v1.PersistentVolumeClaim{}
	return c.ReadInput(stdin, io.Discard, input.SinkFunc(rv.in.addClaim))
}

// pv writes the steps for one PV the direction replaces.
func (rv *review) pv(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok || rv.werr != nil {
		return
	}
	if !rv.dir.ReplacesPV(rv.tr, pv) || !inNamespace(pv, rv.scope) || !anySelectsPV(rv.targets, pv.Name, claimOf(pv)) {
		return
	}
	refused := rv.refusedObjects
	defer func() { rv.record.add(rewrite.PVRef(pv.Name), pv, rv.refusedObjects > refused) }()
	if v, ok := rv.planVerdicts.pvs[pv.Name]; ok {
		rv.refuse(rewrite.PVRef(pv.Name), v)
		return
	}
	if rv.kept("PersistentVolume", pv) {
		return
	}
	var p rewrite.PV
	var j *adopt.Journal
	var err error
	switch {
	case rv.writer != nil:
		p, j, err = rv.reviewed(pv)
	case rv.dir.IsUndo():
		p, err = undoReview(rv.tr, pv)
	default:
		p, err = rv.in.replacement(rv.tr, pv)
	}
	if err != nil {
		var r *rewrite.Refusal
		if errors.As(err, &r) {
			rv.refuse(rewrite.PVRef(pv.Name), planVerdict{codes: codeStrings(r), text: output.RefusalText(r)})
			return
		}
		fmt.Fprintf(rv.stderr, "PersistentVolume %s: %s\n", pv.Name, output.CommandError(err))
		rv.failed = true
		return
	}
	rv.pvs++
	if rv.script {
		if j != nil {
			rv.werr = writeScriptJournalVars(rv.w, rv.ceph, p.CSI, *j, rv.dir.IsUndo())
		}
		if rv.werr == nil {
			rv.werr = writeScriptPV(rv.w, rv.dir, p)
		}
		if j != nil && rv.werr == nil {
			_, rv.werr = io.WriteString(rv.w, "J_POOL=\n")
		}
	} else {
		rv.werr = output.WriteYAML(rv.w, p.CSI)
	}
}

// reviewed is what the writer would make of pv (its checks, on the live
// cluster and Ceph), and the journal entry it writes or removes.
func (rv *review) reviewed(pv *v1.PersistentVolume) (rewrite.PV, *adopt.Journal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := rv.writer.Review(ctx, pv)
	if err != nil {
		return rewrite.PV{}, nil, err
	}
	return r.PV, r.Journal, nil
}

// kept reports (and says) whether the writer would leave the kind's object
// o as it is for the reconciler that keeps it (rewrite.KeptRefusal).
func (rv *review) kept(kind string, o metav1.Object) bool {
	err := rewrite.KeptRefusal(kind, o, rv.sourceChanged.Has(kind, o.GetNamespace(), o.GetName()))
	var r *rewrite.Refusal
	if !errors.As(err, &r) {
		return false
	}
	ref := rewrite.PVRef(o.GetName())
	if kind == "StorageClass" {
		ref = rewrite.ClassRef(o.GetName())
	}
	rv.refuse(ref, planVerdict{codes: codeStrings(r), text: output.RefusalText(r)})
	return true
}

// refuse writes, where the object's steps would be, that the run leaves
// it as it is and why (a comment, in either output form), says so on
// stderr, and counts it: the review then exits non-zero.
func (rv *review) refuse(obj rewrite.ObjectRef, v planVerdict) {
	codes := strings.Join(v.codes, ", ")
	line := fmt.Sprintf("%s: refused (%s), left as it is: %s", obj.Resource(), codes, v.text)
	fmt.Fprintln(rv.stderr, line)
	if rv.werr == nil {
		_, rv.werr = fmt.Fprintf(rv.w, "\n# %s\n", strings.ReplaceAll(line, "\n", "\n# "))
	}
	if rv.refused == nil {
		rv.refused = map[string]int{}
	}
	for _, c := range v.codes {
		rv.refused[c]++
	}
	rv.refusedObjects++
	rv.failed = true
}

// codeStrings are a refusal's codes as strings.
func codeStrings(r *rewrite.Refusal) []string {
	var out []string
	for _, c := range r.Codes() {
		out = append(out, string(c))
	}
	return out
}

// class writes the steps for one StorageClass the direction replaces.
func (rv *review) class(sc *storagev1.StorageClass) {
	if rv.werr != nil || !rv.dir.ReplacesClass(rv.tr, sc) || rv.scope != "" || !anySelectsClass(rv.targets, sc.Name) {
		// (A class serves every namespace: not in -n's scope.)
		return
	}
	refused := rv.refusedObjects
	defer func() { rv.record.add(rewrite.ClassRef(sc.Name), sc, rv.refusedObjects > refused) }()
	if v, ok := rv.planVerdicts.classes[sc.Name]; ok {
		rv.refuse(rewrite.ClassRef(sc.Name), v)
		return
	}
	if rv.kept("StorageClass", sc) {
		return
	}
	var r *storagev1.StorageClass
	var err error
	switch {
	case rv.writer != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err = rv.writer.ReviewClass(ctx, sc)
		cancel()
	case rv.dir.IsUndo():
		r, err = rewrite.ClassUndoReplacement(sc)
	default:
		r, err = rewrite.ClassReplacement(rv.tr, cli.Klog0(), sc)
	}
	if err != nil {
		if r := (*rewrite.Refusal)(nil); errors.As(err, &r) {
			rv.refuse(rewrite.ClassRef(sc.Name), planVerdict{codes: codeStrings(r), text: output.RefusalText(r)})
			return
		}
		fmt.Fprintf(rv.stderr, "StorageClass %s: %v\n", sc.Name, err)
		rv.failed = true
		return
	}
	rv.classes++
	if rv.script {
		rv.werr = writeScriptClass(rv.w, sc, r)
	} else {
		rv.werr = output.WriteYAML(rv.w, r)
	}
}

// undoReview is the undo of a CSI PV csimigrate created, for review: its
// in-tree replacement (the engine's) in the field CSI. A PV adopted into
// Ceph CSI's journal is reviewed with Ceph access, as its undo removes the
// entry.
func undoReview(tr *translate.Translator, pv *v1.PersistentVolume) (rewrite.PV, error) {
	if j, ok, err := adopt.JournalOf(pv); err != nil {
		return rewrite.PV{}, err
	} else if ok {
		return rewrite.PV{}, fmt.Errorf("its volume was adopted into Ceph CSI's journal (%s in pool %s), and the undo removes that entry: review it with -live -adopt and the Ceph access flags", j.Object(), j.Pool)
	}
	in, err := rewrite.UndoReplacement(tr, pv)
	if err != nil {
		return rewrite.PV{}, err
	}
	policy := v1.PersistentVolumeReclaimPolicy(in.Annotations[rewrite.AnnReclaimPolicy])
	return rewrite.PV{Name: pv.Name, Driver: plugin.InTreeNameOfPV(in), OriginalPolicy: pv.Spec.PersistentVolumeReclaimPolicy, RestorePolicy: policy, CSI: in}, nil
}

// The review script's text (review.sh.tmpl: its start and the ordered,
// idempotent steps of replacing one PV and one StorageClass, either way;
// review_journal.sh.tmpl: Ceph CSI's journal for rewrite -adopt). Every
// step checks the cluster first, so the script can be run again after an
// interruption at any point and converges to the same end state. The
// finalizers it lets through are the engine's (rewrite.PVProtection and
// rewrite.DeletionProtection).
//
//go:embed review.sh.tmpl review_journal.sh.tmpl
var reviewFiles embed.FS

var reviewScript = template.Must(template.ParseFS(reviewFiles, "*.sh.tmpl"))

// writeScriptJournal writes the journal functions, with the rados command
// of the review's Ceph access.
func writeScriptJournal(w io.Writer, tools cephtool.Tools) error {
	return reviewScript.ExecuteTemplate(w, "review_journal.sh.tmpl", struct{ Rados string }{shellJoin(tools.Command("rados"))})
}

// shellJoin quotes each word for the shell and joins them.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shell.Quote(w)
	}
	return strings.Join(q, " ")
}

// writeScriptJournalVars writes the J_ variables of one adopted PV's
// journal entry (repl is its replacement: the adopted PV, or for an undo the
// in-tree one).
func writeScriptJournalVars(w io.Writer, tools cephtool.Tools, repl *v1.PersistentVolume, j adopt.Journal, undo bool) error {
	var keys []string
	vals := j.Keys()
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		keys = append(keys, shell.Quote(k+"="+vals[k]))
	}
	var verify []string
	want := ""
	switch {
	case undo:
		verify = []string{"true"}
	case j.ImageID != "":
		verify = tools.Command("rbd", "info", "--format", "json", "--pool", j.Pool, j.ImageName)
		want = `"id":"` + j.ImageID + `"`
	default:
		attrs := repl.Spec.CSI.VolumeAttributes
		group, _, _ := adopt.SubvolumeOf(attrs["subvolumePath"])
		verify = tools.Command("ceph", "fs", "subvolume", "getpath", attrs["fsName"], j.ImageName, "--group_name", group)
		want = attrs["subvolumePath"]
	}
	undoFlag := ""
	if undo {
		undoFlag = "1"
	}
	_, err := fmt.Fprintf(w, "\n# Ceph CSI's journal entry: %s (pool %s, namespace %q), named by %s %s\nJ_POOL=%s J_NS=%s J_OBJ=%s J_DIR=%s J_DIRKEY=%s J_UUID=%s J_UNDO=%s\nJ_KEYS=(%s)\nJ_VERIFY=(%s) J_WANT=%s",
		j.Object(), j.Pool, j.Namespace, j.Directory(), j.DirectoryKey(),
		shell.Quote(j.Pool), shell.Quote(j.Namespace), shell.Quote(j.Object()), shell.Quote(j.Directory()), shell.Quote(j.DirectoryKey()), shell.Quote(j.UUID), undoFlag,
		strings.Join(keys, " "), shellJoin(verify), shell.Quote(want))
	return err
}

// writeScriptHeader writes the script up to its first PV.
func writeScriptHeader(w io.Writer, dir apply.Direction) error {
	what, article := "rewrite", "a CSI"
	if dir.IsUndo() {
		what, article = "rewrite -undo", "the in-tree"
	}
	return reviewScript.ExecuteTemplate(w, "review.sh.tmpl", struct {
		What, Article, PVProtection string
		DeletionProtection          []string
	}{what, article, rewrite.PVProtection, rewrite.DeletionProtection})
}

// writeScriptPV writes the call that replaces one PV.
func writeScriptPV(w io.Writer, dir apply.Direction, p rewrite.PV) error {
	b, err := yaml.Marshal(p.CSI)
	if err != nil {
		return err
	}
	driver := p.Driver
	if dir.IsUndo() {
		driver = "" // an in-tree PV has no .spec.csi.driver
	}
	fmt.Fprintf(w, "\n# %s -> %s (reclaim policy after the %s: %s)", p.Name, p.Driver, strings.TrimPrefix(strings.TrimPrefix(dir.What(), "an "), "a "), p.RestorePolicy)
	if p.Hazard != "" {
		fmt.Fprintf(w, "; %s", p.Hazard)
	}
	_, err = fmt.Fprintf(w, "\nrewrite_pv %s %s %s %s\n", shell.Quote(p.Name), shell.Quote(driver), shell.Quote(string(p.RestorePolicy)), shell.Quote(string(b)))
	return err
}

// writeScriptClass writes the call that replaces one in-tree class.
func writeScriptClass(w io.Writer, inTree, r *storagev1.StorageClass) error {
	b, err := yaml.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n# storageclass/%s: %s -> %s (deleted and created again with the same name; its PVs are not affected)", inTree.Name, inTree.Provisioner, r.Provisioner)
	_, err = fmt.Fprintf(w, "\nrewrite_sc %s %s %s %s %s\n", shell.Quote(inTree.Name), shell.Quote(inTree.Provisioner), shell.Quote(r.Provisioner), shell.Quote(string(inTree.UID)), shell.Quote(string(b)))
	return err
}

// writeScriptFooter ends the script.
func writeScriptFooter(w io.Writer, dir apply.Direction, n, classes int) {
	verb := "rewrote"
	if dir.IsUndo() {
		verb = "undid the rewrite of"
	}
	fmt.Fprintf(w, "\necho \"%s %d PersistentVolumes and %d StorageClasses\"\n", verb, n, classes)
}

// rewriteInputs are the objects a PV's replacement needs besides the PV:
// the StorageClasses, and the claims when a class's provisioner secret
// template refers to the claim.
type rewriteInputs struct {
	drivers cli.DriverSet
	classes map[string]*storagev1.StorageClass
	order   []string                                           // class names in input order
	claims  map[types.NamespacedName]*v1.PersistentVolumeClaim // nil: not needed
}

func (in *rewriteInputs) addClass(obj any) {
	in.drivers.Add(obj)
	if sc, ok := obj.(*storagev1.StorageClass); ok {
		in.classes[sc.Name] = sc
		in.order = append(in.order, sc.Name)
	}
}

// classSink hands what the review reads to addClass; a live cluster's
// list of CSIDrivers is taken as read even when it has none (no hint to
// give the CSIDrivers in the input).
type classSink struct{ in *rewriteInputs }

// Add implements input.Sink.
func (s classSink) Add(obj any) { s.in.addClass(obj) }

// Listed takes the cluster's CSIDrivers as read.
func (s classSink) Listed(resource string) { s.in.drivers.Listed(resource) }

// addClaim keeps what a secret template can read of a claim.
func (in *rewriteInputs) addClaim(obj any) {
	if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok {
		in.claims[types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Name}] = &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: pvc.Name, Namespace: pvc.Namespace, Annotations: pvc.Annotations}}
	}
}

// needClaims reports whether a class's provisioner secret refers to the
// claim (in-tree classes never do: their admin secret has a fixed name).
func (in *rewriteInputs) needClaims(tr *translate.Translator) bool {
	for _, sc := range in.classes {
		if rewrite.TranslatableClass(tr, sc) {
			continue
		}
		for _, v := range sc.Parameters {
			if strings.Contains(v, "${pvc.") {
				return true
			}
		}
	}
	return false
}

func (in *rewriteInputs) replacement(tr *translate.Translator, pv *v1.PersistentVolume) (rewrite.PV, error) {
	var pvc *v1.PersistentVolumeClaim
	if c := pv.Spec.ClaimRef; c != nil && in.claims != nil {
		pvc = in.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}]
	}
	return rewrite.Rewrite(tr, cli.Klog0(), pv, in.classes[pv.Spec.StorageClassName], pvc)
}

// inNamespace reports whether pv is in -n's scope ns: bound to a claim of
// that namespace ("": every PV).
func inNamespace(pv *v1.PersistentVolume, ns string) bool {
	return ns == "" || pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns
}

// New is the rewrite command's options, for its flags (completion, the
// flag reference).
func New() cli.Command { return &options{} }

// ApplyFlags are the flags only rewrite -apply takes (a review takes the
// others), by name, as its flag set registers them.
func ApplyFlags() map[string]bool {
	o := &options{}
	o.Register(cli.NewFlagSet("rewrite", Summary, io.Discard))
	return o.applyFlags
}
