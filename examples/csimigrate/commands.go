package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

func newStderrLogger(w io.Writer) klog.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, args) }, funcr.Options{Verbosity: 4})
}

// setup parses a command's flags, builds its translator and reads the input
// into the sink it makes; ok false means exit with code.
func setup(name, summary string, args []string, stdin io.Reader, stderr io.Writer, outputs string, sink func(*common, *translate.Translator) Sink) (c *common, code int, ok bool) {
	c = &common{}
	fs := newFlagSet(name, summary, stderr)
	c.register(fs, outputs)
	if code, ok := parse(fs, args); !ok {
		return nil, code, false
	}
	if !strings.Contains("|"+outputs+"|", "|"+c.output+"|") {
		fmt.Fprintf(stderr, "csimigrate %s: -o %q: want one of %s\n", name, c.output, outputs)
		return nil, exitUsage, false
	}
	tr, err := c.translator()
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return nil, exitUsage, false
	}
	if err := c.read(stdin, stderr, sink(c, tr)); err != nil {
		fmt.Fprintf(stderr, "csimigrate %s: %v\n", name, err)
		return nil, exitInput, false
	}
	return c, 0, true
}

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var pl *planner
	c, code, ok := setup("plan", "Reports, per volume, whether it can be migrated and why not; the Ceph CSI config map to create;\n"+
		"the Secrets to add or derive (names and fields, never values); the StorageClasses to recreate; hazards;\n"+
		"and the feature-gate steps for the cluster's version. Exits 1 when something blocks the migration.",
		args, stdin, stderr, "table|json|yaml", func(c *common, tr *translate.Translator) Sink {
			topo, _ := c.vsphereTopology()
			pl = newPlanner(tr, c.logger(stderr), nil, topo.ZoneKey, topo.RegionKey)
			return pl
		})
	if !ok {
		return code
	}
	steps, err := gateSteps(c.k8sVersion)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: -kubernetes-version: %v\n", err)
		return exitUsage
	}
	plan := pl.finish()
	plan.FeatureGates = steps
	for _, w := range c.cephWarnings {
		plan.Hazards = append(plan.Hazards, plugins.Finding{Code: "CephConfigEntry", Severity: plugins.SeverityWarning, Field: "-ceph-config " + c.cephConfig,
			Message: w, Remedy: "fix or remove the entry in Ceph CSI's config map; volumes of other clusterIDs are not affected"})
	}
	cm := cephConfigMap(plan.CephClusters, c.cephCSINamespace)
	switch c.output {
	case "json":
		err = writeJSON(stdout, struct {
			*Plan
			ConfigMap any `json:"cephCSIConfigMap,omitempty"`
		}{plan, cm})
	case "yaml":
		err = writeYAML(stdout, struct {
			*Plan
			ConfigMap any `json:"cephCSIConfigMap,omitempty"`
		}{plan, cm})
	default:
		err = writePlanTable(stdout, plan, cm)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: %v\n", err)
		return exitInput
	}
	if plan.Blocked {
		return exitBlocked
	}
	return exitOK
}

func cephConfigMap(clusters []ceph.ClusterEntry, ns string) *v1.ConfigMap {
	if len(clusters) == 0 {
		return nil
	}
	b, err := jsonString(clusters)
	if err != nil {
		return nil
	}
	return &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "ceph-csi-config", Namespace: ns},
		Data:       map[string]string{"config.json": b},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func writePlanTable(w io.Writer, p *Plan, cm *v1.ConfigMap) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSISTENT VOLUMES")
	fmt.Fprintln(tw, "NAME\tPLUGIN\tDRIVER\tMIGRATABLE\tCLAIM\tIN USE BY\tREASON")
	for _, v := range p.Volumes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Plugin, v.Driver, yesNo(v.Migratable), dash(v.Claim), dash(strings.Join(v.InUseBy, ",")), dash(v.Reason))
	}
	tw.Flush()
	if len(p.InlineVolumes) > 0 {
		fmt.Fprintln(tw, "\nINLINE VOLUMES")
		fmt.Fprintln(tw, "POD\tVOLUME\tPLUGIN\tMIGRATABLE\tREASON")
		for _, v := range p.InlineVolumes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Pod, v.Volume, v.Plugin, yesNo(v.Migratable), dash(v.Reason))
		}
		tw.Flush()
	}
	var hazards []string
	for _, f := range p.Hazards {
		hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", "cluster", f.Severity, f.Code, f.Message, f.Remedy))
	}
	for _, v := range p.Volumes {
		for _, f := range v.Findings {
			hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, f.Severity, f.Code, f.Message, f.Remedy))
		}
		if len(v.InUseBy) > 0 {
			hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, plugins.SeverityWarning, "VolumeInUse",
				"in use by "+strings.Join(v.InUseBy, ", "),
				"stop the pods (scale their workloads to zero) before the rewrite deletes and recreates the PV object; data is kept"))
		}
	}
	if len(hazards) > 0 {
		fmt.Fprintln(tw, "\nHAZARDS")
		fmt.Fprintln(tw, "OBJECT\tSEVERITY\tCODE\tMESSAGE\tREMEDY")
		for _, h := range hazards {
			fmt.Fprintln(tw, h)
		}
		tw.Flush()
	}
	if len(p.StorageClasses) > 0 {
		fmt.Fprintln(tw, "\nSTORAGE CLASSES (immutable: delete and recreate with the same name)")
		fmt.Fprintln(tw, "NAME\tFROM\tTO\tMIGRATABLE\tNOTE")
		for _, s := range p.StorageClasses {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.From, dash(s.To), yesNo(s.Migratable), dash(s.Reason))
		}
		tw.Flush()
	}
	if len(p.Secrets) > 0 {
		fmt.Fprintln(tw, "\nSECRETS (values are never shown)")
		fmt.Fprintln(tw, "SECRET\tACTION\tFIELDS\tFROM\tWHY")
		for _, s := range p.Secrets {
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\n", s.Namespace, s.Name, s.Action, strings.Join(s.Fields, ","), dash(s.From), s.Reason)
		}
		tw.Flush()
	}
	if cm != nil {
		fmt.Fprintln(w, "\nCEPH CSI CONFIG MAP (create before enabling migration)")
		if err := writeYAML(w, cm); err != nil {
			return err
		}
	}
	if len(p.FeatureGates) > 0 {
		fmt.Fprintln(w, "\nFEATURE GATES")
		for i, s := range p.FeatureGates {
			fmt.Fprintf(w, "%d. %s\n", i+1, s)
		}
	}
	if p.Blocked {
		fmt.Fprintln(w, "\nRESULT: BLOCKED: resolve the items marked NO before migrating")
	} else {
		fmt.Fprintln(w, "\nRESULT: ready to migrate")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runTranslate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var sink *translateSink
	_, code, ok := setup("translate", "Prints the CSI equivalents of the input's in-tree PVs and StorageClasses, and of pods' inline\n"+
		"volumes as PVs, as YAML or JSON, each as soon as it is read (memory does not grow with the input). Objects\n"+
		"that fail are reported on stderr with the field at fault (exit 1).",
		args, stdin, stderr, "yaml|json", func(c *common, tr *translate.Translator) Sink {
			sink = &translateSink{tr: tr, logger: c.logger(stderr), stderr: stderr, w: bufio.NewWriterSize(stdout, 1<<16), json: c.output == "json"}
			return sink
		})
	if !ok {
		return code
	}
	if err := sink.finish(); err != nil {
		fmt.Fprintf(stderr, "csimigrate translate: %v\n", err)
		return exitInput
	}
	if sink.failed {
		return exitBlocked
	}
	return exitOK
}

// translateSink translates each object as it is read and writes the result:
// YAML documents, or the items of one JSON List.
type translateSink struct {
	tr     *translate.Translator
	logger klog.Logger
	stderr io.Writer
	w      *bufio.Writer
	json   bool
	n      int
	failed bool
	err    error // the first write error
}

// Add implements Sink.
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
		s.emit(cleanPV(csi))
	case *storagev1.StorageClass:
		if !s.tr.IsMigratableIntreePluginByName(o.Provisioner) {
			return
		}
		csi, err := s.tr.TranslateInTreeStorageClassToCSI(s.logger, o.Provisioner, o)
		if err != nil {
			fmt.Fprintln(s.stderr, err)
			s.failed = true
			return
		}
		csi.ResourceVersion, csi.UID, csi.CreationTimestamp, csi.ManagedFields = "", "", metav1.Time{}, nil
		csi.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"}
		s.emit(csi)
	case *v1.Pod:
		for i := range o.Spec.Volumes {
			vol := &o.Spec.Volumes[i]
			if !s.tr.IsInlineMigratable(vol) {
				continue
			}
			pv, err := s.tr.TranslateInTreeInlineVolumeToCSI(s.logger, vol, o.Namespace)
			if err != nil {
				fmt.Fprintf(s.stderr, "Pod %s/%s volume %s: %v\n", o.Namespace, o.Name, vol.Name, err)
				s.failed = true
				continue
			}
			pv.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
			s.emit(pv)
		}
	}
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
		s.err = writeYAML(s.w, obj)
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

// cleanPV prepares a translated PV for creation: server-set fields cleared.
func cleanPV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}
	pv.ResourceVersion, pv.UID, pv.Generation = "", "", 0
	pv.CreationTimestamp = metav1.Time{}
	pv.DeletionTimestamp, pv.DeletionGracePeriodSeconds = nil, nil
	pv.ManagedFields = nil
	pv.Status = v1.PersistentVolumeStatus{}
	if pv.Spec.ClaimRef != nil {
		pv.Spec.ClaimRef.ResourceVersion = ""
	}
	return pv
}
