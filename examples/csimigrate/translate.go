package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/translate"
)

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
		fmt.Fprintf(stderr, "csimigrate translate: writing the output: %v\n", err)
		return exitOutput
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
