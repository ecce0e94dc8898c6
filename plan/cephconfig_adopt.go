package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
)

// joinDeployments says, for each Ceph volume an adoption makes native,
// which clusterID its volume ID will name (adopt.JoinDeployment): an entry
// of its driver's own deployment where one serves its Ceph cluster, else
// its migration entry.
func (p *Planner) joinDeployments(plan *Plan, at volumeIndex) []volumeNote {
	var notes []volumeNote
	var fsidOf func([]string) (string, error)
	if readFSID := p.opts.CephFSID; readFSID != nil {
		type read struct {
			fsid string
			err  error
		}
		memo := map[string]read{} // by monitors
		fsidOf = func(mons []string) (string, error) {
			key := strings.Join(mons, ",")
			r, ok := memo[key]
			if !ok {
				r.fsid, r.err = readFSID(mons)
				memo[key] = r
			}
			return r.fsid, r.err
		}
	}
	for _, inTree := range cephBackends {
		driver := p.drivers.driverName(inTree)
		i := slices.IndexFunc(plan.CephCSIConfig, func(cp CephCSIConfigPlan) bool { return cp.Reason == "" && slices.Contains(cp.Drivers, driver) })
		var cfg ceph.ClusterConfig
		if i >= 0 {
			cfg = ceph.NewClusterConfig(plan.CephCSIConfig[i].Entries...)
		}
		needs := p.ceph.config.needs[inTree]
		for _, id := range slices.Sorted(maps.Keys(needs)) {
			n := needs[id]
			for _, pv := range n.volumes {
				if plan.Volumes[at[pv]].Form != string(adopt.FormNative) {
					continue
				}
				own := id
				if inTree == plugin.CephFSInTreePluginName {
					own = ceph.CephFSGroupEntry(n.entry, p.ceph.groups[pv]).ClusterID
				}
				in := adopt.JoinInput{Backend: inTree, Group: p.ceph.groups[pv], Config: cfg, FSIDOf: fsidOf}
				var readErr error
				if fsidOf != nil {
					in.FSID, readErr = fsidOf(n.entry.Monitors)
				}
				j := adopt.JoinDeployment(in)
				n := volumeNote{pv: pv, adoptClusterID: own}
				switch {
				case j.ClusterID != "":
					n.adoptClusterID = j.ClusterID
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names clusterID %s, the entry of %s's deployment for the same Ceph cluster (same fsid): a volume of that deployment, which needs no migration entry afterwards", j.ClusterID, driver))
				case len(j.Unread) > 0:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names clusterID %s of %s's deployment if that entry's monitors reach the same Ceph cluster (the adoption compares fsids), else the migration entry %s", j.Unread[0], driver, own))
				case readErr != nil:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names the migration entry %s: the volume's Ceph cluster was not read (%v)", own, readErr))
				case len(j.Why) > 0:
					n.formWhy = append(n.formWhy, fmt.Sprintf("adopted, its volume ID names the migration entry %s: no entry of %s's deployment serves it (%s)", own, driver, strings.Join(j.Why, "; ")))
				}
				notes = append(notes, n)
			}
		}
	}
	return notes
}
