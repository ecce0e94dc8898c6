package input

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Error names the source and the document.
func (e *InputError) Error() string {
	return fmt.Sprintf("%s: document %d: %v", e.Source, e.Doc, e.Err)
}

// Unwrap is the document's error.
func (e *InputError) Unwrap() error { return e.Err }

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// Reader reads input documents into a sink, refusing what it cannot read
// whole: invalid documents, invalid UTF-8, duplicate objects.
type Reader struct {
	// Sink receives each object read.
	Sink Sink
	// Progress, when set, is told how many objects were read since it was
	// last told.
	Progress func(int)
	// Namespace is given to namespaced objects without metadata.namespace,
	// as the API server and kubectl apply do ("default" unless -n).
	Namespace string
	// StdinFile is the file standard input was kept in (Spool), read as
	// "<stdin>".
	StdinFile string

	seen map[[16]byte]struct{}
	// objects counts the objects read, of every kind.
	objects int
	// defaulted counts the objects given Namespace.
	defaulted int
	// ignored counts the objects of kinds the command does not read, by
	// kind.
	ignored map[string]int
}

// Report says on w, once, what the Reader did beyond reading: objects
// given the default namespace, kinds it does not read.
func (rd *Reader) Report(w io.Writer) {
	if rd.defaulted > 0 {
		fmt.Fprintf(w, "%d namespaced object(s) without metadata.namespace were read as in namespace %q, as kubectl apply would create them (-n names another)\n", rd.defaulted, rd.Namespace)
	}
	if len(rd.ignored) > 0 {
		kinds := make([]string, 0, len(rd.ignored))
		n := 0
		for k, c := range rd.ignored {
			kinds = append(kinds, fmt.Sprintf("%s (%d)", k, c))
			n += c
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "%d object(s) of kinds csimigrate does not read were ignored: %s\n", n, strings.Join(kinds, ", "))
	}
}

// clusterKinds are the kinds read whose objects have no namespace.
var clusterKinds = map[string]bool{"PersistentVolume": true, "StorageClass": true, "CSINode": true, "CSIDriver": true, "Node": true}

// ErrNoObjects is returned for input without a single object (a failed
// kubectl in a pipeline gives empty input, which must not plan "ready").
var ErrNoObjects = errors.New("no objects in the input")

// ReadInputs reads files, directories (recursively, *.yaml, *.yml, *.json) and
// "-" for standard input; input without any object is ErrNoObjects.
func (rd *Reader) ReadInputs(paths []string, stdin io.Reader) error {
	if err := rd.readPaths(paths, stdin); err != nil {
		return err
	}
	if rd.objects == 0 {
		return fmt.Errorf("%w (%s)", ErrNoObjects, strings.Join(paths, ", "))
	}
	return nil
}

func (rd *Reader) readPaths(paths []string, stdin io.Reader) error {
	for _, p := range paths {
		if p == "-" {
			if err := rd.ReadStream("<stdin>", stdin); err != nil {
				return err
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			if err := rd.readFile(p); err != nil {
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
			if err := rd.readFile(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rd *Reader) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if path == rd.StdinFile {
		path = "<stdin>"
	}
	return rd.ReadStream(path, f)
}

// ReadStream reads JSON (`kubectl get -o json`: a List whose items are
// decoded one at a time, so memory does not grow with the input) or YAML
// split into documents at its document markers: a line "---", possibly
// followed by a comment or by the document's first content, and a line
// "..." (document end). A YAML List document is read whole, unless it has
// the shape kubectl prints, whose items are decoded one at a time.
func (rd *Reader) ReadStream(source string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<16)
	if startsJSON(br) {
		return rd.readJSON(source, br)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	y := &yamlStream{rd: rd, source: source}
	for sc.Scan() {
		if err := y.line(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return y.flush()
}

// startsJSON skips the white space at the start of the input and reports
// whether JSON follows.
func startsJSON(br *bufio.Reader) bool {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return false
		}
		switch b[0] {
		case ' ', '\t', '\n', '\r':
			_, _ = br.ReadByte()
		case '{', '[':
			return true
		default:
			return false
		}
	}
}

// yamlStream splits YAML, line by line, into documents, and a List document
// as kubectl prints it ("items:", then "- " entries at column 0) into its
// items: items is itemsStreaming while the entries are read, each kept in
// item (dedented) until the next.
type yamlStream struct {
	rd                 *Reader
	source             string
	doc, item, pending bytes.Buffer
	// n counts the documents read; streamed the items of the current one.
	n, items, streamed int
}

// flushItem decodes the List entry read so far.
func (y *yamlStream) flushItem() error {
	if y.item.Len() == 0 {
		return nil
	}
	err := y.rd.decodeDoc(y.item.Bytes())
	y.item.Reset()
	if err != nil {
		return &InputError{Source: y.source, Doc: y.n + 1, Err: fmt.Errorf("items[%d]: %w", y.streamed, err)}
	}
	y.streamed++
	return nil
}

// flush decodes the document read so far (a streamed List's header only).
func (y *yamlStream) flush() error {
	if err := y.flushItem(); err != nil {
		return err
	}
	if y.items == itemsPending {
		y.doc.Write(y.pending.Bytes()) // "items:" and nothing after it
		y.pending.Reset()
	}
	wasList := y.streamed > 0 || y.items == itemsStreaming
	y.items, y.streamed = itemsNone, 0
	if len(bytes.TrimSpace(y.doc.Bytes())) == 0 && !wasList {
		y.doc.Reset()
		return nil
	}
	y.n++
	var err error
	if wasList {
		err = checkListHeader(y.doc.Bytes())
	} else {
		err = y.rd.decodeDoc(y.doc.Bytes())
	}
	y.doc.Reset()
	if err != nil {
		return &InputError{Source: y.source, Doc: y.n, Err: err}
	}
	return nil
}

// line takes one line of the input.
func (y *yamlStream) line(line []byte) error {
	if taken, err := y.itemLine(line); taken || err != nil {
		return err
	}
	if rest, ok := documentMarker(line, "---"); ok {
		if err := y.flush(); err != nil {
			return err
		}
		// "--- # comment" starts an empty line; "--- key: v" or "--- |"
		// start the document with that content.
		if t := bytes.TrimSpace(rest); len(t) > 0 && t[0] != '#' {
			y.doc.Write(t)
			y.doc.WriteByte('\n')
		}
		return nil
	}
	if rest, ok := documentMarker(line, "..."); ok {
		if t := bytes.TrimSpace(rest); len(t) > 0 && t[0] != '#' {
			return &InputError{Source: y.source, Doc: y.n + 1, Err: fmt.Errorf("content %q after the document end marker \"...\"", t)}
		}
		return y.flush()
	}
	if y.items == itemsNone && isItemsKey(line) {
		y.items = itemsPending
		y.pending.Write(line)
		y.pending.WriteByte('\n')
		return nil
	}
	y.doc.Write(line)
	y.doc.WriteByte('\n')
	return nil
}

// itemLine takes a line after a top-level "items:" and reports whether it
// was taken (as an entry's, or held until the shape is known).
func (y *yamlStream) itemLine(line []byte) (bool, error) {
	switch y.items {
	case itemsPending:
		// The first content line after "items:" decides; "items:" and the
		// comments after it are held in pending until then.
		if isBlankOrComment(line) {
			y.pending.Write(line)
			y.pending.WriteByte('\n')
			return true, nil
		}
		if isEntry(line) {
			y.items = itemsStreaming
			y.pending.Reset()
			y.item.Write(line[min(2, len(line)):])
			y.item.WriteByte('\n')
			return true, nil
		}
		// Another shape: the document is read whole.
		y.items = itemsNone
		y.doc.Write(y.pending.Bytes())
		y.pending.Reset()
	case itemsStreaming:
		switch {
		case isEntry(line):
			if err := y.flushItem(); err != nil {
				return true, err
			}
			y.item.Write(line[min(2, len(line)):])
			y.item.WriteByte('\n')
			return true, nil
		case bytes.HasPrefix(line, []byte("  ")) || isBlankOrComment(line):
			if len(line) >= 2 && line[0] == ' ' {
				line = line[2:]
			}
			y.item.Write(line)
			y.item.WriteByte('\n')
			return true, nil
		case line[0] == ' ' || line[0] == '\t':
			return true, &InputError{Source: y.source, Doc: y.n + 1, Err: fmt.Errorf("items[%d]: line %q is indented less than the list's entries", y.streamed, line)}
		default:
			// A top-level key after the items: the list ends.
			if err := y.flushItem(); err != nil {
				return true, err
			}
			y.items = itemsDone
		}
	}
	return false, nil
}

// States of a YAML document's top-level "items:".
const (
	itemsNone      = iota // no "items:" key yet (or a shape read whole)
	itemsPending          // "items:" seen, its first entry not yet
	itemsStreaming        // entries "- ..." at column 0 being read
	itemsDone             // after the entries
)

// isItemsKey reports a line "items:" at column 0, possibly with a comment.
func isItemsKey(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("items:"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// isEntry reports a block sequence entry at column 0: "- ..." or "-".
func isEntry(line []byte) bool {
	return bytes.HasPrefix(line, []byte("- ")) || bytes.Equal(bytes.TrimRight(line, " \r"), []byte("-"))
}

func isBlankOrComment(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}

// checkListHeader checks what is left of a document whose items were
// streamed: it must say a kind ending in "List".
func checkListHeader(y []byte) error {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	var tm typeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return err
	}
	if !strings.HasSuffix(tm.Kind, "List") {
		return fmt.Errorf("a top-level items list in an object of kind %q, not a List", tm.Kind)
	}
	return nil
}

// documentMarker reports whether line is the YAML marker m ("---" or
// "...") at column 0, alone or followed by white space and the rest.
func documentMarker(line []byte, m string) (rest []byte, ok bool) {
	if !bytes.HasPrefix(line, []byte(m)) {
		return nil, false
	}
	rest = line[len(m):]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' {
		return nil, false // "---x" is a plain scalar
	}
	return rest, true
}

// readJSON decodes a stream of JSON values; a List's items are decoded one
// by one.
func (rd *Reader) readJSON(source string, r io.Reader) error {
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
		if err := rd.readJSONObject(dec); err != nil {
			return &InputError{Source: source, Doc: n, Err: err}
		}
	}
}

// readJSONObject reads the members of an object whose "{" was consumed. A
// List's items are streamed; any other object is buffered and decoded.
func (rd *Reader) readJSONObject(dec *json.Decoder) error {
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
				if err := rd.decodeObject(item); err != nil {
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
	return rd.decodeObject(b)
}

func (rd *Reader) decodeDoc(y []byte) error {
	if !utf8.Valid(y) {
		return errInvalidUTF8(y)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil
	}
	return rd.decodeObject(j)
}

// errInvalidUTF8 says where b stops being UTF-8 (encoding/json would
// silently put U+FFFD there).
func errInvalidUTF8(b []byte) error {
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		i += size
	}
	line := bytes.Count(b[:i], []byte("\n")) + 1
	return fmt.Errorf("invalid UTF-8 at byte %d (line %d of the document)", i, line)
}

// operatorGroup is the API group of the ceph-csi-operator's objects, and
// operatorKinds the kinds of it the plan reads: where Ceph CSI's drivers
// run and the cluster entries the operator renders.
const operatorGroup = "csi.ceph.io"

var operatorKinds = map[string]bool{"Driver": true, "ClientProfile": true, "CephConnection": true}

// readKinds are the kinds the commands read, each with a new object to
// decode it into; objects of other kinds are counted and named, not read.
var readKinds = map[string]func() any{
	"PersistentVolume":      func() any { return &v1.PersistentVolume{} },
	"PersistentVolumeClaim": func() any { return &v1.PersistentVolumeClaim{} },
	"StorageClass":          func() any { return &storagev1.StorageClass{} },
	"Pod":                   func() any { return &v1.Pod{} },
	"Secret":                func() any { return &v1.Secret{} },
	"CSINode":               func() any { return &storagev1.CSINode{} },
	"CSIDriver":             func() any { return &storagev1.CSIDriver{} },
	"ConfigMap":             func() any { return &v1.ConfigMap{} },
	"Node":                  func() any { return &v1.Node{} },
	"Deployment":            func() any { return &appsv1.Deployment{} },
	"StatefulSet":           func() any { return &appsv1.StatefulSet{} },
	"DaemonSet":             func() any { return &appsv1.DaemonSet{} },
	"ReplicaSet":            func() any { return &appsv1.ReplicaSet{} },
	"Job":                   func() any { return &batchv1.Job{} },
	"CronJob":               func() any { return &batchv1.CronJob{} },
	"ReplicationController": func() any { return &v1.ReplicationController{} },
}

func (rd *Reader) decodeObject(j []byte) error {
	if !utf8.Valid(j) {
		return errInvalidUTF8(j)
	}
	var tm typeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return err
	}
	if strings.HasSuffix(tm.Kind, "List") {
		for i, item := range tm.Items {
			if err := rd.decodeObject(item); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	newTarget, known := readKinds[tm.Kind]
	if operatorKinds[tm.Kind] {
		// The ceph-csi-operator's objects, read as they are; a kind of
		// another group with the same name is not one of them.
		known = strings.HasPrefix(tm.APIVersion, operatorGroup+"/")
		newTarget = func() any { return &unstructured.Unstructured{} }
	}
	switch {
	case tm.Kind == "":
		return errors.New("object has no kind")
	case !known:
		if rd.ignored == nil {
			rd.ignored = map[string]int{}
		}
		rd.ignored[tm.Kind]++
		rd.objects++
		rd.Sink.Add(nil)
		return nil
	}
	target := newTarget()
	if err := json.Unmarshal(j, target); err != nil {
		if tm.Kind == "Secret" {
			err = secretDataError(j, err)
		}
		return fmt.Errorf("%s %s: %w", tm.Kind, objectName(j), err)
	}
	if err := checkAPIVersion(tm.Kind, tm.APIVersion); err != nil {
		return fmt.Errorf("%s %s: %w", tm.Kind, objectName(j), err)
	}
	if err := defaultLegacy(tm.APIVersion, target); err != nil {
		return fmt.Errorf("%s %s: %w", tm.Kind, objectName(j), err)
	}
	if u, ok := target.(*unstructured.Unstructured); ok {
		// Only what the plan reads of them: no status, no managed fields.
		u.SetManagedFields(nil)
		unstructured.RemoveNestedField(u.Object, "status")
	}
	if o := target.(metav1.Object); o.GetNamespace() == "" && !clusterKinds[tm.Kind] {
		ns := rd.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		o.SetNamespace(ns)
		rd.Namespace = ns
		rd.defaulted++
	}
	if err := rd.once(tm.Kind, target.(metav1.Object)); err != nil {
		return err
	}
	rd.objects++
	rd.Sink.Add(target)
	if rd.Progress != nil {
		rd.Progress(1)
	}
	return nil
}

// once refuses a second object of one kind, namespace and name: which of
// the two a command used would depend on the order of the input. Keys are
// kept as 16-byte hashes, so memory grows little with the input.
func (rd *Reader) once(kind string, o metav1.Object) error {
	h := sha256.New()
	for _, part := range []string{kind, o.GetNamespace(), o.GetName()} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var key [16]byte
	copy(key[:], h.Sum(nil))
	if _, dup := rd.seen[key]; dup {
		id := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			id = ns + "/" + id
		}
		return fmt.Errorf("%s %s appears twice in the input; give each object once", kind, id)
	}
	if rd.seen == nil {
		rd.seen = map[[16]byte]struct{}{}
	}
	rd.seen[key] = struct{}{}
	return nil
}

// SinkFunc is a Sink of a function.
type SinkFunc func(obj any)

// Add calls f with obj.
func (f SinkFunc) Add(obj any) { f(obj) }

// Spool copies r whole into a temporary file, so that it can be read more
// than once; cleanup removes it.
func Spool(r io.Reader) (path string, cleanup func(), err error) {
	f, err := os.CreateTemp("", "csimigrate-input-*")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.Remove(f.Name()) }
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		cleanup()
		return "", nil, fmt.Errorf("reading standard input: %w", err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// Sample is the embedded sample cluster (sample.yaml): what -sample reads.
//
//go:embed sample.yaml
var Sample []byte

// objectName is "namespace/name" (or "name") of an object's JSON, for an
// error about it; "(no name)" when it has none.
func objectName(j []byte) string {
	var o struct {
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(j, &o)
	switch {
	case o.Metadata.Name == "":
		return "(no name)"
	case o.Metadata.Namespace != "":
		return o.Metadata.Namespace + "/" + o.Metadata.Name
	}
	return o.Metadata.Name
}
