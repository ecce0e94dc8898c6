package adopt

import (
	"fmt"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/volumeid"
)

// JoinInput is what the choice of an adopted Ceph volume's clusterID is
// made from.
type JoinInput struct {
	// Backend is plugin.RBDInTreePluginName or plugin.CephFSInTreePluginName.
	Backend string
	// Group is a CephFS subvolume's group (unused for RBD).
	Group string
	// FSID is the fsid of the Ceph cluster the volume is on; "" when it was
	// not read (no entry is joined then).
	FSID string
	// Config is the cluster config the driver reads.
	Config ceph.ClusterConfig
	// FSIDOf reads the fsid of the Ceph cluster at monitors (the Ceph
	// tools, connected to them); nil when Ceph is not read.
	FSIDOf func(monitors []string) (string, error)
}

// Joined is the deployment's entry an adopted volume's ID names.
type Joined struct {
	// ClusterID is that entry's clusterID; "" when no entry of the
	// deployment serves the volume (it keeps the migration's entry).
	ClusterID string
	// Why says, for each entry of the deployment not joined, why not.
	Why []string
	// Unread are the entries that would serve the volume, but whose Ceph
	// cluster was not compared with the volume's (no FSIDOf or FSID).
	Unread []string
}

// sampleUUID stands for a volume's UUID where only the length of a volume
// ID matters.
const sampleUUID = "00000000-0000-4000-8000-000000000000"

// JoinDeployment chooses the entry of the driver's own deployment that an
// adopted volume's ID names, so that the volume is one of that
// deployment's, like those it provisioned, and needs no migration entry
// afterwards. It is the first entry Ceph CSI serves (config order) that is
// not a migration entry (ceph.ClusterEntry.IsMigration), whose monitors
// reach the volume's Ceph cluster (the same fsid), and that serves the
// volume as it is: for RBD, no RADOS namespace (an in-tree image is in
// none, and Ceph CSI looks for the image and its journal in the entry's);
// for CephFS, the subvolume's group (Ceph CSI's journal does not record a
// group: the entry decides it).
func JoinDeployment(in JoinInput) Joined {
	var j Joined
	for _, e := range in.Config.Served() {
		if e.IsMigration() {
			continue
		}
		why := ""
		switch {
		case in.Backend == plugin.RBDInTreePluginName && e.RBD != nil && e.RBD.RadosNamespace != "":
			why = fmt.Sprintf("it has RBD RADOS namespace %q, and the image is in none", e.RBD.RadosNamespace)
		case in.Backend == plugin.CephFSInTreePluginName && groupOf(e) != in.Group:
			why = fmt.Sprintf("its CephFS subvolume group is %q, the subvolume's is %q", groupOf(e), in.Group)
		case (volumeid.CephCSIVolumeID{Version: 1, ClusterID: e.ClusterID, ObjectUUID: sampleUUID}).Validate() != nil:
			why = "the clusterID is too long for a Ceph CSI volume ID"
		case in.FSID == "" || in.FSIDOf == nil:
			j.Unread = append(j.Unread, e.ClusterID)
			continue
		default:
			fsid, err := in.FSIDOf(e.Monitors)
			switch {
			case err != nil:
				why = fmt.Sprintf("its monitors %v: %v", e.Monitors, err)
			case fsid != in.FSID:
				why = fmt.Sprintf("its monitors reach Ceph cluster %s, the volume is on %s", fsid, in.FSID)
			default:
				return Joined{ClusterID: e.ClusterID}
			}
		}
		j.Why = append(j.Why, fmt.Sprintf("entry %s: %s", e.ClusterID, why))
	}
	return j
}

// groupOf is the subvolume group Ceph CSI gives the CephFS volumes of e.
func groupOf(e ceph.ClusterEntry) string {
	if e.CephFS != nil && e.CephFS.SubvolumeGroup != "" {
		return e.CephFS.SubvolumeGroup
	}
	return ceph.DefaultSubvolumeGroup
}
