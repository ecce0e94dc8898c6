package adopt

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/volumeid"
)

// CephFS adoption: a static CephFS volume whose path is a subvolume Ceph's
// volumes module serves (/volumes/<group>/<name>, such as those the old
// ceph_volume_client made) is registered in Ceph CSI's CephFS journal (the
// file system's metadata pool, RADOS namespace JournalNamespaceCephFS) with
// the subvolume's name; the volume ID carries the file system's ID. Ceph
// CSI's journal does not record the group: the cluster entry of the volume
// ID's clusterID names it (cephFS.subvolumeGroup). Facts: Ceph CSI v3.12.2,
// internal/cephfs/store/volumeoptions.go NewVolumeOptionsFromVolID, and
// Ceph 16.2's mgr/volumes, checked by cephtest.

// JournalNamespaceCephFS is the RADOS namespace of Ceph CSI's CephFS journal
// (v3.12.2: fixed, "csi").
const JournalNamespaceCephFS = "csi"

// AnnAdoptedPrevious records, in JSON, what the adoption of a CephFS volume
// changed besides the handle and attributes (secret references and
// annotations), so that the undo puts it back.
const AnnAdoptedPrevious = "csimigrate.io/adopted-previous"

// Subvolume is what Ceph says of a CephFS subvolume (`ceph fs subvolume
// info`) and its file system (`ceph fs ls`, `ceph fs get`).
type Subvolume struct {
	FS           string
	FSCID        int64
	MetadataPool string
	Group, Name  string
	// Path is where Ceph's volumes module places the subvolume.
	Path string
	// Features are the subvolume's ("snapshot-clone", ...).
	Features []string
}

// CanClone reports whether Ceph's volumes module snapshots and clones the
// subvolume.
func (s Subvolume) CanClone() bool { return slices.Contains(s.Features, "snapshot-clone") }

// reservedGroups are the directories of /volumes Ceph's volumes module
// keeps for itself.
var reservedGroups = []string{"_legacy", "_index", "_deleting"}

// SubvolumeOf is the subvolume group and name a CephFS root path names:
// exactly "/volumes/<group>/<name>", the place Ceph's volumes module looks
// for a legacy subvolume. ok is false for any other path.
func SubvolumeOf(rootPath string) (group, name string, ok bool) {
	rest, found := strings.CutPrefix(rootPath, "/volumes/")
	if !found {
		return "", "", false
	}
	group, name, found = strings.Cut(rest, "/")
	if !found || group == "" || name == "" || strings.Contains(name, "/") || slices.Contains(reservedGroups, group) ||
		strings.HasPrefix(group, ".") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return "", "", false
	}
	return group, name, true
}

// CephFSInput is what the adoption of one CephFS volume is decided from.
type CephFSInput struct {
	// PV is the static CSI PV of cephfs.csi.ceph.com (the rewrite's
	// replacement of an in-tree CephFS PV). It is not modified.
	PV *v1.PersistentVolume
	// Subvolume is what Ceph says of the subvolume the path names; nil
	// when Ceph was not read (the decision is then a prediction) or the
	// volumes module does not serve it (NotSubvolume says why).
	Subvolume *Subvolume
	// NotSubvolume is what Ceph's volumes module answered for the path
	// when it does not serve it as a subvolume.
	NotSubvolume string
	// ClusterID is the clusterID of the cluster entry whose
	// cephFS.subvolumeGroup is the subvolume's group, on the PV's cluster;
	// "" when the cluster config has none.
	ClusterID string
	// Secret is the Secret with adminID and adminKey that Ceph CSI's
	// CephFS driver reads for its own volumes (staging, expansion,
	// deletion); nil when none is given.
	Secret *v1.SecretReference
	// ReferencedBy names the other PVs that name the same path.
	ReferencedBy []string
	// UUID is the journal uuid for a subvolume whose name does not end in
	// a UUID; ignored otherwise.
	UUID string
	// Instance is Ceph CSI's --instanceid; "" means DefaultInstance.
	Instance string
	// FormOnly decides the form alone, as a plan does before the run, for
	// an adoption given the admin Secret (Secret is not read): the UUID
	// the run would draw is not needed, and no volume ID, journal entry or
	// PV is built.
	FormOnly bool
}

// CephFS decides what a migrated static CephFS volume becomes: native when
// its path is a subvolume Ceph's volumes module serves, the cluster config
// has an entry for its group and an admin secret is given; static (stage
// only) otherwise, with the reasons. An error (wrapping ErrNotAdoptable)
// means the input is not a static CSI PV of cephfs.csi.ceph.com.
func CephFS(in CephFSInput) (Decision, error) {
	pv := in.PV
	if pv == nil || pv.Spec.CSI == nil || plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) != plugin.CephFSInTreePluginName || pv.Spec.CSI.VolumeAttributes["rootPath"] == "" {
		return Decision{}, fmt.Errorf("%w: want a static CSI PV of %s (attribute rootPath)", ErrNotAdoptable, plugin.CephFSDriverName)
	}
	if pv.Name == "" {
		return Decision{}, fmt.Errorf("%w: metadata.name is empty: the journal names the volume by its PV's name", ErrNotAdoptable)
	}
	attrs := pv.Spec.CSI.VolumeAttributes
	root := attrs["rootPath"]
	d := Decision{Form: FormNative}
	block := func(why string) { d.stay(FormStatic, why) }
	group, name, ok := SubvolumeOf(root)
	if !ok {
		block(fmt.Sprintf("path %s is not /volumes/<group>/<name>, where Ceph's volumes module finds a subvolume: it stays a static volume (staged only: no expansion, snapshots, clones or deletion by Ceph CSI)", root))
		d.Features = FeaturesOf(d.Form, false)
		return d, nil
	}
	d.Group, d.Subvolume = group, name
	if in.ClusterID == "" {
		block(fmt.Sprintf("Ceph CSI's cluster config has no entry with cephFS.subvolumeGroup %q for the monitors of clusterID %s: Ceph CSI's journal does not record a volume's group, the entry decides it (an entry with that group for the cluster serves it)", group, attrs["clusterID"]))
	}
	if !in.FormOnly && (in.Secret == nil || in.Secret.Name == "") {
		block("no Secret with adminID and adminKey for Ceph CSI's CephFS driver was given: it stages, expands and deletes its own volumes with those")
	}
	if len(in.ReferencedBy) > 0 {
		block(fmt.Sprintf("PVs %s name the same path: deleting either would destroy it", strings.Join(in.ReferencedBy, ", ")))
	}
	uuid, named := suffixUUID(name)
	if !named {
		uuid = in.UUID
	}
	d.KeepRetain = cephFSKeepRetain(pv, group, name, named)
	clone, err := d.judgeSubvolume(in, root, group, name)
	if err != nil {
		return Decision{}, err
	}
	if d.Form == FormNative && !named && uuid == "" && !in.FormOnly {
		return Decision{}, errors.New("adopt: a subvolume whose name does not end in a UUID needs CephFSInput.UUID")
	}
	sv := in.Subvolume
	return d.finish(clone, in.FormOnly, func() (volumeid.CephCSIVolumeID, Journal) {
		return volumeid.CephCSIVolumeID{Version: 1, ClusterID: in.ClusterID, Location: sv.FSCID, ObjectUUID: uuid},
			Journal{Pool: sv.MetadataPool, Namespace: JournalNamespaceCephFS, Instance: in.Instance, UUID: uuid, ImageName: name, VolName: pv.Name}
	}, func(d Decision) (*v1.PersistentVolume, error) { return adoptedCephFSPV(pv, d, sv, *in.Secret) })
}

// cephFSKeepRetain says why an adopted CephFS PV keeps reclaim policy
// Retain ("" when Ceph CSI's delete would remove exactly what a provisioner
// of this volume deleted before).
func cephFSKeepRetain(pv *v1.PersistentVolume, group, name string, named bool) string {
	var keep []string
	if !named {
		keep = append(keep, fmt.Sprintf("subvolume %s/%s does not end in a UUID, and Ceph CSI's delete derives the journal's uuid from the name: it would remove the subvolume and then fail", group, name))
	}
	// Only the volumes of ceph.com/cephfs were ever deleted with their
	// claims (Kubernetes' CephFS plugin has no deleter): Delete on any
	// other never removed data, and must not start to.
	by, recorded := pv.Annotations[plugin.AnnOriginalProvisionedBy]
	if !recorded {
		by = pv.Annotations[plugin.AnnProvisionedBy]
	}
	if by != plugin.CephFSExternalProvisioner {
		keep = append(keep, fmt.Sprintf("no provisioner ever deleted this volume (it was not made by %s, and Kubernetes' CephFS plugin deletes nothing): adopted, Ceph CSI would delete the subvolume and its data with the claim; set Delete on the PV to have that", plugin.CephFSExternalProvisioner))
	}
	if len(keep) == 0 {
		return ""
	}
	return strings.Join(keep, "; ") + "; so the PV keeps reclaim policy Retain"
}

// judgeSubvolume judges the directory at root by what Ceph's volumes module
// says of subvolume group/name (in.Subvolume, in.NotSubvolume), or predicts
// when Ceph was not read; it returns whether the subvolume can be cloned
// (snapshots and clones).
func (d *Decision) judgeSubvolume(in CephFSInput, root, group, name string) (bool, error) {
	switch sv := in.Subvolume; {
	case sv == nil && in.NotSubvolume != "":
		d.stay(FormStatic, fmt.Sprintf("Ceph's volumes module does not serve %s as subvolume %s of group %s (%s): a directory made by hand has no explicit data-pool layout; an admin can give it one (setfattr -n ceph.dir.layout.pool -v <data pool> on the directory, which changes only where new files go)", root, name, group, in.NotSubvolume))
	case sv == nil:
		d.Predicted = true
		d.native = append(d.native, "whether Ceph's volumes module serves the directory as a subvolume is not known without reading Ceph (a directory made by hand, without an explicit layout, is not)")
		return true, nil
	case sv.Group != group || sv.Name != name:
		return false, fmt.Errorf("%w: the subvolume read is %s/%s, the path names %s/%s", ErrNotAdoptable, sv.Group, sv.Name, group, name)
	case sv.Path != root:
		d.stay(FormStatic, fmt.Sprintf("Ceph's volumes module places subvolume %s/%s at %s, not at the PV's path %s", group, name, sv.Path, root))
	default:
		if sv.CanClone() {
			return true, nil
		}
		d.native = append(d.native, fmt.Sprintf("subvolume %s/%s lacks the snapshot-clone feature (%s): no snapshots or clones", group, name, strings.Join(sv.Features, ",")))
	}
	return false, nil
}

// previous is what the adoption of a CephFS volume changed besides the
// handle and attributes: nil values were absent.
type previous struct {
	NodeStage        *v1.SecretReference `json:"nodeStageSecretRef"`
	ControllerExpand *v1.SecretReference `json:"controllerExpandSecretRef"`
	Annotations      map[string]*string  `json:"annotations"`
}

// adoptedCephFSPV is pv as one of Ceph CSI's own CephFS volumes: the native
// handle, the attributes Ceph CSI's CreateVolume returns, the admin secret
// for staging, expansion and deletion, and what the undo needs recorded.
func adoptedCephFSPV(pv *v1.PersistentVolume, d Decision, sv *Subvolume, secret v1.SecretReference) (*v1.PersistentVolume, error) {
	out := pv.DeepCopy()
	src := out.Spec.CSI
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	prev := previous{NodeStage: pv.Spec.CSI.NodeStageSecretRef, ControllerExpand: pv.Spec.CSI.ControllerExpandSecretRef, Annotations: map[string]*string{}}
	set := map[string]string{
		plugin.AnnProvisionedBy:            pv.Spec.CSI.Driver,
		secrets.AnnDeletionSecretName:      secret.Name,
		secrets.AnnDeletionSecretNamespace: secret.Namespace,
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if v, ok := pv.Annotations[k]; ok {
			prev.Annotations[k] = &v
		} else {
			prev.Annotations[k] = nil
		}
		out.Annotations[k] = set[k]
	}
	prevAttrs, err := json.Marshal(pv.Spec.CSI.VolumeAttributes)
	if err != nil {
		return nil, err
	}
	journal, err := json.Marshal(d.Journal)
	if err != nil {
		return nil, err
	}
	was, err := json.Marshal(prev)
	if err != nil {
		return nil, err
	}
	out.Annotations[AnnAdoptedFrom] = pv.Spec.CSI.VolumeHandle
	out.Annotations[AnnAdoptedAttributes] = string(prevAttrs)
	out.Annotations[AnnJournal] = string(journal)
	out.Annotations[AnnAdoptedPrevious] = string(was)
	src.VolumeHandle = d.VolumeID.String()
	attrs := maps.Clone(src.VolumeAttributes)
	for _, k := range []string{"staticVolume", "rootPath"} {
		delete(attrs, k)
	}
	attrs["clusterID"] = d.VolumeID.ClusterID
	attrs["fsName"] = sv.FS
	attrs["subvolumeName"] = sv.Name
	attrs["subvolumePath"] = sv.Path
	src.VolumeAttributes = attrs
	ref := secret
	src.NodeStageSecretRef = &ref
	ref2 := secret
	src.ControllerExpandSecretRef = &ref2
	return out, nil
}

// unadoptPrevious puts back what AnnAdoptedPrevious records on prev (a
// copy being unadopted).
func unadoptPrevious(prev *v1.PersistentVolume) error {
	raw, ok := prev.Annotations[AnnAdoptedPrevious]
	if !ok {
		return nil
	}
	var was previous
	if err := json.Unmarshal([]byte(raw), &was); err != nil {
		return fmt.Errorf("annotation %s: %w", AnnAdoptedPrevious, err)
	}
	prev.Spec.CSI.NodeStageSecretRef = was.NodeStage
	prev.Spec.CSI.ControllerExpandSecretRef = was.ControllerExpand
	for k, v := range was.Annotations {
		if v == nil {
			delete(prev.Annotations, k)
		} else {
			prev.Annotations[k] = *v
		}
	}
	delete(prev.Annotations, AnnAdoptedPrevious)
	return nil
}
