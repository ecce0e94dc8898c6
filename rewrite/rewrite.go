// Package rewrite holds the rules that decide what a stored in-tree object
// becomes when it is rewritten as its CSI driver's, and what must hold before
// it can be: the Secrets the driver will read and whether they are ready,
// the reclaim policy the driver can honour, the access modes it serves, and
// which StorageClasses are replaced. It reads and writes nothing: the
// planner (package plan), the writer (package apply) and the programs on
// them apply the same rules to the objects they hold.
//
// The files say what they hold: replacement.go (a PV's replacement in
// every direction: Rewrite, RewriteAdopted and UndoReplacement, and
// Replacement, which builds it from a translation), class_replacement.go (a
// StorageClass's, both ways), kinds.go (what an object is to the rewrite),
// refusal.go (what makes a rewrite leave an object as it was), volume.go
// (which PVs name one volume), ceph_entry.go (the Ceph cluster entry a
// volume needs), inline.go (inline volumes, their workloads, and whether
// a pod is stuck), keeper.go (the tools that keep an object from a source
// of their own), ref.go (object references and the annotations of the
// writer's saved states), and rewrite.go (the Secrets, reclaim policy,
// access modes and class parameters a rewritten object needs).
//
// Every function is pure: it never modifies its arguments (except
// KeepServedModes, whose purpose is to complete a translation it is given)
// and never panics.
package rewrite

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// SecretNeed is a Secret a CSI driver will read for a migrated volume or
// class, and as whom the driver must authenticate with it.
type SecretNeed struct {
	// Namespace and Name identify the Secret.
	Namespace, Name string
	// Driver is secrets.CephRBDDriver or secrets.CephFSDriver: whose rule
	// reads the Secret (secrets.CephCSISecretReady).
	Driver string
	// User is the RADOS user the driver must authenticate as ("" means
	// admin).
	User string
	// AnyUser is set when the user is not known (a deletion secret a PV
	// names itself): only whether the driver can use the Secret is judged.
	AnyUser bool
	// Uses says what the driver reads it for: secret kinds ("node-stage",
	// "controller-expand", ...) or "deletion".
	Uses []string
	// From is the in-tree Secret, "namespace/name", a derived CephFS
	// Secret is made from; "" for a Secret the volume names itself.
	From string
}

// Key is the Secret's "namespace/name".
func (n SecretNeed) Key() string { return n.Namespace + "/" + n.Name }

// Driver is the Ceph CSI driver whose secret rule applies to an in-tree PV
// and the RADOS user it must authenticate as; "" for a PV of another
// plugin.
func Driver(pv *v1.PersistentVolume) (driver, user string) {
	switch {
	case pv == nil:
	case pv.Spec.RBD != nil:
		return secrets.CephRBDDriver, pv.Spec.RBD.RadosUser
	case pv.Spec.CephFS != nil:
		u := pv.Spec.CephFS.User
		if u == "" {
			u = secrets.CephDefaultUser
		}
		return secrets.CephFSDriver, u
	}
	return "", ""
}

// SecretNeeds lists the distinct Secrets the CSI form csi of the in-tree PV
// in (its translation, or the PV a rewrite creates) makes the Ceph CSI driver
// read, each with what it is read for, in the order of secrets.Kinds; nil
// for other plugins. A derived CephFS node-stage Secret names the in-tree
// Secret it is made from.
func SecretNeeds(in, csi *v1.PersistentVolume) []SecretNeed {
	driver, user := Driver(in)
	if driver == "" || csi == nil || csi.Spec.CSI == nil {
		return nil
	}
	var out []SecretNeed
	for _, k := range secrets.Kinds {
		field := k.SourceField()
		if field == nil {
			continue // the provisioner's: no source field
		}
		ref := *field(csi.Spec.CSI)
		if ref == nil || ref.Name == "" {
			continue
		}
		i := slices.IndexFunc(out, func(n SecretNeed) bool { return n.Namespace == ref.Namespace && n.Name == ref.Name })
		if i < 0 {
			out = append(out, SecretNeed{Namespace: ref.Namespace, Name: ref.Name, Driver: driver, User: user})
			i = len(out) - 1
		}
		out[i].Uses = append(out[i].Uses, string(k))
	}
	if src := in.Spec.CephFS; src != nil && src.SecretRef != nil && in.Annotations[cephfs.AnnNodeStageSecret] == "" {
		for i := range out {
			if out[i].Uses[0] == string(secrets.NodeStage) {
				out[i].From = out[i].Namespace + "/" + src.SecretRef.Name
			}
		}
	}
	return out
}

// Judge says whether the driver authenticates as need's user with secret
// (nil when it does not exist): "" when it does; else the action ("create",
// "fix", "add"), the problem in words (never a value), and the fixes of an
// "add". It is secrets.CephCSISecretReady, the one rule for PVs and classes.
func Judge(need SecretNeed, secret *v1.Secret) (action, problem string, fixes []secrets.Fix) {
	if secret == nil {
		return "create", "does not exist", nil
	}
	fixes, err := secrets.CephCSISecretReady(secret, need.Driver, need.User)
	if need.AnyUser {
		fixes = nil
	}
	switch {
	case err != nil:
		return "fix", Problem(err), nil
	case len(fixes) > 0:
		return "add", fmt.Sprintf("lacks %s=%s: %s", fixes[0].Field, fixes[0].Value, fixes[0].Reason), fixes
	}
	return "", "", nil
}

// Problem says, without values, why a Ceph CSI driver cannot use a secret
// (an error of secrets.CephCSISecretReady).
func Problem(err error) string {
	switch {
	case errors.Is(err, secrets.ErrCephNoKey):
		return "has no non-empty \"key\" (nor userID and userKey): Ceph CSI cannot authenticate with it"
	case errors.Is(err, secrets.ErrCephMissingID), errors.Is(err, secrets.ErrCephMissingKey), errors.Is(err, secrets.ErrCephSecretEmpty):
		return "lacks userID or userKey: Ceph CSI's CephFS driver reads only those (it has no in-tree \"key\" remap) and cannot stage the volume"
	}
	return err.Error()
}

// Fields are the fields an action on need's Secret must give it, and why.
func (n SecretNeed) Fields(action string) ([]string, string) {
	if n.Driver == secrets.CephFSDriver {
		user := n.User
		if user == "" {
			user = secrets.CephDefaultUser
		}
		fields := []string{secrets.CephUserID + "=" + user, secrets.CephUserKey}
		if n.From != "" {
			return fields, "Ceph CSI stages static CephFS volumes with userID/userKey (userKey: the key of the source secret " + n.From + "); the in-tree secret stays as it is"
		}
		return fields, "Ceph CSI stages static CephFS volumes with userID/userKey, the user's name and key"
	}
	fields := []string{secrets.CephInTreeKey}
	if n.User != "" && n.User != secrets.CephDefaultUser {
		fields = append(fields, secrets.CephMigrationUserKey+"="+n.User)
	}
	reason := "Ceph CSI reads the RADOS user's key under \"key\""
	if len(fields) > 1 {
		reason += fmt.Sprintf(" and, to connect as %s, adminId=%s", n.User, n.User)
	}
	switch action {
	case "create":
		reason = "missing: " + reason
	case "fix":
		reason = "unusable as it is: " + reason
	}
	return fields, reason
}

// retainFor are the CheckPV findings after which the CSI driver would not
// delete exactly the PV's volume, with the reason a rewritten PV keeps
// reclaim policy Retain.
var retainFor = map[string]string{
	rbd.FindingHandleResolvesElsewhere: "Ceph CSI would delete another image",
	cephfs.FindingNeverDeleted:         "Ceph CSI never deletes static CephFS volumes (the directory stays)",
}

// KeepsRetain says why a PV with the finding code must keep reclaim policy
// Retain when rewritten (the driver would not delete exactly its volume),
// ok false for a finding that does not.
func KeepsRetain(code string) (why string, ok bool) {
	why, ok = retainFor[code]
	return why, ok
}

// ServedAsTheyAre reports whether the CSI driver serves an in-tree PV's
// access modes as they are although its translation narrows them: Ceph CSI
// serves ReadWriteMany for RBD volumes of volumeMode Block.
func ServedAsTheyAre(in *v1.PersistentVolume) bool {
	return in != nil && in.Spec.RBD != nil && in.Spec.VolumeMode != nil && *in.Spec.VolumeMode == v1.PersistentVolumeBlock &&
		slices.Contains(in.Spec.AccessModes, v1.ReadWriteMany)
}

// KeepServedModes gives csi, the translation of in that a rewrite stores,
// in's access modes back where the driver serves them as they are
// (ServedAsTheyAre): the forward translation narrows every RBD PV to
// ReadWriteOnce, as csi-translation-lib does for the kubelet's view; a
// stored PV keeps what its workloads use (live migration of virtual
// machines among them). It modifies csi, which must be the caller's own.
func KeepServedModes(in, csi *v1.PersistentVolume) {
	if csi == nil || !ServedAsTheyAre(in) {
		return
	}
	csi.Spec.AccessModes = slices.Clone(in.Spec.AccessModes)
	delete(csi.Annotations, plugin.AnnAccessModes)
}

// AccessModeChange names what the CSI form out of an in-tree PV in changes
// in its access modes (a change its workloads see: which nodes may mount it
// at once), "" when nothing. The modes the drivers refuse are CheckPV's
// blockers; this is what a translation narrows (RBD: Ceph CSI serves a
// migrated file-system volume as ReadWriteOnce, or ReadOnlyMany when
// readOnly).
func AccessModeChange(in, out *v1.PersistentVolume) string {
	if in == nil || out == nil || slices.Equal(in.Spec.AccessModes, out.Spec.AccessModes) {
		return ""
	}
	var lost []string
	for _, m := range in.Spec.AccessModes {
		if !slices.Contains(out.Spec.AccessModes, m) {
			lost = append(lost, string(m))
		}
	}
	msg := fmt.Sprintf("access modes %v become %v", in.Spec.AccessModes, out.Spec.AccessModes)
	if len(lost) == 0 {
		return msg
	}
	msg += fmt.Sprintf(" (%s dropped: the driver is asked only for what it serves for this volume; a claim that asks for %s stays bound", strings.Join(lost, ", "), lost[0])
	if slices.Contains(lost, string(v1.ReadOnlyMany)) {
		msg += "; pods on other nodes can no longer mount it read-only while it is attached"
	}
	if slices.Contains(lost, string(v1.ReadWriteMany)) && in.Spec.RBD != nil {
		// Ceph CSI refuses to stage ReadWriteMany on a file system; the
		// in-tree plugin never served it either (its access modes were
		// ReadWriteOnce and ReadOnlyMany, and it mapped an image read-write
		// only where no other node had it mapped).
		msg += "; the in-tree plugin mapped it read-write on one node at a time too, so its pods see no difference, and a second node's attach is now refused before it is tried"
	}
	return msg + ")"
}

// InTreeClass is sc as the in-tree plugin's class: a class of a provisioner
// outside Kubernetes that writes in-tree sources and took the in-tree
// plugin's parameters (ceph.com/rbd) names the in-tree plugin instead, so
// that it translates like one. sc is not modified; a class of an in-tree
// plugin, or of another provisioner, is returned as it is.
func InTreeClass(sc *storagev1.StorageClass) *storagev1.StorageClass {
	if sc == nil {
		return nil
	}
	inTree := plugin.InTreeNameOfProvisioner(sc.Provisioner)
	if inTree == "" || inTree == sc.Provisioner {
		return sc
	}
	c := *sc
	c.Provisioner = inTree
	return &c
}

// ClassAdminID is the adminId of an in-tree RBD class (keys matched
// case-insensitively, as in-tree did): the RADOS user of its admin secret,
// "" for admin.
func ClassAdminID(sc *storagev1.StorageClass) string {
	if sc == nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Parameters)) {
		if strings.EqualFold(k, "adminId") {
			return sc.Parameters[k]
		}
	}
	return ""
}

// TranslatableClass reports whether a rewrite replaces sc by a CSI class: a
// class of an in-tree plugin tr translates, or of a provisioner outside
// Kubernetes that writes that plugin's sources
// (plugin.InTreeNameOfProvisioner).
func TranslatableClass(tr *translate.Translator, sc *storagev1.StorageClass) bool {
	if tr == nil || sc == nil {
		return false
	}
	inTree := plugin.InTreeNameOfProvisioner(sc.Provisioner)
	return inTree != "" && tr.IsMigratableIntreePluginByName(inTree)
}

// ClassAdminSecret is the admin secret of a translated in-tree RBD class
// (its provisioner, controller-expand and node-stage secret) and the
// migration user it must name (the class's adminId).
func ClassAdminSecret(translated *storagev1.StorageClass) (*v1.SecretReference, string, error) {
	if translated == nil {
		return nil, "", errors.New("no class")
	}
	ref, err := secrets.Resolve(secrets.Provisioner, translated.Parameters, secrets.Claim{})
	return ref, translated.Parameters["adminId"], err
}
