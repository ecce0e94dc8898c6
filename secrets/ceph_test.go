package secrets

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

func TestIsDNS1123SubdomainMatchesKubernetes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9.-]{0,20}`), rapid.StringMatching(`[a-z0-9.-]{250,256}`)).Draw(t, "s")
		want := len(validation.IsDNS1123Subdomain(s)) == 0
		if got := isDNS1123Subdomain(s); got != want {
			t.Fatalf("%q: %v, Kubernetes %v", s, got, want)
		}
	})
}

func TestCephFSCSISecretName(t *testing.T) {
	if n := CephFSCSISecretName("cephfs-assets", "assets"); n != "cephfs-assets-csi-assets" {
		t.Errorf("%q", n)
	}
	if n := CephFSCSISecretName("s", ""); n != "s-csi-admin" {
		t.Errorf("%q", n)
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[a-z0-9]([a-z0-9.-]{0,250}[a-z0-9])?`).Draw(t, "name")
		user := rapid.String().Draw(t, "user")
		n := CephFSCSISecretName(name, user)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) != 0 {
			t.Fatalf("%q: %v", n, errs)
		}
		if n != CephFSCSISecretName(name, user) {
			t.Fatal("not deterministic")
		}
		other := rapid.String().Draw(t, "other")
		if other != user && (other != "" || user != CephDefaultUser) && (user != "" || other != CephDefaultUser) && CephFSCSISecretName(name, other) == n {
			t.Fatalf("users %q and %q share secret %q", user, other, n)
		}
	})
}

func TestCephCSICredentials(t *testing.T) {
	for _, tc := range []struct {
		in      map[string]string
		id      string
		mig     bool
		wantErr error
	}{
		{map[string]string{"key": "k"}, "admin", true, nil},
		{map[string]string{"key": "k", "adminId": ""}, "admin", true, nil},
		{map[string]string{"key": "k", "adminId": "kube", "userID": "x", "userKey": "y"}, "kube", true, nil},
		{map[string]string{"userID": "u", "userKey": "k"}, "u", false, nil},
		{map[string]string{"key": "", "userID": "u", "userKey": "k"}, "u", false, nil},
		{nil, "", false, ErrCephSecretEmpty},
		{map[string]string{"userKey": "k"}, "", false, ErrCephMissingID},
		{map[string]string{"userID": "u"}, "", false, ErrCephMissingKey},
		{map[string]string{"adminID": "a", "adminKey": "k"}, "", false, ErrCephMissingID},
	} {
		c, err := CephCSICredentials(tc.in)
		if !errors.Is(err, tc.wantErr) || c.ID != tc.id || c.Migration != tc.mig {
			t.Errorf("%v: %+v %v", tc.in, c, err)
		}
		if err != nil {
			for _, v := range tc.in {
				if v != "" && strings.Contains(err.Error(), v) && len(v) > 1 {
					t.Errorf("error %q shows a value", err)
				}
			}
		}
	}
	// CephFS has no remap.
	if _, err := CephCSIUserCredentials(map[string]string{"key": "k"}); !errors.Is(err, ErrCephMissingID) {
		t.Errorf("CephFS with an in-tree secret: %v", err)
	}
}

func TestFixesAndDerivedSecret(t *testing.T) {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ceph"}, Data: map[string][]byte{"key": []byte("SECRETKEY")}}
	if f, err := CephMigrationSecretFixes(s, "admin"); err != nil || len(f) != 0 {
		t.Errorf("admin: %v %v", f, err)
	}
	f, err := CephMigrationSecretFixes(s, "kube")
	if err != nil || len(f) != 1 || f[0].Field != "adminId" || f[0].Value != "kube" {
		t.Errorf("kube: %v %v", f, err)
	}
	s.StringData = map[string]string{"adminId": "kube"}
	if f, _ := CephMigrationSecretFixes(s, "kube"); len(f) != 0 {
		t.Errorf("already fixed: %v", f)
	}
	empty := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}, Data: map[string][]byte{"a": []byte("SECRETA"), "b": []byte("SECRETB")}}
	if _, err := CephMigrationSecretFixes(empty, "kube"); !errors.Is(err, ErrCephNoKey) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("no key: %v", err)
	}
	if _, err := CephFSCSISecret(empty, "kube"); !errors.Is(err, ErrCephNoKey) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("derived from keyless: %v", err)
	}
	single := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "one"}, Data: map[string][]byte{"secret": []byte("K1")}}
	out, err := CephFSCSISecret(single, "")
	if err != nil || string(out.Data["userKey"]) != "K1" || string(out.Data["userID"]) != "admin" || out.Name != "one-csi-admin" || out.Namespace != "ns" {
		t.Errorf("%+v %v", out, err)
	}
	if single.Data["userKey"] != nil {
		t.Error("input modified")
	}
}

func TestRedaction(t *testing.T) {
	v := NewValue("TOPSECRET")
	d := DataFromStrings(map[string]string{"key": "TOPSECRET"})
	for _, s := range []string{v.String(), v.GoString(), d.String(), d.GoString()} {
		if strings.Contains(s, "TOPSECRET") {
			t.Errorf("%q", s)
		}
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for _, x := range []any{v, d, struct{ V Value }{v}, &CephCredentials{ID: "u", Key: v}} {
			if s := sprintf(verb, x); strings.Contains(s, "TOPSECRET") || strings.Contains(s, "544f50534543524554") {
				t.Errorf("%s of %T: %q", verb, x, s)
			}
		}
	}
	b, _ := d.MarshalJSON()
	if strings.Contains(string(b), "TOPSECRET") || string(b) != `{"key":"[redacted]"}` {
		t.Errorf("%s", b)
	}
	if v.Reveal() != "TOPSECRET" {
		t.Error("Reveal")
	}
}
