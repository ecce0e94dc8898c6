package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"
)

// Inventory holds the objects read from the input.
type Inventory struct {
	PVs            []*v1.PersistentVolume
	PVCs           []*v1.PersistentVolumeClaim
	StorageClasses []*storagev1.StorageClass
	Pods           []*v1.Pod
	Secrets        []*v1.Secret
	// Skipped counts objects of kinds the command does not use.
	Skipped int
}

// InputError names the document that could not be read.
type InputError struct {
	Source string
	Doc    int
	Err    error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s: document %d: %v", e.Source, e.Doc, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// readInputs reads files, directories (recursively, *.yaml, *.yml, *.json) and
// "-" for standard input.
func readInputs(paths []string, stdin io.Reader, inv *Inventory, progress func(int)) error {
	for _, p := range paths {
		if p == "-" {
			if err := readStream("<stdin>", stdin, inv, progress); err != nil {
				return err
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			if err := readFile(p, inv, progress); err != nil {
				return err
			}
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		sort.Strings(files)
		for _, f := range files {
			if err := readFile(f, inv, progress); err != nil {
				return err
			}
		}
	}
	return nil
}

func readFile(path string, inv *Inventory, progress func(int)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readStream(path, f, inv, progress)
}

// readStream splits a stream into YAML documents ("---" lines); JSON is
// YAML, so `-o json` output reads the same way.
func readStream(source string, r io.Reader, inv *Inventory, progress func(int)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	var doc bytes.Buffer
	n := 0
	flush := func() error {
		if len(bytes.TrimSpace(doc.Bytes())) == 0 {
			doc.Reset()
			return nil
		}
		n++
		err := decodeDoc(doc.Bytes(), inv, progress)
		doc.Reset()
		if err != nil {
			return &InputError{Source: source, Doc: n, Err: err}
		}
		return nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("---")) && len(bytes.TrimSpace(line[3:])) == 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		doc.Write(line)
		doc.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return flush()
}

func decodeDoc(y []byte, inv *Inventory, progress func(int)) error {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil
	}
	return decodeObject(j, inv, progress)
}

func decodeObject(j []byte, inv *Inventory, progress func(int)) error {
	var tm typeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return err
	}
	if strings.HasSuffix(tm.Kind, "List") {
		for i, item := range tm.Items {
			if err := decodeObject(item, inv, progress); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	var target any
	switch tm.Kind {
	case "PersistentVolume":
		o := &v1.PersistentVolume{}
		inv.PVs = append(inv.PVs, o)
		target = o
	case "PersistentVolumeClaim":
		o := &v1.PersistentVolumeClaim{}
		inv.PVCs = append(inv.PVCs, o)
		target = o
	case "StorageClass":
		o := &storagev1.StorageClass{}
		inv.StorageClasses = append(inv.StorageClasses, o)
		target = o
	case "Pod":
		o := &v1.Pod{}
		inv.Pods = append(inv.Pods, o)
		target = o
	case "Secret":
		o := &v1.Secret{}
		inv.Secrets = append(inv.Secrets, o)
		target = o
	case "":
		return errors.New("object has no kind")
	default:
		inv.Skipped++
		return nil
	}
	if err := json.Unmarshal(j, target); err != nil {
		return fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if progress != nil {
		progress(1)
	}
	return nil
}
