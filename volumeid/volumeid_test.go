package volumeid

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestClusterID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.70.53.126:6789", "b7f67366bb43f32e07d8a261a7840da9"},
		// What `md5sum <<<` would hash: the newline makes it another cluster.
		{"10.70.53.126:6789\n", "59df45780b8ee3815ba699f4aeca6744"},
	} {
		if got := ClusterID(tc.in); got != tc.want {
			t.Errorf("ClusterID(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if a, b := ClusterIDFromList([]string{"a:1", "b:2"}), ClusterID("a:1,b:2"); a != b {
		t.Errorf("ClusterIDFromList = %s, ClusterID of joined = %s", a, b)
	}
	if ClusterID("a:1,b:2") == ClusterID("a:1, b:2") {
		t.Error("spacing must change the clusterID")
	}
}

func TestRBDHandleReferenceExample(t *testing.T) {
	h, err := NewRBDHandle([]string{"10.70.53.126:6789"}, "replicapool", "kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003")
	if err != nil {
		t.Fatal(err)
	}
	const want = "mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c"
	if h.String() != want {
		t.Fatalf("String() = %s, want %s", h, want)
	}
	p, err := ParseRBDHandle(want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, p); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	c, err := CephCSIReadRBDHandle(want)
	if err != nil || c != h {
		t.Errorf("CephCSIReadRBDHandle = %+v, %v; want %+v", c, err, h)
	}
}

func TestNewRBDHandleUnrepresentable(t *testing.T) {
	mons := []string{"10.0.0.1:6789"}
	for _, tc := range []struct {
		name, pool, image string
		wantImage         string // what Ceph CSI resolves, "" when it fails
	}{
		{"no prefix", "rbd", "myimage", "kubernetes-dynamic-pvc-myimage"},
		{"underscore", "rbd", "kubernetes-dynamic-pvc-a_b", ""},
		{"image- inside", "rbd", "kubernetes-dynamic-pvc-image-x", "kubernetes-dynamic-pvc-"},
		{"empty pool", "", "kubernetes-dynamic-pvc-x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewRBDHandle(mons, tc.pool, tc.image)
			if !errors.Is(err, ErrUnrepresentable) {
				t.Fatalf("err = %v, want ErrUnrepresentable", err)
			}
			var ue *UnrepresentableError
			if !errors.As(err, &ue) {
				t.Fatalf("not an *UnrepresentableError: %T", err)
			}
			if ue.Handle != h.String() {
				t.Errorf("Handle = %q, want %q", ue.Handle, h.String())
			}
			if tc.wantImage == "" {
				if ue.CephCSIErr == nil {
					t.Errorf("Ceph CSI should fail to parse, read %+v", ue.CephCSIReads)
				}
			} else if ue.CephCSIReads.Image != tc.wantImage {
				t.Errorf("Ceph CSI reads image %q, want %q", ue.CephCSIReads.Image, tc.wantImage)
			}
			// The strict parser either refuses the handle or reads the
			// volume Ceph CSI would act on, never the one it was made for.
			if p, err := ParseRBDHandle(h.String()); err == nil && p == h {
				t.Errorf("strict parser read unrepresentable handle %q as the intended volume", h)
			}
		})
	}
}

func TestParseRBDHandleErrors(t *testing.T) {
	cid := strings.Repeat("a", 32)
	pool := hex.EncodeToString([]byte("rbd"))
	for _, s := range []string{
		"",
		"mig",
		"xig_mons-" + cid + "_image-x_" + pool,
		"mig_mons-" + cid[:31] + "_image-x_" + pool,
		"mig_mons-" + strings.ToUpper(cid) + "_image-x_" + pool,
		"mig_image-x_mons-" + cid + "_" + pool,
		"mig_mons-" + cid + "_image-_" + pool,
		"mig_mons-" + cid + "_image-x_",
		"mig_mons-" + cid + "_image-x_" + strings.ToUpper(hex.EncodeToString([]byte("z\xff"))),
		"mig_mons-" + cid + "_image-x_" + pool + "_" + pool,
		"mig_mons-" + cid + "_image-x_abc",
		"mig_mons-" + cid + "_image-ximage-y_" + pool,
	} {
		_, err := ParseRBDHandle(s)
		var pe *ParseError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Input != s {
			t.Errorf("ParseRBDHandle(%q) = %v, want a *ParseError matching ErrInvalid", s, err)
		}
		if IsRBDHandle(s) {
			t.Errorf("IsRBDHandle(%q) = true", s)
		}
	}
}

// Ceph CSI's substring test accepts what the strict one refuses.
func TestIsRBDHandleStricterThanCephCSI(t *testing.T) {
	// A Ceph CSI volume ID whose clusterID contains the magic substrings.
	s := "0001-0015-mig_mons-image-abcdef-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003"
	if IsRBDHandle(s) {
		t.Error("IsRBDHandle accepted a Ceph CSI volume ID")
	}
	if _, err := ParseCephCSIVolumeID(s); err != nil {
		t.Errorf("ParseCephCSIVolumeID(%q): %v", s, err)
	}
}

func TestCephCSIVolumeID(t *testing.T) {
	const s = "0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003"
	id, err := ParseCephCSIVolumeID(s)
	if err != nil {
		t.Fatal(err)
	}
	want := CephCSIVolumeID{Version: 1, ClusterID: "b7f67366bb43f32e07d8a261a7840da9", Location: 2, ObjectUUID: "c867ff35-3f04-11ec-b823-0242ac110003"}
	if diff := cmp.Diff(want, id); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if id.String() != s {
		t.Errorf("String() = %s", id)
	}
	// Negative locations are written as two's complement, as Ceph CSI does.
	neg := CephCSIVolumeID{Version: 1, ClusterID: "c", Location: -1, ObjectUUID: want.ObjectUUID}
	if got := neg.String(); !strings.Contains(got, "-ffffffffffffffff-") {
		t.Errorf("negative location: %s", got)
	}
	for _, bad := range []string{
		"",
		strings.Replace(s, "0001-", "0001_", 1),
		strings.Replace(s, "-0020-", "-0021-", 1),
		strings.Replace(s, "-0000000000000002-", "-000000000000000G-", 1),
		strings.Replace(s, "-0000000000000002-", "-0000000000000002_", 1),
		strings.Replace(s, "c867ff35-3f04", "c867ff35_3f04", 1),
		s + "x",
		"0001-0000--0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003",
	} {
		if _, err := ParseCephCSIVolumeID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseCephCSIVolumeID(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := (CephCSIVolumeID{Version: 1, ClusterID: strings.Repeat("x", 65), ObjectUUID: want.ObjectUUID}).Validate(); err == nil {
		t.Error("a 65-byte clusterID must be invalid")
	}
}

func TestVSpherePath(t *testing.T) {
	for _, tc := range []struct {
		in              string
		ds, path, clust string
	}{
		{"[vsanDatastore] kubevols/pvc-1.vmdk", "vsanDatastore", "kubevols/pvc-1.vmdk", ""},
		{"[DatastoreCluster/ds 1] kubevols/a b.vmdk", "DatastoreCluster/ds 1", "kubevols/a b.vmdk", "DatastoreCluster"},
	} {
		p, err := ParseVSpherePath(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if p.Datastore != tc.ds || p.Path != tc.path || p.Cluster() != tc.clust || p.String() != tc.in || !p.IsVMDK() {
			t.Errorf("%q parsed to %+v (cluster %q)", tc.in, p, p.Cluster())
		}
	}
	for _, bad := range []string{"", "ds] x.vmdk", "[ds x.vmdk", "[] x.vmdk", "[ds]x.vmdk", "[ds] ", "[ds]  x.vmdk", "[ds] x.vmdk "} {
		if _, err := ParseVSpherePath(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseVSpherePath(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCephFSHandle(t *testing.T) {
	h := NewCephFSHandle([]string{"10.70.53.126:6789"}, "myfs", "/volumes/a")
	s := h.String()
	if len(s) != CephFSHandleLen || !strings.HasPrefix(s, "mig_cephfs_b7f67366bb43f32e07d8a261a7840da9_") {
		t.Fatalf("handle %q", s)
	}
	p, err := ParseCephFSHandle(s)
	if err != nil || p != h {
		t.Fatalf("ParseCephFSHandle = %+v, %v", p, err)
	}
	for _, bad := range []string{"", s[:len(s)-1], strings.Replace(s, "mig_cephfs_", "mig_cephfz_", 1), strings.ToUpper(s), s[:43] + "-" + s[44:]} {
		if _, err := ParseCephFSHandle(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseCephFSHandle(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// --- properties ---

var hexDigits = "0123456789abcdef"

func genClusterID() *rapid.Generator[string] {
	return rapid.StringOfN(rapid.RuneFrom([]rune(hexDigits)), 32, 32, -1)
}

func genValidRBDHandle() *rapid.Generator[RBDHandle] {
	return rapid.Custom(func(t *rapid.T) RBDHandle {
		rest := rapid.StringMatching(`[a-z0-9][a-z0-9.-]{0,40}`).Filter(func(s string) bool { return !strings.Contains(s, "image-") }).Draw(t, "rest")
		return RBDHandle{
			ClusterID: genClusterID().Draw(t, "cid"),
			Pool:      rapid.StringN(1, 30, -1).Draw(t, "pool"),
			Image:     RBDImagePrefix + rest,
		}
	})
}

func TestRBDHandleRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genValidRBDHandle().Draw(t, "h")
		s := h.String()
		p, err := ParseRBDHandle(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if p != h {
			t.Fatalf("round trip: %+v != %+v", p, h)
		}
		if c, err := CephCSIReadRBDHandle(s); err != nil || c != h {
			t.Fatalf("Ceph CSI reads %+v, %v; want %+v", c, err, h)
		}
		b, err := h.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText = %q, %v", b, err)
		}
		var u RBDHandle
		if err := u.UnmarshalText(b); err != nil || u != h {
			t.Fatalf("UnmarshalText = %+v, %v", u, err)
		}
	})
}

// Anything the strict parser accepts, Ceph CSI reads the same way, and
// String gives it back.
func TestParseRBDHandleAgreesWithCephCSI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.Map(genValidRBDHandle(), func(h RBDHandle) string { return h.String() }),
			rapid.StringMatching(`mig_mons-[0-9a-f]{32}_image-[a-z_-]{0,12}_[0-9a-f]{0,8}`),
		).Draw(t, "s")
		p, err := ParseRBDHandle(s)
		c, cerr := CephCSIReadRBDHandle(s)
		if err != nil {
			return
		}
		if cerr != nil || c != p {
			t.Fatalf("strict %+v but Ceph CSI %+v, %v", p, c, cerr)
		}
		if p.String() != s {
			t.Fatalf("String() = %q, input %q", p.String(), s)
		}
	})
}

// NewRBDHandle's verdict equals what Ceph CSI does with the handle.
func TestNewRBDHandleVerdictProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mons := rapid.SliceOfN(rapid.String(), 1, 3).Draw(t, "mons")
		pool := rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "pool")
		image := rapid.OneOf(rapid.String(), rapid.Map(rapid.String(), func(s string) string { return RBDImagePrefix + s })).Draw(t, "image")
		h, err := NewRBDHandle(mons, pool, image)
		c, cerr := CephCSIReadRBDHandle(h.String())
		faithful := cerr == nil && c == h
		if faithful != (err == nil) {
			t.Fatalf("NewRBDHandle err=%v but Ceph CSI reads %+v, %v (want %+v)", err, c, cerr, h)
		}
	})
}

func TestCephCSIVolumeIDRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := CephCSIVolumeID{
			Version:    rapid.Uint16().Draw(t, "v"),
			ClusterID:  rapid.StringN(1, CephCSIMaxClusterIDLen, CephCSIMaxClusterIDLen).Filter(func(s string) bool { return len(s) <= CephCSIMaxClusterIDLen }).Draw(t, "cid"),
			Location:   rapid.Int64().Draw(t, "loc"),
			ObjectUUID: rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).Draw(t, "uuid"),
		}
		if err := id.Validate(); err != nil {
			t.Fatal(err)
		}
		s := id.String()
		p, err := ParseCephCSIVolumeID(s)
		if err != nil || p != id {
			t.Fatalf("Parse(%q) = %+v, %v", s, p, err)
		}
	})
}

func TestVSpherePathRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := VSpherePath{
			Datastore: rapid.StringMatching(`[^\]]{1,30}`).Draw(t, "ds"),
			Path: rapid.StringN(1, 30, -1).Filter(func(s string) bool {
				return strings.TrimSpace(s) == s
			}).Draw(t, "path"),
		}
		q, err := ParseVSpherePath(p.String())
		if err != nil || q != p {
			t.Fatalf("Parse(%q) = %+v, %v", p.String(), q, err)
		}
	})
}

func TestCephFSHandleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mons := rapid.SliceOfN(rapid.String(), 1, 4).Draw(t, "mons")
		fs := rapid.String().Draw(t, "fs")
		path := rapid.String().Draw(t, "path")
		h := NewCephFSHandle(mons, fs, path)
		s := h.String()
		if len(s) > 128 {
			t.Fatalf("handle longer than 128 bytes: %d", len(s))
		}
		p, err := ParseCephFSHandle(s)
		if err != nil || p != h || p.ClusterID != ClusterIDFromList(mons) {
			t.Fatalf("Parse = %+v, %v", p, err)
		}
		// Distinct triples give distinct handles.
		fs2 := rapid.String().Draw(t, "fs2")
		path2 := rapid.String().Draw(t, "path2")
		if (fs2 != fs || path2 != path) && NewCephFSHandle(mons, fs2, path2) == h {
			t.Fatalf("collision: (%q,%q) and (%q,%q)", fs, path, fs2, path2)
		}
		// Moving a byte between fields must not collide either.
		if fs != "" && NewCephFSHandle(mons, fs[:len(fs)-1], fs[len(fs)-1:]+path) == h {
			t.Fatal("boundary collision")
		}
	})
}

// AppendTo of every value type appends what String returns, whatever the
// buffer holds and however much room it has.
func TestAppendToProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SliceOf(rapid.Byte()).Draw(t, "prefix")
		b := append(make([]byte, 0, len(prefix)+rapid.IntRange(0, 300).Draw(t, "room")), prefix...)
		str := rapid.String()
		mons := rapid.SliceOfN(str, 1, 4).Draw(t, "mons")
		rh, _ := NewRBDHandle(mons, str.Draw(t, "pool"), str.Draw(t, "image"))
		ch := NewCephFSHandle(mons, str.Draw(t, "fs"), str.Draw(t, "path"))
		id := CephCSIVolumeID{Version: rapid.Uint16().Draw(t, "version"), ClusterID: str.Draw(t, "clusterID"),
			Location: rapid.Int64().Draw(t, "location"), ObjectUUID: str.Draw(t, "uuid")}
		vp := VSpherePath{Datastore: str.Draw(t, "ds"), Path: str.Draw(t, "vpath")}
		for _, v := range []interface {
			String() string
			AppendTo([]byte) []byte
		}{rh, ch, id, vp} {
			got := v.AppendTo(b)
			if string(got[:len(prefix)]) != string(prefix) || string(got[len(prefix):]) != v.String() {
				t.Fatalf("%T.AppendTo = %q after %q, want %q", v, got[len(prefix):], got[:len(prefix)], v.String())
			}
		}
	})
}

func TestParsersNeverPanic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		_, _ = ParseRBDHandle(s)
		_, _ = CephCSIReadRBDHandle(s)
		_, _ = ParseCephCSIVolumeID(s)
		_, _ = ParseVSpherePath(s)
		_, _ = ParseCephFSHandle(s)
		_ = IsRBDHandle(s)
		_ = LooksLikeVSpherePath(s)
	})
}
