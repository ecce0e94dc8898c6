package compat

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/csimigrate/csimigrate/secrets"
)

// externalProvisioner is the module whose newest release the reserved
// StorageClass keys are checked against: when it learns a key, this test
// fails before users' classes are refused.
const externalProvisioner = "github.com/kubernetes-csi/external-provisioner/v6"

// provisionerSource downloads the newest release of external-provisioner v6
// through the module proxy and parses its controller.
func provisionerSource(t *testing.T) (version string, file *ast.File) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", externalProvisioner+"@latest")
	// Outside any module or workspace, so that no go.sum file is written.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@latest: %v\n%s%s", externalProvisioner, err, out, stderr.Bytes())
	}
	var mod struct{ Version, Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download printed %q: %v", out, err)
	}
	path := filepath.Join(mod.Dir, "pkg", "controller", "controller.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return mod.Version, f
}

// stringConsts evaluates the file's string constants: literals, and sums of
// literals and other constants of the file.
func stringConsts(t *testing.T, f *ast.File) map[string]string {
	exprs := map[string]ast.Expr{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					exprs[n.Name] = vs.Values[i]
				}
			}
		}
	}
	vals := map[string]string{}
	var eval func(e ast.Expr, depth int) (string, bool)
	eval = func(e ast.Expr, depth int) (string, bool) {
		if depth > 20 {
			return "", false
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			if v, ok := vals[e.Name]; ok {
				return v, true
			}
			if x, ok := exprs[e.Name]; ok {
				return eval(x, depth+1)
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				a, ok1 := eval(e.X, depth+1)
				b, ok2 := eval(e.Y, depth+1)
				return a + b, ok1 && ok2
			}
		case *ast.ParenExpr:
			return eval(e.X, depth+1)
		}
		return "", false
	}
	for name, e := range exprs {
		if v, ok := eval(e, 0); ok {
			vals[name] = v
		}
	}
	if len(vals) == 0 {
		t.Fatal("no string constants found in external-provisioner's controller.go")
	}
	return vals
}

// The csi.storage.k8s.io/ keys secrets.StripReserved accepts are exactly
// those of the switch in external-provisioner's removePrefixedParameters.
func TestReservedKeysMatchExternalProvisioner(t *testing.T) {
	version, f := provisionerSource(t)
	consts := stringConsts(t, f)
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == "removePrefixedParameters" {
			fn = d
		}
	}
	if fn == nil {
		t.Fatalf("external-provisioner %s: removePrefixedParameters is gone; find where it strips csi.storage.k8s.io/ keys now", version)
	}
	var theirs []string
	ast.Inspect(fn, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			id, ok := e.(*ast.Ident)
			v, known := consts[id.Name]
			if !ok || !known {
				t.Fatalf("external-provisioner %s: case %#v is not a string constant of the file", version, e)
			}
			theirs = append(theirs, v)
		}
		return true
	})
	slices.Sort(theirs)
	if len(theirs) < 10 {
		t.Fatalf("external-provisioner %s: only %d reserved keys found: %q", version, len(theirs), theirs)
	}
	if diff := cmp.Diff(theirs, secrets.ReservedKeys()); diff != "" {
		t.Errorf("reserved keys differ from external-provisioner %s (-theirs +ours):\n%s", version, diff)
	}
	for _, k := range theirs {
		out, err := secrets.StripReserved(map[string]string{k: "v", "pool": "rbd"})
		if err != nil || len(out) != 1 {
			t.Errorf("StripReserved refuses or keeps %q, which external-provisioner %s strips: %v, %v", k, version, out, err)
		}
	}
	t.Logf("external-provisioner %s: %d reserved keys", version, len(theirs))
}

// The annotations in which external-provisioner keeps a PV's deletion
// secret are the ones secrets names (and csimigrate rewrite writes).
func TestDeletionSecretAnnotationsMatchExternalProvisioner(t *testing.T) {
	version, f := provisionerSource(t)
	consts := stringConsts(t, f)
	for name, ours := range map[string]string{
		"annDeletionProvisionerSecretRefName":      secrets.AnnDeletionSecretName,
		"annDeletionProvisionerSecretRefNamespace": secrets.AnnDeletionSecretNamespace,
	} {
		if theirs, ok := consts[name]; !ok || theirs != ours {
			t.Errorf("external-provisioner %s: %s = %q (found %v), ours %q", version, name, theirs, ok, ours)
		}
	}
}

// Every secretParamsMap of external-provisioner (one per kind of secret
// reference, and the Default pair) has the same keys as secrets.KeysOf of
// the kind of that name, and every kind it knows is in secrets.Kinds.
func TestSecretKindsMatchExternalProvisioner(t *testing.T) {
	version, f := provisionerSource(t)
	consts := stringConsts(t, f)
	seen := 0
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "secretParamsMap" {
			return true
		}
		fields := map[string]string{}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				t.Fatalf("external-provisioner %s: secretParamsMap element %#v is not key: value", version, e)
			}
			key := kv.Key.(*ast.Ident).Name
			switch v := kv.Value.(type) {
			case *ast.BasicLit:
				s, _ := strconv.Unquote(v.Value)
				fields[key] = s
			case *ast.Ident:
				s, ok := consts[v.Name]
				if !ok {
					t.Fatalf("external-provisioner %s: secretParamsMap field %s = %s is not a string constant", version, key, v.Name)
				}
				fields[key] = s
			}
		}
		name := fields["name"]
		theirs := secrets.Keys{Name: fields["secretNameKey"], Namespace: fields["secretNamespaceKey"],
			DeprecatedName: fields["deprecatedSecretNameKey"], DeprecatedNamespace: fields["deprecatedSecretNamespaceKey"]}
		var ours secrets.Keys
		if name == "Default" {
			ours = secrets.DefaultKeys
		} else {
			kind := kebab(name)
			if !slices.Contains(secrets.Kinds, kind) {
				t.Errorf("external-provisioner %s knows secret kind %q (%+v); secrets.Kinds does not", version, name, theirs)
				return false
			}
			ours = secrets.KeysOf(kind)
		}
		if diff := cmp.Diff(theirs, ours); diff != "" {
			t.Errorf("keys of %s differ from external-provisioner %s (-theirs +ours):\n%s", name, version, diff)
		}
		seen++
		return false
	})
	if seen != len(secrets.Kinds)+1 {
		t.Errorf("external-provisioner %s has %d secretParamsMap tables; secrets has %d kinds and the Default pair", version, seen, len(secrets.Kinds))
	}
}

// kebab turns "ControllerExpand" into "controller-expand".
func kebab(s string) secrets.Kind {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return secrets.Kind(b.String())
}
