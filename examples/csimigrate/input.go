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

// Sink receives decoded objects one at a time.
type Sink interface {
	Add(obj any)
}

// Add appends obj to the inventory.
func (inv *Inventory) Add(obj any) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		inv.PVs = append(inv.PVs, o)
	case *v1.PersistentVolumeClaim:
		inv.PVCs = append(inv.PVCs, o)
	case *storagev1.StorageClass:
		inv.StorageClasses = append(inv.StorageClasses, o)
	case *v1.Pod:
		inv.Pods = append(inv.Pods, o)
	case *v1.Secret:
		inv.Secrets = append(inv.Secrets, o)
	default:
		inv.Skipped++
	}
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
func readInputs(paths []string, stdin io.Reader, inv Sink, progress func(int)) error {
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

func readFile(path string, inv Sink, progress func(int)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readStream(path, f, inv, progress)
}

// readStream reads JSON (`kubectl get -o json`: a List whose items are
// decoded one at a time, so memory does not grow with the input) or YAML
// split into documents at "---" lines (a YAML List document is read whole).
func readStream(source string, r io.Reader, inv Sink, progress func(int)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		b, err := br.Peek(1)
		if err != nil {
			break
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			_, _ = br.ReadByte()
			continue
		}
		if b[0] == '{' || b[0] == '[' {
			return readJSON(source, br, inv, progress)
		}
		break
	}
	sc := bufio.NewScanner(br)
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

// readJSON decodes a stream of JSON values; a List's items are decoded one
// by one.
func readJSON(source string, r io.Reader, inv Sink, progress func(int)) error {
	dec := json.NewDecoder(r)
	n := 0
	for {
		n++
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &InputError{Source: source, Doc: n, Err: err}
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return &InputError{Source: source, Doc: n, Err: fmt.Errorf("want a JSON object, found %v", tok)}
		}
		if err := readJSONObject(dec, inv, progress); err != nil {
			return &InputError{Source: source, Doc: n, Err: err}
		}
	}
}

// readJSONObject reads the members of an object whose "{" was consumed. A
// List's items are streamed; any other object is buffered and decoded.
func readJSONObject(dec *json.Decoder, inv Sink, progress func(int)) error {
	fields := map[string]json.RawMessage{}
	streamed := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if key == "items" {
			if t, err := dec.Token(); err != nil {
				return err
			} else if d, ok := t.(json.Delim); !ok || d != '[' {
				return fmt.Errorf("items: want a list")
			}
			for i := 0; dec.More(); i++ {
				var item json.RawMessage
				if err := dec.Decode(&item); err != nil {
					return fmt.Errorf("items[%d]: %w", i, err)
				}
				if err := decodeObject(item, inv, progress); err != nil {
					return fmt.Errorf("items[%d]: %w", i, err)
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			streamed = true
			continue
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil { // "}"
		return err
	}
	if streamed {
		return nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return decodeObject(b, inv, progress)
}

func decodeDoc(y []byte, inv Sink, progress func(int)) error {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil
	}
	return decodeObject(j, inv, progress)
}

func decodeObject(j []byte, inv Sink, progress func(int)) error {
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
		target = &v1.PersistentVolume{}
	case "PersistentVolumeClaim":
		target = &v1.PersistentVolumeClaim{}
	case "StorageClass":
		target = &storagev1.StorageClass{}
	case "Pod":
		target = &v1.Pod{}
	case "Secret":
		target = &v1.Secret{}
	case "CSINode":
		target = &storagev1.CSINode{}
	case "":
		return errors.New("object has no kind")
	default:
		inv.Add(nil)
		return nil
	}
	if err := json.Unmarshal(j, target); err != nil {
		return fmt.Errorf("%s: %w", tm.Kind, err)
	}
	inv.Add(target)
	if progress != nil {
		progress(1)
	}
	return nil
}
