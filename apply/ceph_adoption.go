package apply

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/apply/cephtool"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/volumeid"
)

// Ceph is what the adoption of RBD images and CephFS subvolumes reads from
// Ceph and writes to it (package cephtool runs Ceph's own tools).
type Ceph interface {
	// Image reads an RBD image and its pool's ID.
	Image(ctx context.Context, pool, namespace, name string) (*adopt.Image, error)
	// Subvolume reads a CephFS subvolume and its file system ("" the
	// only one); a path Ceph's volumes module does not serve gives an
	// error matching cephtool.ErrNotSubvolume.
	Subvolume(ctx context.Context, fs, group, name string) (*adopt.Subvolume, error)
	// Omap reads an object's omap; found is false when the object does
	// not exist.
	Omap(ctx context.Context, pool, namespace, object string) (vals map[string]string, found bool, err error)
	// Write carries out one journal op: "create" fails when the object
	// exists, removals of what is not there succeed.
	Write(ctx context.Context, pool, namespace string, op adopt.Op) error
	// FSID reads the fsid of the Ceph cluster at monitors.
	FSID(ctx context.Context, monitors []string) (string, error)
}

// adoption is what the checks decided for an RBD PV's image or a CephFS
// PV's subvolume: the input of adopt.RBD or adopt.CephFS as read from Ceph
// and the cluster, kept so that the replacement built again after step 1
// is the same.
type adoption struct {
	image *adopt.Image
	// CephFS: the subvolume (nil for RBD), or what Ceph said of a path it
	// does not serve as one, and the clusterID serving its group.
	subvol       *adopt.Subvolume
	notSubvolume string
	clusterID    string
	// joined is the deployment's entry the volume ID names, "" for the
	// migration's (RBD: the handle's; CephFS: clusterID).
	joined string
	uuid   string
	refs   []string
	// disk is a vSphere volume's disk (nil for Ceph).
	disk *vsphereDisk
	// why it is not adopted ("" when it is); noted once per run.
	why string
}

// newUUID draws a random (version 4) UUID for the journal entry of an image
// whose name does not end in one.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// sharers are the other PVs that name the same image as pv (listed once
// per cacheFor, as the checks' other lists; from the PVs lister when the
// Writer has one).
func (a *Writer) sharers(ctx context.Context, pv *v1.PersistentVolume) ([]string, error) {
	key, ok := rewrite.VolumeKey(pv)
	if !ok {
		return nil, nil
	}
	if a.listers.PVsNaming != nil {
		names, err := a.listers.PVsNaming(key)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, n := range names {
			if n != pv.Name {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	a.mu.Lock()
	list, fresh := a.allPVs.v, time.Since(a.allPVs.at) < cacheFor
	a.mu.Unlock()
	if !fresh && a.listers.PVs != nil {
		// The informer's PVs (slim or whole, each names its volume as
		// the API server's copy does: SlimPV).
		at := time.Now()
		list = nil
		pvs, err := a.listers.PVs.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, p := range pvs {
			if k, ok := rewrite.VolumeKey(p); ok {
				list = append(list, pvVolume{pv: p.Name, key: k})
			}
		}
		a.mu.Lock()
		a.allPVs = cached[[]pvVolume]{list, at}
		a.mu.Unlock()
		fresh = true
	}
	if !fresh {
		at := time.Now()
		list = nil
		opts := metav1.ListOptions{Limit: 500}
		for {
			page, err := a.client.CoreV1().PersistentVolumes().List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range page.Items {
				if k, ok := rewrite.VolumeKey(&page.Items[i]); ok {
					list = append(list, pvVolume{pv: page.Items[i].Name, key: k})
				}
			}
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
		a.mu.Lock()
		a.allPVs = cached[[]pvVolume]{list, at}
		a.mu.Unlock()
	}
	var out []string
	for _, e := range list {
		if e.key == key && e.pv != pv.Name {
			out = append(out, e.pv)
		}
	}
	return out, nil
}

// pvVolume is a PV and the volume it names (rewrite.VolumeKey).
type pvVolume struct{ pv, key string }

// adoptionOf reads what the adoption of an in-tree RBD PV's image depends
// on (the image, the PVs sharing it, whether its journal entry is free) and
// decides. repl is the rewrite's replacement with the migration handle. A
// volume that cannot be adopted is rewritten with the migration handle, and
// why is said.
func (a *Writer) adoptionOf(ctx context.Context, cur, repl *v1.PersistentVolume, inUse bool) (*adoption, error) {
	if a.o.VSphere != nil && isVSphere(repl) {
		return a.vsphereAdoptionOf(ctx, cur, repl, inUse)
	}
	if a.o.Ceph != nil && repl.Spec.CSI != nil && plugin.InTreeNameOfDriver(repl.Spec.CSI.Driver) == plugin.CephFSInTreePluginName {
		return a.cephfsAdoptionOf(ctx, cur, repl, inUse)
	}
	if a.o.Ceph == nil || repl.Spec.CSI == nil || plugin.InTreeNameOfDriver(repl.Spec.CSI.Driver) != plugin.RBDInTreePluginName {
		return nil, nil
	}
	attrs := repl.Spec.CSI.VolumeAttributes
	pool := volumeid.RBDPool(attrs["pool"])
	ad := &adoption{}
	img, err := a.o.Ceph.Image(ctx, pool, "", attrs["imageName"])
	if err != nil {
		return nil, fmt.Errorf("reading image %s/%s from Ceph: %w", pool, attrs["imageName"], err)
	}
	ad.image = img
	if ad.refs, err = a.sharers(ctx, cur); err != nil {
		return nil, err
	}
	ad.joined = a.join(ctx, repl, plugin.RBDInTreePluginName, "")
	ad.uuid = newUUID()
	d, err := a.decide(repl, ad)
	if err != nil {
		return nil, err
	}
	if ad.why, err = a.whyNotAdopted(ctx, d, inUse, "rewrite it with the migration handle now and adopt it when it is not in use", nil); err != nil {
		return nil, err
	}
	return ad, nil
}

// whyNotAdopted is why a volume is not adopted ("" when it is): the
// decision's reasons, pods using it (later says what happens instead), the
// volume's own precondition (more, when set), or its journal entry taken.
func (a *Writer) whyNotAdopted(ctx context.Context, d adopt.Decision, inUse bool, later string, more func(context.Context) (string, error)) (string, error) {
	switch {
	case d.Form != adopt.FormNative:
		return strings.Join(d.Why, "; "), nil
	case inUse:
		return "pods use it: adoption changes the volume handle the kubelet tracks; " + later, nil
	}
	if more != nil {
		if why, err := more(ctx); err != nil || why != "" {
			return why, err
		}
	}
	return a.journalFree(ctx, d.Journal)
}

// cephfsAdoptionOf reads what the adoption of a static CephFS volume's
// subvolume depends on (the subvolume as Ceph's volumes module serves it,
// the cluster entry of its group, the admin secret, the PVs naming the same
// path, whether its journal entry is free) and decides. A volume that
// cannot be adopted stays static, and why is said.
func (a *Writer) cephfsAdoptionOf(ctx context.Context, cur, repl *v1.PersistentVolume, inUse bool) (*adoption, error) {
	attrs := repl.Spec.CSI.VolumeAttributes
	if attrs["rootPath"] == "" {
		return nil, nil
	}
	ad := &adoption{uuid: newUUID()}
	var err error
	if ad.refs, err = a.sharers(ctx, cur); err != nil {
		return nil, err
	}
	if group, name, ok := adopt.SubvolumeOf(attrs["rootPath"]); ok {
		ad.clusterID, _ = a.o.CephConfig.CephFSGroupClusterID(attrs["clusterID"], group)
		ad.joined = a.join(ctx, repl, plugin.CephFSInTreePluginName, group)
		sv, err := a.o.Ceph.Subvolume(ctx, attrs["fsName"], group, name)
		switch {
		case errors.Is(err, cephtool.ErrNotSubvolume):
			ad.notSubvolume = err.Error()
			if te := (*cephtool.Error)(nil); errors.As(err, &te) {
				ad.notSubvolume = te.Answer()
			}
		case err != nil:
			return nil, fmt.Errorf("reading subvolume %s of group %s from Ceph: %w", name, group, err)
		default:
			ad.subvol = sv
		}
	}
	d, err := a.decide(repl, ad)
	if err != nil {
		return nil, err
	}
	if ad.why, err = a.whyNotAdopted(ctx, d, inUse, "it is rewritten as a static volume now, and an adoption of CSI PVs adopts it when no pod uses it", a.adminSecretMissing); err != nil {
		return nil, err
	}
	return ad, nil
}

// decide is package adopt's decision for pv (an RBD PV with a migration
// handle, or a static CephFS PV) from what the checks read into ad; the
// same input every time, so that a replacement built again is the same.
func (a *Writer) decide(pv *v1.PersistentVolume, ad *adoption) (adopt.Decision, error) {
	if ad.disk != nil {
		return adopt.VSphere(adopt.VSphereInput{PV: pv, FCD: ad.disk.registered(), ReferencedBy: ad.refs})
	}
	if pv.Spec.CSI != nil && plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) == plugin.CephFSInTreePluginName {
		clusterID := ad.clusterID
		if ad.joined != "" {
			clusterID = ad.joined
		}
		return adopt.CephFS(adopt.CephFSInput{PV: pv, Subvolume: ad.subvol, NotSubvolume: ad.notSubvolume, ClusterID: clusterID,
			Secret: a.o.CephFSSecret, ReferencedBy: ad.refs, UUID: ad.uuid})
	}
	clusterID := ad.joined
	if clusterID == "" && pv.Spec.CSI != nil {
		clusterID = pv.Spec.CSI.VolumeAttributes["clusterID"]
	}
	return adopt.RBD(adopt.RBDInput{PV: pv, Image: ad.image, ClusterID: ad.joined, RadosNamespace: a.o.CephConfig.RBDRadosNamespace(clusterID), ReferencedBy: ad.refs, UUID: ad.uuid})
}

// join is the deployment's entry of the cluster config that the adopted
// volume's ID names (adopt.JoinDeployment), "" when none serves it; the
// volume's cluster is the one at the monitors of its migration entry.
// Why an entry is not joined is logged, not fatal: the volume then keeps
// the migration's entry, which serves it as well.
func (a *Writer) join(ctx context.Context, pv *v1.PersistentVolume, backend, group string) string {
	mons, err := a.o.CephConfig.Lookup(pv.Spec.CSI.VolumeAttributes["clusterID"])
	if err != nil {
		a.logger.V(2).Info("Not joining a deployment's cluster entry", "pv", pv.Name, "reason", err.Error())
		return ""
	}
	fsidOf := func(monitors []string) (string, error) {
		key := strings.Join(monitors, ",")
		a.mu.Lock()
		r, ok := a.fsids[key]
		a.mu.Unlock()
		if ok {
			return r, nil
		}
		fsid, err := a.o.Ceph.FSID(ctx, monitors)
		if err != nil {
			return "", err // asked again for the next volume: it may be passing
		}
		a.mu.Lock()
		if a.fsids == nil {
			a.fsids = map[string]string{}
		}
		a.fsids[key] = fsid
		a.mu.Unlock()
		return fsid, nil
	}
	fsid, err := fsidOf(mons)
	if err != nil {
		a.logger.V(2).Info("Not joining a deployment's cluster entry", "pv", pv.Name, "reason", err.Error())
		return ""
	}
	j := adopt.JoinDeployment(adopt.JoinInput{Backend: backend, Group: group, FSID: fsid, Config: a.o.CephConfig, FSIDOf: fsidOf})
	if j.ClusterID == "" && len(j.Why) > 0 {
		a.logger.V(2).Info("Not joining a deployment's cluster entry", "pv", pv.Name, "reasons", j.Why)
	}
	return j.ClusterID
}

// adminSecretMissing says why the Secret adopted CephFS volumes name does
// not serve Ceph CSI's CephFS driver ("" when it has non-empty adminID and
// adminKey). Values are never read into anything printed.
func (a *Writer) adminSecretMissing(ctx context.Context) (string, error) {
	ref := a.o.CephFSSecret
	s, err := getOrNil(a.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}))
	if err != nil {
		return "", fmt.Errorf("reading Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if s == nil {
		return fmt.Sprintf("Secret %s/%s, which Ceph CSI's CephFS driver would read for the adopted volume, does not exist", ref.Namespace, ref.Name), nil
	}
	data := secrets.SecretStringData(s)
	var missing []string
	for _, k := range []string{"adminID", "adminKey"} {
		if data[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("Secret %s/%s, which Ceph CSI's CephFS driver would read for the adopted volume, lacks %s (fields: %q)", ref.Namespace, ref.Name,
			strings.Join(missing, " and "), slices.Sorted(maps.Keys(data))), nil
	}
	return "", nil
}

// summary says what the adoption makes of the volume, on one line.
func (ad *adoption) summary(repl *v1.PersistentVolume) string {
	if ad.disk != nil {
		return ad.vsphereSummary()
	}
	cephFS := repl.Spec.CSI != nil && plugin.InTreeNameOfDriver(repl.Spec.CSI.Driver) == plugin.CephFSInTreePluginName
	switch {
	case ad.why != "" && cephFS:
		return "stays a static volume (stage only; no expansion, snapshots, clones or deletion by Ceph CSI): not adopted into Ceph CSI's journal: " + ad.why
	case ad.why != "":
		return "keeps its migration handle (stage, expand, delete; no snapshots or clones): not adopted into Ceph CSI's journal: " + ad.why
	}
	full := cephFS && ad.subvol.CanClone() || !cephFS && ad.image.HasLayering()
	var names []string
	for _, f := range adopt.FeaturesOf(adopt.FormNative, full) {
		names = append(names, string(f))
	}
	s := fmt.Sprintf("adopted into Ceph CSI's journal as its own volume %s (%s)", repl.Spec.CSI.VolumeHandle, strings.Join(names, ", "))
	switch {
	case !full && cephFS:
		s += "; no snapshots or clones: the subvolume lacks the snapshot-clone feature"
	case !full:
		s += "; no snapshots or clones: the image lacks the layering feature"
	}
	if ref := repl.Spec.CSI.NodeStageSecretRef; cephFS && ref != nil {
		// Ceph CSI mounts its own volumes with its admin credentials.
		user := repl.Annotations[cephfs.AnnUser]
		if user == "" {
			user = "admin"
		}
		s += fmt.Sprintf("; mounted with Secret %s/%s (adminID, adminKey) instead of its own Ceph user client.%s", ref.Namespace, ref.Name, user)
	}
	return s
}

// adoptedForm is pv, a migrated form (the rewrite's CSI form of an in-tree
// PV, or a live CSI PV with a migration handle), as the adoption ad decides
// it: the driver's own volume when d says native (d.PV), pv itself
// otherwise. An adopted volume that Ceph CSI's delete would not remove
// exactly keeps reclaim policy Retain: the policy recorded to restore
// becomes Retain, and kept, which says why pv already keeps Retain instead
// of orig (the policy before the first step), gets the adoption's reason.
// Both directions that adopt build their replacement here.
func (a *Writer) adoptedForm(pv *v1.PersistentVolume, orig, kept string, ad *adoption) (out *v1.PersistentVolume, keptWhy string, d adopt.Decision, err error) {
	if ad == nil || ad.why != "" {
		return pv, kept, d, nil
	}
	if d, err = a.decide(pv, ad); err != nil {
		return nil, "", d, err
	}
	if d.Form != adopt.FormNative || d.PV == nil {
		return pv, kept, d, nil
	}
	out = d.PV
	if d.KeepRetain != "" {
		if _, recorded := out.Annotations[rewrite.AnnReclaimPolicy]; recorded {
			out.Annotations[rewrite.AnnReclaimPolicy] = string(v1.PersistentVolumeReclaimRetain)
		}
		switch {
		case orig == "" || orig == string(v1.PersistentVolumeReclaimRetain):
		case kept == "":
			kept = fmt.Sprintf("reclaim policy Retain, not %s: %s", orig, d.KeepRetain)
		default:
			kept += "; " + d.KeepRetain
		}
	}
	return out, kept, d, nil
}

// adopted is the rewrite's replacement r of an in-tree PV in the form the
// adoption ad decides (adoptedForm), with why it keeps Retain.
func (a *Writer) adopted(r rewrite.PV, ad *adoption) (*v1.PersistentVolume, string, error) {
	// r was built without the migration handle's hazard where the
	// adoption is native (the journal names the image, not the handle).
	out, kept, _, err := a.adoptedForm(r.CSI, r.CSI.Annotations[rewrite.AnnPreRewritePolicy], r.KeptRetain(), ad)
	return out, kept, err
}

// journalFree says why the journal entry d would write is taken ("" when
// its object and directory key do not exist).
func (a *Writer) journalFree(ctx context.Context, j adopt.Journal) (string, error) {
	obj, found, err := a.o.Ceph.Omap(ctx, j.Pool, j.Namespace, j.Object())
	if err != nil {
		return "", err
	}
	if found {
		return fmt.Sprintf("Ceph CSI's journal already has %s (keys %v): another volume's entry, or an earlier adoption", j.Object(), slices.Sorted(maps.Keys(obj))), nil
	}
	dir, _, err := a.o.Ceph.Omap(ctx, j.Pool, j.Namespace, j.Directory())
	if err != nil {
		return "", err
	}
	if v, ok := dir[j.DirectoryKey()]; ok {
		return fmt.Sprintf("Ceph CSI's journal directory %s already names volume %s (uuid %s)", j.Directory(), j.VolName, v), nil
	}
	return "", nil
}

// journalOf is the journal entry an adopted PV records; nil for another PV.
func journalOf(pv *v1.PersistentVolume) (*adopt.Journal, error) {
	if pv == nil {
		return nil, nil
	}
	raw, ok := pv.Annotations[adopt.AnnJournal]
	if !ok {
		return nil, nil
	}
	var j adopt.Journal
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", adopt.AnnJournal, err)
	}
	return &j, nil
}

// journalState reads an entry back: "written" when the object and the
// directory key hold exactly what the entry writes, "absent" when neither
// exists, "partial" when some of it does and nothing contradicts it, or an
// error naming what another entry holds there.
func (a *Writer) journalState(ctx context.Context, j adopt.Journal) (string, error) {
	st, _, err := a.journalRead(ctx, j)
	return st, err
}

// journalRead is journalState with the per-volume object's omap as read
// (nil when the object does not exist), which writeJournal starts from.
func (a *Writer) journalRead(ctx context.Context, j adopt.Journal) (string, map[string]string, error) {
	if a.o.Ceph == nil {
		return "", nil, &rewrite.Refusal{Code: rewrite.CodeNotRecorded, Reason: "the PV's image is in Ceph CSI's journal, and no Ceph access was given",
			Remedy: "give the run access to Ceph (a ceph.conf, a user and its keyring)", Action: plugin.ActionGiveCephAccess}
	}
	obj, found, err := a.o.Ceph.Omap(ctx, j.Pool, j.Namespace, j.Object())
	if err != nil {
		return "", nil, err
	}
	if found && obj == nil {
		obj = map[string]string{}
	}
	dir, _, err := a.o.Ceph.Omap(ctx, j.Pool, j.Namespace, j.Directory())
	if err != nil {
		return "", nil, err
	}
	if why := j.Matches(obj, dir); why == "" {
		return "written", obj, nil
	}
	uuid, hasKey := dir[j.DirectoryKey()]
	if hasKey && uuid != j.UUID {
		return "", nil, fmt.Errorf("Ceph CSI's journal directory %s names volume %s as uuid %s, not %s: another entry; nothing is done with it", j.Directory(), j.VolName, uuid, j.UUID)
	}
	keys := j.Keys()
	for k, v := range obj {
		if keys[k] != v {
			return "", nil, fmt.Errorf("Ceph CSI's journal object %s holds %s=%q, which the adoption does not write: another entry; nothing is done with it", j.Object(), k, v)
		}
	}
	if !found && !hasKey {
		return "absent", nil, nil
	}
	return "partial", obj, nil
}

// verifyAdoption checks, before the adopted PV gets its reclaim policy back,
// that Ceph CSI will find exactly this image: the journal reads back (unless
// readBack: this run read it back written after its own write), and the
// image is found by its name with the id the journal records.
func (a *Writer) verifyAdoption(ctx context.Context, pv *v1.PersistentVolume, j adopt.Journal, readBack bool) error {
	if !readBack {
		st, err := a.journalState(ctx, j)
		if err != nil {
			return err
		}
		if st != "written" {
			return fmt.Errorf("Ceph CSI's journal entry %s reads back %s", j.Object(), st)
		}
	}
	if pv.Spec.CSI != nil && plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver) == plugin.CephFSInTreePluginName {
		// Ceph CSI finds the subvolume by the journal's name in the group
		// of the volume ID's cluster entry.
		attrs := pv.Spec.CSI.VolumeAttributes
		group, _ := a.o.CephConfig.CephFSSubvolumeGroup(attrs["clusterID"])
		sv, err := a.o.Ceph.Subvolume(ctx, attrs["fsName"], group, j.ImageName)
		if err != nil {
			return fmt.Errorf("subvolume %s of group %s (the group of cluster entry %s): %w", j.ImageName, group, attrs["clusterID"], err)
		}
		if sv.Path != attrs["subvolumePath"] {
			return fmt.Errorf("subvolume %s of group %s is at %s, the PV names %s: the PV keeps Retain", j.ImageName, group, sv.Path, attrs["subvolumePath"])
		}
		return nil
	}
	img, err := a.o.Ceph.Image(ctx, j.Pool, j.Namespace, j.ImageName)
	if err != nil {
		return fmt.Errorf("image %s/%s: %w", j.Pool, j.ImageName, err)
	}
	if img.ID != j.ImageID {
		return fmt.Errorf("image %s/%s has id %s, the journal records %s: another image of that name; the PV keeps Retain", j.Pool, j.ImageName, img.ID, j.ImageID)
	}
	return nil
}

// writeJournal takes the journal entry from what exists of it to written:
// the exclusive create when the object is absent, then each key. obj is
// the per-volume object's omap as the run last read it (journalRead: nil
// when it does not exist).
func (a *Writer) writeJournal(ctx context.Context, j adopt.Journal, obj map[string]string) error {
	found := obj != nil
	for _, op := range j.Writes() {
		switch {
		case op.Verb == "create" && found:
			continue
		case op.Verb == "setomapval" && op.Object == j.Object() && found && obj[op.Key] == op.Value:
			continue
		}
		if err := a.o.Ceph.Write(ctx, j.Pool, j.Namespace, op); err != nil {
			return fmt.Errorf("rados %s: %w", strings.Join(op.Args(), " "), err)
		}
	}
	return nil
}

// removeJournal removes an entry the undo found ours (journalState did not
// fail): the directory key, then the object.
func (a *Writer) removeJournal(ctx context.Context, j adopt.Journal) error {
	for _, op := range j.Removals() {
		if err := a.o.Ceph.Write(ctx, j.Pool, j.Namespace, op); err != nil {
			return fmt.Errorf("rados %s: %w", strings.Join(op.Args(), " "), err)
		}
	}
	return nil
}
