package secrets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/secrets"
)

var claim = secrets.Claim{PVName: "pvc-1234", PVC: &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
	Name: "data", Namespace: "shop", Annotations: map[string]string{"team": "payments", "bad": "Not_Valid"}}}}

func TestResolve(t *testing.T) {
	const p = "csi.storage.k8s.io/"
	for _, tc := range []struct {
		name   string
		kind   secrets.Kind
		params map[string]string
		c      secrets.Claim
		want   *v1.SecretReference
		err    error
		tokens []string
	}{
		{"none", secrets.NodeStage, map[string]string{"pool": "rbd"}, claim, nil, nil, nil},
		{"prefixed", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "s", p + "node-stage-secret-namespace": "ns"}, claim, &v1.SecretReference{Name: "s", Namespace: "ns"}, nil, nil},
		{"deprecated", secrets.Provisioner, map[string]string{"csiProvisionerSecretName": "s", "csiProvisionerSecretNamespace": "ns"}, claim, &v1.SecretReference{Name: "s", Namespace: "ns"}, nil, nil},
		{"default fills node-expand", secrets.NodeExpand, map[string]string{p + "secret-name": "d", p + "secret-namespace": "dns"}, claim, &v1.SecretReference{Name: "d", Namespace: "dns"}, nil, nil},
		{"kind wins over default", secrets.NodeExpand, map[string]string{p + "secret-name": "d", p + "secret-namespace": "dns", p + "node-expand-secret-name": "e", p + "node-expand-secret-namespace": "ens"}, claim, &v1.SecretReference{Name: "e", Namespace: "ens"}, nil, nil},
		{"templates", secrets.NodePublish, map[string]string{p + "node-publish-secret-name": "${pvc.name}-${pvc.annotations['team']}", p + "node-publish-secret-namespace": "${pvc.namespace}"}, claim, &v1.SecretReference{Name: "data-payments", Namespace: "shop"}, nil, nil},
		{"pv name", secrets.ControllerExpand, map[string]string{p + "controller-expand-secret-name": "${pv.name}", p + "controller-expand-secret-namespace": "${pv.name}"}, claim, &v1.SecretReference{Name: "pvc-1234", Namespace: "pvc-1234"}, nil, nil},
		{"both styles", secrets.NodeStage, map[string]string{"csiNodeStageSecretName": "a", p + "node-stage-secret-name": "b", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrBothKeyStyles, nil},
		{"half pair", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "a"}, claim, nil, secrets.ErrHalfPair, nil},
		{"empty", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrEmptyValue, nil},
		{"pvc.name in namespace", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "a", p + "node-stage-secret-namespace": "${pvc.name}"}, claim, nil, secrets.ErrUnknownToken, []string{"pvc.name"}},
		{"dollar without braces", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "$pv.name", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrUnknownToken, []string{"pv"}},
		{"double quotes", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": `${pvc.annotations["team"]}`, p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrUnknownToken, []string{`pvc.annotations["team"]`}},
		{"missing annotation", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "${pvc.annotations['nope']}", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrUnknownToken, []string{"pvc.annotations['nope']"}},
		{"empty braces", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "${}", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrInvalidName, nil},
		{"invalid name", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "${pvc.annotations['bad']}", p + "node-stage-secret-namespace": "ns"}, claim, nil, secrets.ErrInvalidName, nil},
		{"invalid namespace", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "a", p + "node-stage-secret-namespace": "a.b"}, claim, nil, secrets.ErrInvalidNamespace, nil},
		{"no claim", secrets.NodeStage, map[string]string{p + "node-stage-secret-name": "a", p + "node-stage-secret-namespace": "${pvc.namespace}"}, secrets.Claim{PVName: "pv"}, nil, secrets.ErrMissingClaim, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := secrets.Resolve(tc.kind, tc.params, tc.c)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			var re *secrets.ResolveError
			if err != nil && (!errors.As(err, &re) || re.Kind != tc.kind) {
				t.Errorf("error does not name the kind: %v", err)
			}
			if tc.tokens != nil {
				if diff := cmp.Diff(tc.tokens, re.Tokens); diff != "" {
					t.Errorf("tokens (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestStripReserved(t *testing.T) {
	got, err := secrets.StripReserved(map[string]string{"pool": "rbd", "csi.storage.k8s.io/fstype": "xfs", "csi.storage.k8s.io/node-expand-secret-name": "s",
		"csiProvisionerSecretName": "old"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"pool": "rbd", "csiProvisionerSecretName": "old"}, got); diff != "" {
		t.Error(diff)
	}
	if _, err := secrets.StripReserved(map[string]string{"csi.storage.k8s.io/bogus": "x"}); !errors.Is(err, secrets.ErrReservedKey) {
		t.Errorf("err = %v", err)
	}
}

// Every reference that resolves passes the PV validation of secret
// references: a DNS-1123 subdomain name and a DNS-1123 label namespace.
func TestResolvedRefsAreValidProperty(t *testing.T) {
	tokens := []string{"${pv.name}", "${pvc.namespace}", "${pvc.name}", "${pvc.annotations['a']}", "$pv.name", "${}", "-", ".", "x", "X", "_", "${pvc.annotations[\"a\"]}"}
	tmpl := rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(rapid.SampledFrom(tokens), 1, 4).Draw(t, "parts")
		s := ""
		for _, p := range parts {
			s += p
		}
		return s
	})
	rapid.Check(t, func(t *rapid.T) {
		c := secrets.Claim{PVName: rapid.StringMatching(`[a-z0-9.-]{1,20}`).Draw(t, "pv"), PVC: &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: rapid.StringMatching(`[a-z0-9.-]{1,20}`).Draw(t, "pvc"), Namespace: rapid.StringMatching(`[a-z0-9-]{1,20}`).Draw(t, "ns"),
			Annotations: map[string]string{"a": rapid.String().Draw(t, "ann")}}}}
		kind := rapid.SampledFrom(secrets.Kinds).Draw(t, "kind")
		keys := secrets.KeysOf(kind)
		params := map[string]string{keys.Name: tmpl.Draw(t, "name"), keys.Namespace: tmpl.Draw(t, "namespace")}
		ref, err := secrets.Resolve(kind, params, c)
		// Tokens outside the allowed sets never resolve.
		nsT, nameT := params[keys.Namespace], params[keys.Name]
		nsForbidden := strings.Contains(nsT, "${pvc.name}") || strings.Contains(nsT, "${pvc.annotations") || strings.Contains(nsT, "$pv.name")
		if nsForbidden && !errors.Is(err, secrets.ErrUnknownToken) {
			t.Fatalf("%v: namespace with a forbidden token: %v, %v", params, ref, err)
		}
		if (strings.Contains(nameT, "$pv.name") || strings.Contains(nameT, `["a"]`)) && err == nil {
			t.Fatalf("%v: name with a forbidden token resolved to %v", params, ref)
		}
		if err != nil {
			return
		}
		if errs := validation.IsDNS1123Subdomain(ref.Name); len(errs) > 0 {
			t.Fatalf("name %q: %v", ref.Name, errs)
		}
		if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
			t.Fatalf("namespace %q: %v", ref.Namespace, errs)
		}
	})
}
