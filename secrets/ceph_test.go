package secrets

import (
	"errors"
	"reflect"
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

// TestCephCSISecretReady: every secret shape the in-tree plugins accepted,
// judged as each Ceph CSI driver reads it.
func TestCephCSISecretReady(t *testing.T) {
	sec := func(kv ...string) *v1.Secret {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
		return s
	}
	for _, tc := range []struct {
		name, driver, user string
		secret             *v1.Secret
		fix                string // the field=value fixed, "" for none
		err                error  // nil when ready
	}{
		{"rbd admin key only", CephRBDDriver, "", sec("key", "K"), "", nil},
		{"rbd admin key, explicit admin", CephRBDDriver, "admin", sec("key", "K"), "", nil},
		{"rbd non-admin key only", CephRBDDriver, "kube", sec("key", "K"), "adminId=kube", nil},
		{"rbd non-admin with adminId", CephRBDDriver, "kube", sec("key", "K", "adminId", "kube"), "", nil},
		{"rbd adminId of another user", CephRBDDriver, "kube", sec("key", "K", "adminId", "other"), "adminId=kube", nil},
		{"rbd userID and userKey", CephRBDDriver, "kube", sec("userID", "kube", "userKey", "K"), "", nil},
		{"rbd userID of another user", CephRBDDriver, "kube", sec("userID", "other", "userKey", "K"), "userID=kube", nil},
		{"cephfs userID of another user", CephFSDriver, "", sec("userID", "nobody", "userKey", "K"), "userID=admin", nil},
		{"rbd single other field (in-tree read it)", CephRBDDriver, "", sec("password", "K"), "", ErrCephNoKey},
		{"rbd empty key", CephRBDDriver, "", sec("key", ""), "", ErrCephNoKey},
		{"rbd empty", CephRBDDriver, "", sec(), "", ErrCephNoKey},
		{"rbd missing", CephRBDDriver, "", nil, "", ErrCephSecretEmpty},
		{"cephfs key only", CephFSDriver, "", sec("key", "K"), "", ErrCephMissingID},
		{"cephfs userID only", CephFSDriver, "", sec("userID", "admin"), "", ErrCephMissingKey},
		{"cephfs userID and userKey", CephFSDriver, "u", sec("userID", "u", "userKey", "K"), "", nil},
		{"unknown driver", "example.com/x", "", sec("key", "K"), "", ErrCephSecretUnusable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *v1.Secret
			if tc.secret != nil {
				before = tc.secret.DeepCopy()
			}
			fixes, err := CephCSISecretReady(tc.secret, tc.driver, tc.user)
			if tc.err == nil && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			if tc.err != nil && (!errors.Is(err, tc.err) || !errors.Is(err, ErrCephSecretUnusable)) {
				t.Fatalf("error %v, want one wrapping %v and ErrCephSecretUnusable", err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "K\"") {
				t.Errorf("the error holds a value: %v", err)
			}
			got := ""
			for _, f := range fixes {
				got += f.Field + "=" + f.Value
			}
			if got != tc.fix {
				t.Errorf("fixes %q, want %q", got, tc.fix)
			}
			if tc.secret != nil && !reflect.DeepEqual(before, tc.secret) {
				t.Error("the secret was modified")
			}
		})
	}
}
