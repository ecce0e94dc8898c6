package ceph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/plugins/ceph"
)

var (
	errMissing = errors.New("missing configuration for cluster ID")
	errEmpty   = errors.New("empty monitor list for cluster ID")
)

// cephCSIMons is how Ceph CSI v3.5 to v3.12 finds the monitors of a
// clusterID (readClusterInfo and Mons in internal/util/csiconfig.go): the
// whole file decoded, the first entry with the clusterID, its monitors
// joined with ",", an error when there is no such entry or it has none.
func cephCSIMons(data []byte, clusterID string) (string, error) {
	var config []struct {
		ClusterID string   `json:"clusterID"`
		Monitors  []string `json:"monitors"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		return "", err
	}
	for i := range config {
		if config[i].ClusterID == clusterID {
			if len(config[i].Monitors) == 0 {
				return "", errEmpty
			}
			return strings.Join(config[i].Monitors, ","), nil
		}
	}
	return "", errMissing
}

var ids = []string{"c1", "c2", "C1", ""}

// configFile generates config.json files as admins have them: entries
// without a clusterID or monitors, clusterIDs listed twice, CephFS and RBD
// settings, keys in another case (encoding/json matches them, in Ceph CSI
// too).
func configFile(t *rapid.T) []byte {
	n := rapid.IntRange(0, 6).Draw(t, "entries")
	var entries []string
	for i := 0; i < n; i++ {
		var members []string
		switch rapid.IntRange(0, 5).Draw(t, "idForm") {
		case 0:
		case 1:
			members = append(members, fmt.Sprintf(`"clusterid":%q`, rapid.SampledFrom(ids).Draw(t, "id")))
		default:
			members = append(members, fmt.Sprintf(`"clusterID":%q`, rapid.SampledFrom(ids).Draw(t, "id")))
		}
		switch rapid.IntRange(0, 5).Draw(t, "monForm") {
		case 0:
		case 1:
			members = append(members, `"monitors":null`)
		case 2:
			members = append(members, `"monitors":[]`)
		default:
			mons := rapid.SliceOfN(rapid.SampledFrom([]string{"10.0.0.1:6789", "10.0.0.2:6789", "mon-a:3300", ""}), 1, 3).Draw(t, "mons")
			b, _ := json.Marshal(mons)
			members = append(members, `"monitors":`+string(b))
		}
		if rapid.Bool().Draw(t, "extra") {
			members = append(members, rapid.SampledFrom([]string{`"cephFS":{"subvolumeGroup":"csi"}`, `"rbd":{"radosNamespace":"ns"}`, `"readAffinity":{}`}).Draw(t, "member"))
		}
		perm := rapid.Permutation(members).Draw(t, "order")
		entries = append(entries, "{"+strings.Join(perm, ",")+"}")
	}
	return []byte("[" + strings.Join(entries, ",") + "]")
}

// Wherever Ceph CSI finds monitors, the lookup finds the same ones, unless
// another entry with monitors has the clusterID with other monitors; where
// Ceph CSI fails, the lookup fails for the same reason.
func TestLookupAgreesWithCephCSIProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := configFile(t)
		cfg, err := ceph.ParseClusterConfig(data)
		if err != nil {
			t.Fatalf("%s: refused: %v", data, err)
		}
		for _, id := range append(ids, "c3") {
			want, theirErr := cephCSIMons(data, id)
			mons, err := cfg.Lookup(id)
			var le *ceph.LookupError
			if err != nil && (!errors.As(err, &le) || le.ClusterID != id) {
				t.Fatalf("%s: %q: error %v is not a *LookupError for the clusterID", data, id, err)
			}
			switch {
			case errors.Is(theirErr, errMissing):
				if !errors.Is(err, ceph.ErrNoClusterEntry) {
					t.Fatalf("%s: %q: Ceph CSI finds no entry, the lookup gives %q, %v", data, id, mons, err)
				}
			case errors.Is(theirErr, errEmpty):
				if !errors.Is(err, ceph.ErrNoMonitors) {
					t.Fatalf("%s: %q: Ceph CSI finds no monitors, the lookup gives %q, %v", data, id, mons, err)
				}
			case theirErr != nil:
				t.Fatalf("%s: Ceph CSI cannot read it: %v", data, theirErr)
			case errors.Is(err, ceph.ErrAmbiguousClusterID):
				if len(le.Entries) != 2 {
					t.Fatalf("%s: %q: ambiguous entries %v", data, id, le.Entries)
				}
				es := cfg.Entries()
				a, b := es[le.Entries[0]], es[le.Entries[1]]
				if a.ClusterID != id || b.ClusterID != id || len(a.Monitors) == 0 || len(b.Monitors) == 0 || slices.Equal(a.Monitors, b.Monitors) {
					t.Fatalf("%s: %q: entries %+v and %+v are not ambiguous", data, id, a, b)
				}
			case err != nil:
				t.Fatalf("%s: %q: Ceph CSI uses %q, the lookup fails: %v", data, id, want, err)
			case strings.Join(mons, ",") != want:
				t.Fatalf("%s: %q: Ceph CSI uses %q, the lookup %q", data, id, want, mons)
			}
		}
	})
}

func TestClusterConfig(t *testing.T) {
	data := `[
		{"clusterID": "cephfs-only", "cephFS": {"subvolumeGroup": "csi"}},
		{"clusterID": "a", "monitors": ["10.0.0.1:6789"], "rbd": {"radosNamespace": "x"}},
		{"monitors": ["10.0.0.9:6789"]},
		{"clusterID": "a", "monitors": ["10.0.0.1:6789"]},
		{"clusterID": "b", "monitors": ["10.0.0.2:6789"]},
		{"clusterID": "b", "monitors": ["10.0.0.3:6789"]},
		{"clusterID": "a", "monitors": []}
	]`
	cfg, err := ceph.ParseClusterConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if mons, err := cfg.Lookup("a"); err != nil || !slices.Equal(mons, []string{"10.0.0.1:6789"}) {
		t.Errorf("a: %q, %v", mons, err)
	}
	for id, kind := range map[string]error{"cephfs-only": ceph.ErrNoMonitors, "b": ceph.ErrAmbiguousClusterID, "z": ceph.ErrNoClusterEntry} {
		if _, err := cfg.Lookup(id); !errors.Is(err, kind) {
			t.Errorf("%s: %v, want %v", id, err, kind)
		}
	}
	want := []string{
		`entry 0: clusterID "cephfs-only" has no monitors; Ceph CSI fails every volume of this cluster`,
		`entry 2: clusterID is empty; no volume can use it`,
		`entry 3: clusterID "a" again (entry 1); Ceph CSI ignores this entry`,
		`entry 5: clusterID "b" again, with monitors ["10.0.0.3:6789"] other than those of entry 4; Ceph CSI uses entry 4, translations that need this clusterID fail`,
		`entry 6: clusterID "a" again (entry 1); Ceph CSI ignores this entry`,
	}
	if diff := cmp.Diff(want, cfg.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "null", "{}", `[{"monitors": "a:6789"}]`, "[1]"} {
		if _, err := ceph.ParseClusterConfig([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The settings migration reads survive parsing: an RBD rados namespace
// (the adoption's precondition) and a CephFS subvolume group (the entry
// an adopted subvolume of that group needs).
func TestParsedSettings(t *testing.T) {
	c, err := ceph.ParseClusterConfig([]byte(`[
		{"clusterID":"a","monitors":["m1:6789"],"rbd":{"radosNamespace":"ns1"}},
		{"clusterID":"a-kubernetes","monitors":["m1:6789"],"cephFS":{"subvolumeGroup":"kubernetes"}},
		{"clusterID":"b","monitors":["m2:6789"],"cephFS":{"subvolumeGroup":"kubernetes"}},
		{"clusterID":"a","monitors":["m1:6789"],"rbd":{"radosNamespace":"ignored"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RBDRadosNamespace("a"); got != "ns1" {
		t.Errorf("RBDRadosNamespace(a) = %q, want ns1", got)
	}
	for _, tc := range []struct {
		cluster, group, want string
		ok                   bool
	}{
		{"a", "csi", "a", true},
		{"a", "kubernetes", "a-kubernetes", true},
		{"b", "kubernetes", "b", true},
		{"a", "other", "", false},
		{"missing", "csi", "", false},
	} {
		got, ok := c.CephFSGroupClusterID(tc.cluster, tc.group)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CephFSGroupClusterID(%q, %q) = %q, %v; want %q, %v", tc.cluster, tc.group, got, ok, tc.want, tc.ok)
		}
	}
	base := ceph.EntryFor([]string{"m1:6789"})
	e := ceph.CephFSGroupEntry(base, "kubernetes")
	if e.ClusterID != base.ClusterID+"-kubernetes" || e.CephFS == nil || e.CephFS.SubvolumeGroup != "kubernetes" {
		t.Errorf("ceph.CephFSGroupEntry: %+v", e)
	}
	long := ceph.CephFSGroupEntry(base, strings.Repeat("g", 40))
	if len(long.ClusterID) > 64 || long.ClusterID == base.ClusterID {
		t.Errorf("ceph.CephFSGroupEntry with a long group: clusterID %q", long.ClusterID)
	}
	if e := ceph.CephFSGroupEntry(base, ceph.DefaultSubvolumeGroup); e.ClusterID != base.ClusterID || e.CephFS != nil {
		t.Errorf("ceph.CephFSGroupEntry(csi) = %+v, want the base entry", e)
	}
	out, err := json.Marshal(ceph.NewClusterConfig(e, ceph.CephFSGroupEntry(base, "kubernetes")))
	if err != nil || !strings.Contains(string(out), `"cephFS":{"subvolumeGroup":"kubernetes"}`) {
		t.Errorf("MarshalJSON: %s, %v", out, err)
	}
}
