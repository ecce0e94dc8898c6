package adopt_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// Two Ceph clusters, as their monitors reach them; anything else is not
// reached.
var fsids = map[string]string{
	"10.0.0.1:6789": "fsid-a", "10.0.0.2:6789": "fsid-a", "10.0.0.1:6789,10.0.0.2:6789": "fsid-a",
	"10.9.0.1:6789": "fsid-b",
}

func fsidOf(mons []string) (string, error) {
	if f, ok := fsids[strings.Join(mons, ",")]; ok {
		return f, nil
	}
	return "", errors.New("connection timed out")
}

func TestJoinDeployment(t *testing.T) {
	migration := ceph.EntryFor([]string{"10.0.0.1:6789", "10.0.0.2:6789"})
	group := ceph.CephFSGroupEntry(migration, "team")
	rook := ceph.ClusterEntry{ClusterID: "rook-ceph", Monitors: []string{"10.0.0.2:6789"}}
	other := ceph.ClusterEntry{ClusterID: "other", Monitors: []string{"10.9.0.1:6789"}}
	gone := ceph.ClusterEntry{ClusterID: "gone", Monitors: []string{"10.7.0.1:6789"}}
	ns := ceph.ClusterEntry{ClusterID: "tenant", Monitors: []string{"10.0.0.1:6789"}, RBD: &ceph.RBDSettings{RadosNamespace: "t1"}}
	teamFS := ceph.ClusterEntry{ClusterID: "fs-team", Monitors: []string{"10.0.0.1:6789"}, CephFS: &ceph.CephFSSettings{SubvolumeGroup: "team"}}
	long := ceph.ClusterEntry{ClusterID: strings.Repeat("x", 70), Monitors: []string{"10.0.0.1:6789"}}
	for _, tc := range []struct {
		name    string
		backend string
		group   string
		fsid    string
		noRead  bool
		entries []ceph.ClusterEntry
		want    adopt.Joined
	}{
		{name: "the deployment's entry for the same cluster, after the migration's", backend: plugin.RBDInTreePluginName, fsid: "fsid-a",
			entries: []ceph.ClusterEntry{migration, other, rook}, want: adopt.Joined{ClusterID: "rook-ceph"}},
		{name: "only the migration's entry", backend: plugin.RBDInTreePluginName, fsid: "fsid-a",
			entries: []ceph.ClusterEntry{migration, group}, want: adopt.Joined{}},
		{name: "another cluster, one not reached", backend: plugin.RBDInTreePluginName, fsid: "fsid-a", entries: []ceph.ClusterEntry{other, gone},
			want: adopt.Joined{Why: []string{"entry other: its monitors reach Ceph cluster fsid-b, the volume is on fsid-a",
				"entry gone: its monitors [10.7.0.1:6789]: connection timed out"}}},
		{name: "an RBD entry with a RADOS namespace", backend: plugin.RBDInTreePluginName, fsid: "fsid-a", entries: []ceph.ClusterEntry{ns, rook},
			want: adopt.Joined{ClusterID: "rook-ceph"}},
		{name: "a clusterID too long for a volume ID", backend: plugin.RBDInTreePluginName, fsid: "fsid-a", entries: []ceph.ClusterEntry{long},
			want: adopt.Joined{Why: []string{"entry " + long.ClusterID + ": the clusterID is too long for a Ceph CSI volume ID"}}},
		{name: "CephFS in the default group", backend: plugin.CephFSInTreePluginName, group: ceph.DefaultSubvolumeGroup, fsid: "fsid-a",
			entries: []ceph.ClusterEntry{teamFS, rook}, want: adopt.Joined{ClusterID: "rook-ceph"}},
		{name: "CephFS in another group", backend: plugin.CephFSInTreePluginName, group: "team", fsid: "fsid-a",
			entries: []ceph.ClusterEntry{rook, group, teamFS}, want: adopt.Joined{ClusterID: "fs-team"}},
		{name: "Ceph not read", backend: plugin.RBDInTreePluginName, noRead: true, entries: []ceph.ClusterEntry{ns, other, rook},
			want: adopt.Joined{Why: []string{`entry tenant: it has RBD RADOS namespace "t1", and the image is in none`}, Unread: []string{"other", "rook-ceph"}}},
		{name: "a clusterID listed twice with other monitors is not served", backend: plugin.RBDInTreePluginName, fsid: "fsid-a",
			entries: []ceph.ClusterEntry{{ClusterID: "rook-ceph", Monitors: []string{"10.9.0.1:6789"}}, rook}, want: adopt.Joined{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := adopt.JoinInput{Backend: tc.backend, Group: tc.group, FSID: tc.fsid, Config: ceph.NewClusterConfig(tc.entries...), FSIDOf: fsidOf}
			if tc.noRead {
				in.FSIDOf = nil
			}
			if diff := cmp.Diff(tc.want, adopt.JoinDeployment(in)); diff != "" {
				t.Errorf("JoinDeployment (-want +got):\n%s", diff)
			}
		})
	}
}

// Whatever the config, the entry joined is one Ceph CSI serves, not a
// migration entry, on the volume's cluster, and serving the volume as it
// is; and a config that has such an entry gets one joined.
func TestJoinDeploymentProperty(t *testing.T) {
	mons := [][]string{{"10.0.0.1:6789"}, {"10.0.0.2:6789"}, {"10.0.0.1:6789", "10.0.0.2:6789"}, {"10.9.0.1:6789"}, {"10.7.0.1:6789"}, {}}
	rapid.Check(t, func(rt *rapid.T) {
		var entries []ceph.ClusterEntry
		for range rapid.IntRange(0, 6).Draw(rt, "n") {
			m := rapid.SampledFrom(mons).Draw(rt, "monitors")
			e := ceph.ClusterEntry{ClusterID: rapid.SampledFrom([]string{"rook-ceph", "a", "b", ceph.EntryFor(m).ClusterID}).Draw(rt, "id"), Monitors: m}
			if rapid.Bool().Draw(rt, "ns") {
				e.RBD = &ceph.RBDSettings{RadosNamespace: "t"}
			}
			if rapid.Bool().Draw(rt, "group") {
				e.CephFS = &ceph.CephFSSettings{SubvolumeGroup: rapid.SampledFrom([]string{"", "csi", "team"}).Draw(rt, "g")}
			}
			entries = append(entries, e)
		}
		backend := rapid.SampledFrom([]string{plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName}).Draw(rt, "backend")
		group := rapid.SampledFrom([]string{"csi", "team"}).Draw(rt, "volume group")
		cfg := ceph.NewClusterConfig(entries...)
		before := cfg.Entries()
		j := adopt.JoinDeployment(adopt.JoinInput{Backend: backend, Group: group, FSID: "fsid-a", Config: cfg, FSIDOf: fsidOf})
		if diff := cmp.Diff(before, cfg.Entries()); diff != "" {
			rt.Fatalf("config modified:\n%s", diff)
		}
		suits := func(e ceph.ClusterEntry) bool {
			g := ceph.DefaultSubvolumeGroup
			if e.CephFS != nil && e.CephFS.SubvolumeGroup != "" {
				g = e.CephFS.SubvolumeGroup
			}
			f, err := fsidOf(e.Monitors)
			return !e.IsMigration() && err == nil && f == "fsid-a" &&
				(backend == plugin.RBDInTreePluginName && (e.RBD == nil || e.RBD.RadosNamespace == "") || backend == plugin.CephFSInTreePluginName && g == group)
		}
		served := cfg.Served()
		want := slices.IndexFunc(served, suits)
		switch {
		case want < 0 && j.ClusterID != "":
			rt.Fatalf("joined %s, which does not serve the volume (entries %+v)", j.ClusterID, entries)
		case want >= 0 && j.ClusterID != served[want].ClusterID:
			rt.Fatalf("joined %q, want %s (entries %+v; why %q)", j.ClusterID, served[want].ClusterID, entries, j.Why)
		case j.ClusterID != "" && len(j.Why) > 0:
			rt.Fatalf("joined %s, with reasons not to: %q", j.ClusterID, j.Why)
		}
	})
}

// An RBD volume that joins the deployment's entry names it in its volume
// ID and attributes; its undo gives back the migration handle's clusterID.
func TestRBDJoined(t *testing.T) {
	pv := migrated(t, "kubernetes-dynamic-pvc-"+uuid, "")
	im := &adopt.Image{Pool: "kube", PoolID: 7, Name: "kubernetes-dynamic-pvc-" + uuid, ID: "10226b8b4567", Format: 2, Features: []string{"layering"}}
	d, err := adopt.RBD(adopt.RBDInput{PV: pv, Image: im, ClusterID: "rook-ceph"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.PV.Spec.CSI.VolumeHandle, "0001-0009-rook-ceph-0000000000000007-"+uuid; got != want {
		t.Errorf("volume handle %s, want %s", got, want)
	}
	if got := d.PV.Spec.CSI.VolumeAttributes["clusterID"]; got != "rook-ceph" {
		t.Errorf("attribute clusterID %q, want rook-ceph", got)
	}
	back, _, _, err := adopt.Unadopted(d.PV)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pv, back); diff != "" {
		t.Errorf("undo (-migrated +back):\n%s", diff)
	}
}
