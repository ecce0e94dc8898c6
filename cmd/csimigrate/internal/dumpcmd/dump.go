package dumpcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/rewrite"
)

// Summary is what csimigrate dump does, as its help and docs/flags.md say.
const Summary = "Writes, as one JSON List on standard output, what plan -f and rewrite -f read from a cluster: the kinds\n" +
	"plan -live lists, Secrets with their values left out (the fields are kept, and the user names Ceph CSI's\n" +
	"checks compare: adminId, adminID, userID), containers' env values left out, and only the config maps\n" +
	"Ceph CSI reads its cluster entries from (and, by their metadata only, the writer's saved states, which name\n" +
	"what an interrupted rewrite left half-done). Usage: csimigrate dump > cluster.json; csimigrate plan -f cluster.json."

// redacted stands for a Secret value the dump leaves out: non-empty, as
// the value was, so that the plan's checks of which fields are set hold.
const redacted = "redacted-by-csimigrate-dump"

// secretIDFields are the Secret fields whose values are user names the
// checks compare, not keys: they are kept.
var secretIDFields = []string{"adminId", "adminID", "userID"}

type options struct {
	cli.ClusterFlags
	cli.LogFlags
}

func (o *options) Register(fs *flag.FlagSet) {
	o.ClusterFlags.Register(fs)
	o.LogFlags.Register(fs)
}

func (o *options) Complete(fs *flag.FlagSet) error { return cli.NoArgs(fs.Args()) }

func (o *options) Validate() error { return nil }

// Run runs csimigrate dump with args and returns its exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	return cli.RunCommand("dump", Summary, &options{}, args, nil, stdout, stderr)
}

func (o *options) Run(_ io.Reader, stdout, stderr io.Writer) int {
	client, err := cli.ClientFor(o.Kubeconfig, o.Context, 0, 0)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate dump: %v\n", err)
		return cli.ExitUsage
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	d := &dumpSink{w: w, counts: map[string]int{}}
	// The API server's version first, before the items: plan -f of the
	// dump plans for the release the cluster runs, as plan -live does.
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate dump: reading the API server's version: %v\n", err)
		return cli.ExitInput
	}
	version, _ := json.Marshal(v.GitVersion)
	// And the resources it lists whole: an empty one is the cluster's.
	listers := input.Listers(client, true, true)
	var kinds []string
	for _, src := range listers {
		kinds = append(kinds, src.What)
	}
	listed, _ := json.Marshal(kinds)
	fmt.Fprintf(w, `{"apiVersion":"v1","kind":"List",%q:%s,%q:%s,"items":[`, input.DumpVersionKey, version, input.DumpListedKey, listed)
	for _, src := range listers {
		opts := metav1.ListOptions{Limit: input.PageSize}
		for {
			cont, add, err := src.Page(context.Background(), opts)
			if err == nil {
				add(d)
				err = d.err
			}
			if err != nil {
				// What was written is no JSON List: the plan refuses it.
				w.Flush()
				fmt.Fprintf(stderr, "csimigrate dump: listing %s: %v\n", src.What, err)
				return cli.ExitInput
			}
			if cont == "" {
				break
			}
			opts.Continue = cont
		}
	}
	fmt.Fprint(w, "]}\n")
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "csimigrate dump: %v\n", err)
		return cli.ExitOutput
	}
	var counts []string
	for k, n := range d.counts {
		counts = append(counts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(counts)
	fmt.Fprintf(stderr, "csimigrate dump: %d objects (%s); Secret values and containers' env values left out\n", d.n, strings.Join(counts, ", "))
	return cli.ExitOK
}

// dumpSink writes each object as an item of the List, redacted.
type dumpSink struct {
	w      *bufio.Writer
	n      int
	counts map[string]int
	err    error
}

// Add writes obj (a typed object of the live listers, or an unstructured
// one of the operator's kinds); objects the plan does not read are left
// out.
func (d *dumpSink) Add(obj any) {
	if d.err != nil {
		return
	}
	item, kind, err := dumpItem(obj)
	if err != nil {
		d.err = err
		return
	}
	if item == nil {
		return
	}
	b, err := json.Marshal(item)
	if err != nil {
		d.err = err
		return
	}
	if d.n > 0 {
		d.w.WriteByte(',')
	}
	d.w.WriteString("\n")
	d.w.Write(b)
	d.n++
	d.counts[kind]++
}

// dumpItem is obj as the dump writes it (nil: left out), and its kind.
func dumpItem(obj any) (map[string]any, string, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m := u.DeepCopy().Object
		clean(m)
		return m, u.GetKind(), nil
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, "", fmt.Errorf("dump: %T is not an API object", obj)
	}
	if cm, ok := obj.(*v1.ConfigMap); ok {
		keep := map[string]string{}
		for _, k := range []string{"config.json", "csi-cluster-config-json"} {
			if v, has := cm.Data[k]; has {
				keep[k] = v
			}
		}
		// A writer's saved state, by its metadata only: the plan names what
		// an interrupted run left half-done from it.
		_, runOf := cm.Annotations[rewrite.AnnRunOf]
		_, runOfClass := cm.Annotations[rewrite.AnnRunOfClass]
		if len(keep) == 0 && !(cm.Labels["app.kubernetes.io/managed-by"] == "csimigrate" && (runOf || runOfClass)) {
			return nil, "", nil
		}
		c := cm.DeepCopy()
		c.Data, c.BinaryData = keep, nil
		ro = c
	}
	if s, ok := obj.(*v1.Secret); ok {
		ro = redactSecret(s)
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(ro)
	if err != nil || len(kinds) == 0 {
		return nil, "", fmt.Errorf("dump: the kind of %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	if err != nil {
		return nil, "", err
	}
	m["apiVersion"], m["kind"] = kinds[0].GroupVersion().String(), kinds[0].Kind
	clean(m)
	return m, kinds[0].Kind, nil
}

// clean removes from an object what no reader needs and may hold what
// must not leave the cluster: the managed fields' field sets (the plan
// reads only their managers, which name the tools that keep an object),
// kubectl's last-applied configuration (a copy of the whole object as
// applied), and containers' literal env values.
func clean(m map[string]any) {
	if meta, ok := m["metadata"].(map[string]any); ok {
		managers(meta)
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, v1.LastAppliedConfigAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	dropEnvValues(m)
}

// managers keeps of meta's managed fields only each entry's manager and
// operation.
func managers(meta map[string]any) {
	entries, _ := meta["managedFields"].([]any)
	var keep []any
	for _, e := range entries {
		if e, ok := e.(map[string]any); ok && e["manager"] != nil {
			keep = append(keep, map[string]any{"manager": e["manager"], "operation": e["operation"]})
		}
	}
	delete(meta, "managedFields")
	if keep != nil {
		meta["managedFields"] = keep
	}
}

// redactSecret is s with every value but the user names replaced.
func redactSecret(s *v1.Secret) *v1.Secret {
	out := s.DeepCopy()
	out.Data = make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		switch {
		case slices.Contains(secretIDFields, k), len(v) == 0:
			out.Data[k] = v
		default:
			out.Data[k] = []byte(redacted)
		}
	}
	for k, v := range s.StringData {
		if slices.Contains(secretIDFields, k) || v == "" {
			out.Data[k] = []byte(v)
		} else {
			out.Data[k] = []byte(redacted)
		}
	}
	out.StringData = nil
	return out
}

// dropEnvValues removes the literal values of every container's env
// (kept: names and references), wherever a pod template nests them.
func dropEnvValues(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == "env" {
				if list, ok := c.([]any); ok {
					for _, e := range list {
						if em, ok := e.(map[string]any); ok {
							delete(em, "value")
						}
					}
					continue
				}
			}
			dropEnvValues(c)
		}
	case []any:
		for _, c := range t {
			dropEnvValues(c)
		}
	}
}

// New is the dump command's options, for its flags (completion, the flag
// reference).
func New() cli.Command { return &options{} }
