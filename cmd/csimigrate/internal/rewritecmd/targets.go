package rewritecmd

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/rewrite"
)

// target is one object named on rewrite's command line: a PV or a
// StorageClass (ref), the PV bound to a claim (pvc/NAMESPACE/NAME), or the
// PVs bound to the claims of a namespace (namespace/NAME): an admin starts
// from the failing pod's claim or namespace.
type target struct {
	ref       rewrite.ObjectRef
	claim     string // "namespace/name"
	namespace string
	given     string
}

// targetUsage says what parseTarget accepts.
const targetUsage = "want a PV's name, pv/NAME, pvc/NAMESPACE/NAME, namespace/NAME or storageclass/NAME"

// parseTarget reads a target named on rewrite's command line.
func parseTarget(v string) (target, error) {
	t := target{given: v}
	if !strings.Contains(v, "/") {
		t.ref = rewrite.PVRef(v)
		return t, nil
	}
	kind, rest, _ := strings.Cut(v, "/")
	switch strings.ToLower(kind) {
	case "pvc", "persistentvolumeclaim", "persistentvolumeclaims":
		ns, name, ok := strings.Cut(rest, "/")
		if ok && len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0 {
			t.claim = ns + "/" + name
			return t, nil
		}
	case "ns", "namespace", "namespaces":
		if len(validation.IsDNS1123Label(rest)) == 0 {
			t.namespace = rest
			return t, nil
		}
	default:
		ref, err := cli.ParseObjectRef(v)
		if err == nil {
			t.ref = ref
			return t, nil
		}
	}
	return target{}, fmt.Errorf("%q: %s", v, targetUsage)
}

// parseTargets reads every target (nil for none).
func parseTargets(names []string) ([]target, error) {
	var out []target
	for _, n := range names {
		t, err := parseTarget(n)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// byClaim reports whether the target names PVs by their claim (a claim or
// a namespace).
func (t target) byClaim() bool { return t.claim != "" || t.namespace != "" }

// selectsPV reports whether the target names the PV called name, bound to
// claim ("namespace/name", "" for none).
func (t target) selectsPV(name, claim string) bool {
	switch {
	case t.claim != "":
		return claim == t.claim
	case t.namespace != "":
		ns, _, _ := strings.Cut(claim, "/")
		return claim != "" && ns == t.namespace
	}
	return t.ref.Kind != rewrite.KindStorageClass && t.ref.Name == name
}

// selectsClass reports whether the target names the StorageClass.
func (t target) selectsClass(name string) bool {
	return !t.byClaim() && t.ref.Kind == rewrite.KindStorageClass && t.ref.Name == name
}

// claimOf is a PV's claim, "namespace/name" ("" when it has none).
func claimOf(pv *v1.PersistentVolume) string {
	if r := pv.Spec.ClaimRef; r != nil {
		return r.Namespace + "/" + r.Name
	}
	return ""
}

// anySelectsPV reports whether no target is given or one names the PV.
func anySelectsPV(ts []target, name, claim string) bool {
	if len(ts) == 0 {
		return true
	}
	for _, t := range ts {
		if t.selectsPV(name, claim) {
			return true
		}
	}
	return false
}

// anySelectsClass reports whether no target is given or one names the
// class.
func anySelectsClass(ts []target, name string) bool {
	if len(ts) == 0 {
		return true
	}
	for _, t := range ts {
		if t.selectsClass(name) {
			return true
		}
	}
	return false
}
