package translatecmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/internal/pvcopy"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// options are translate's flags.
type options struct {
	cli.Common
	// inlineCapacity is the size of PVs made for inline volumes.
	inlineCapacity resource.Quantity
	tr             *translate.Translator
}

// Summary is what csimigrate translate does, as its help and docs/flags.md say.
const Summary = "Prints the CSI equivalents of the input's in-tree PVs and StorageClasses, as YAML or JSON, each as\n" +
	"soon as it is read (memory does not grow with the input). For each in-tree inline volume of a pod or a\n" +
	"workload's pod template it prints what moves it to a PV: a CSI PV, a claim bound to it, and the object\n" +
	"using the claim instead (give the PV the volume's real size with -inline-capacity or by editing it).\n" +
	"Objects that fail are reported on stderr with the field at fault (exit 1)."

// Run runs csimigrate translate with args and returns its exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.RunCommand("translate", Summary, &options{inlineCapacity: rewrite.DefaultInlineCapacity}, args, stdin, stdout, stderr)
}

func (o *options) Register(fs *flag.FlagSet) {
	o.Common.Register(fs, "yaml", "json")
	fs.Func("inline-capacity", "size of the PVs and claims made for inline volumes, which carry none (default 1Gi)", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err == nil && q.Sign() <= 0 {
			err = errors.New("must be positive")
		}
		o.inlineCapacity = q
		return err
	})
}

func (o *options) Complete(fs *flag.FlagSet) error {
	if err := cli.NoArgs(fs.Args()); err != nil {
		return err
	}
	o.LiveByDefault()
	var err error
	o.tr, err = o.Translator()
	return err
}

func (o *options) Validate() error { return o.Common.Validate() }

func (o *options) Run(stdin io.Reader, stdout, stderr io.Writer) int {
	if err := o.SpoolStdin(stdin); err != nil {
		fmt.Fprintf(stderr, "csimigrate translate: %v\n", err)
		return cli.ExitInput
	}
	defer o.Cleanup()
	sink := &translateSink{capacity: o.inlineCapacity, tr: o.tr, logger: o.Logger(stderr), stderr: stderr, w: bufio.NewWriterSize(stdout, 1<<16), json: o.Output == "json"}
	if o.Sample {
		fmt.Fprintln(stderr, output.SampleNote)
		if !sink.json {
			fmt.Fprintf(sink.w, "# %s\n", output.SampleNote)
		}
	}
	if err := o.ReadInput(stdin, stderr, sink); err != nil {
		fmt.Fprintf(stderr, "csimigrate translate: %v\n", err)
		return cli.ExitInput
	}
	if err := sink.finish(); err != nil {
		fmt.Fprintf(stderr, "csimigrate translate: writing the output: %v\n", err)
		return cli.ExitOutput
	}
	if sink.failed {
		return cli.ExitBlocked
	}
	return cli.ExitOK
}

// translateSink translates each object as it is read and writes the result:
// YAML documents, or the items of one JSON List.
type translateSink struct {
	tr     *translate.Translator
	logger klog.Logger
	stderr io.Writer
	w      *bufio.Writer
	json   bool
	// capacity is the size of the PVs and claims made for inline volumes.
	capacity resource.Quantity
	n        int
	failed   bool
	err      error // the first write error
}

// Add implements input.Sink.
func (s *translateSink) Add(obj any) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		if !s.tr.IsPVMigratable(o) {
			return
		}
		csi, err := s.tr.TranslateInTreePVToCSI(s.logger, o)
		if err != nil {
			fmt.Fprintf(s.stderr, "PersistentVolume %s: %v\n", o.Name, err)
			s.failed = true
			return
		}
		// What plan and rewrite decide for the PV, decided the same way:
		// a blocker refuses it, a reclaim policy the driver would not honour
		// is kept at Retain, a change in access modes is named.
		blocked := false
		for _, f := range s.tr.CheckPV(o) {
			if f.Severity == plugin.SeverityBlocker {
				fmt.Fprintf(s.stderr, "PersistentVolume %s: %s: %s; %s\n", o.Name, f.Code, f.Message, f.Remedy)
				blocked = true
			} else if why, ok := rewrite.KeepsRetain(f.Code); ok && csi.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
				fmt.Fprintf(s.stderr, "PersistentVolume %s: reclaim policy Retain, not %s: %s\n", o.Name, csi.Spec.PersistentVolumeReclaimPolicy, why)
				csi.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
			}
		}
		if blocked {
			s.failed = true
			return
		}
		rewrite.KeepServedModes(o, csi)
		if change := rewrite.AccessModeChange(o, csi); change != "" {
			fmt.Fprintf(s.stderr, "PersistentVolume %s: %s\n", o.Name, change)
		}
		s.emit(pvcopy.ClearServerFields(csi))
	case *storagev1.StorageClass:
		if !rewrite.TranslatableClass(s.tr, o) {
			return
		}
		in := rewrite.InTreeClass(o)
		csi, err := s.tr.TranslateInTreeStorageClassToCSI(s.logger, in.Provisioner, in)
		if err != nil {
			fmt.Fprintln(s.stderr, err)
			s.failed = true
			return
		}
		csi.ResourceVersion, csi.UID, csi.CreationTimestamp, csi.ManagedFields = "", "", metav1.Time{}, nil
		output.ClearSelfLink(&csi.ObjectMeta)
		csi.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
		s.emit(csi)
	default:
		if w, ok := rewrite.WorkloadOf(obj); ok {
			s.addWorkload(w)
		}
	}
}

// addWorkload prints, for each in-tree inline volume of a pod or a
// workload's pod template, what moves it to a PV: the CSI PV (named for the
// workload and volume, reclaim policy Retain, pre-bound), the claim bound
// to it, and then the object itself with each such volume replaced by its
// claim. An object a controller owns is not printed (its owner's template
// is what to change); stderr names the owner.
func (s *translateSink) addWorkload(w *rewrite.Workload) {
	var idx []int
	for i := range w.Spec.Volumes {
		if isInTreeInline(&w.Spec.Volumes[i]) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	if w.Owner != "" {
		fmt.Fprintf(s.stderr, "%s: owned by %s; translate the manifest of %s (its pod template has the inline volumes)\n", w.ID(), w.Owner, w.Owner)
		return
	}
	claims := map[int]string{}
	for _, i := range idx {
		vol := &w.Spec.Volumes[i]
		name := rewrite.InlineClaimName(w, vol.Name)
		what := fmt.Sprintf("%s volume %s", w.ID(), vol.Name)
		form := rewrite.NewInlineForm(s.tr, s.logger, w, vol, name, s.capacity, plan.InlineRemedy)
		if form.InTree == nil {
			continue
		}
		csi, err := form.CSI, form.Err
		if err == nil && len(form.Blockers) > 0 {
			var blockers []string
			for _, f := range form.Blockers {
				blockers = append(blockers, f.Code+": "+f.Message+" ("+f.Remedy+")")
			}
			err = errors.New(strings.Join(blockers, "; "))
		}
		if err != nil {
			fmt.Fprintf(s.stderr, "%s: %v\n", what, err)
			s.failed = true
			continue
		}
		pvcopy.ClearServerFields(csi)
		csi.Annotations = setAnn(csi.Annotations, annInlineOf, w.ID()+" volume "+vol.Name)
		s.emit(csi)
		s.emit(rewrite.InlineClaim(csi, w.Namespace))
		claims[i] = name
	}
	if len(claims) == 0 {
		return
	}
	s.emit(withClaims(w, claims))
}

// annInlineOf names, on a PV csimigrate translate made for an inline
// volume, the workload and volume it replaces.
const annInlineOf = "csimigrate.io/inline-volume-of"

func setAnn(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// withClaims returns a copy of the workload's object, cleared of what the
// server sets, whose pod spec uses the claims instead of the inline volumes
// at those indexes.
func withClaims(w *rewrite.Workload, claims map[int]string) any {
	nw, _ := rewrite.WorkloadOf(w.Obj.DeepCopyObject())
	for i, name := range claims {
		vol := &nw.Spec.Volumes[i]
		readOnly := vol.RBD != nil && vol.RBD.ReadOnly || vol.CephFS != nil && vol.CephFS.ReadOnly
		vol.VolumeSource = v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: readOnly}}
	}
	forCreate(nw)
	return nw.Obj
}

func (s *translateSink) emit(obj any) {
	if s.err != nil {
		return
	}
	if s.json {
		b, err := json.MarshalIndent(obj, "    ", "  ")
		if err != nil {
			s.err = err
			return
		}
		if s.n == 0 {
			s.w.WriteString("{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n    ")
		} else {
			s.w.WriteString(",\n    ")
		}
		_, s.err = s.w.Write(b)
	} else {
		s.err = output.WriteYAML(s.w, obj)
	}
	s.n++
}

// finish ends the JSON List and flushes.
func (s *translateSink) finish() error {
	if s.err == nil && s.json {
		if s.n == 0 {
			s.w.WriteString("{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [")
		} else {
			s.w.WriteString("\n  ")
		}
		_, s.err = s.w.WriteString("]\n}\n")
	}
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}

// New is the translate command's options, for its flags (completion, the
// flag reference).
func New() cli.Command { return &options{} }
