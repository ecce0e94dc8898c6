package rewrite

import "testing"

// A reference's two spellings: kubectl's TYPE/NAME, and the kind with the
// object's name for messages.
func TestObjectRefWords(t *testing.T) {
	for _, tc := range []struct {
		r                  ObjectRef
		resource, readable string
	}{
		{PVRef("a"), "pv/a", "PersistentVolume a"},
		{ClassRef("b"), "storageclass/b", "StorageClass b"},
		{ObjectRef{Kind: "Secret", Namespace: "ns", Name: "s"}, "secret/s", "Secret ns/s"},
	} {
		if got := tc.r.Resource(); got != tc.resource {
			t.Errorf("%+v.Resource() = %q, want %q", tc.r, got, tc.resource)
		}
		if got := tc.r.String(); got != tc.readable {
			t.Errorf("%+v.String() = %q, want %q", tc.r, got, tc.readable)
		}
	}
	if PVRef("a") == ClassRef("a") {
		t.Error("a PV and a StorageClass of one name are the same reference")
	}
}
