package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// check runs every check on a live in-tree PV before the first write to it
// and returns what it read, with the PV's replacement; a refusal says why
// the PV is left alone, naming every reason the checks found.
func (a *Writer) check(ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error) {
	var rs reasons
	pvc, err := a.claimChecks(ctx, cur)
	if err := rs.add(err); err != nil {
		return nil, err
	}
	sc, err := a.storageClass(ctx, cur)
	if err != nil {
		return nil, err
	}
	r, err := rewrite.Rewrite(a.tr, a.logger, cur, sc, pvc)
	if err != nil {
		rs.add(a.untranslatable(cur, err))
		return nil, rs.err()
	}
	for _, check := range []func() error{
		// In the order the plan names them.
		func() error { return a.driverRefusal(ctx, r.CSI.Spec.CSI.Driver) },
		func() error { return a.secretRefusal(ctx, cur, r) },
		func() error { return a.cephEntryRefusal(ctx, cur, r.CSI) },
	} {
		if err := rs.add(check()); err != nil {
			return nil, err
		}
	}
	inUse, err := a.inUseRefusal(ctx, cur, cur, r.CSI.Spec.CSI.Driver, r.CSI.Spec.CSI.VolumeHandle)
	if err := rs.add(err); err != nil {
		return nil, err
	}
	if err := rs.err(); err != nil {
		return nil, err
	}
	ad, err := a.adoptionOf(ctx, cur, r.CSI, inUse)
	if err != nil {
		return nil, err
	}
	if ad != nil && ad.why == "" {
		if r, err = rewrite.RewriteAdopted(a.tr, a.logger, cur, sc, pvc); err != nil {
			return nil, refuse(rewrite.CodeNotTranslatable, "%v", err)
		}
	}
	repl, kept, err := a.adopted(r, ad)
	if err != nil {
		return nil, refuse(rewrite.CodeNotTranslatable, "%v", err)
	}
	if ad != nil {
		a.note(rewrite.PVRef(cur.Name), ad.summary(repl))
	}
	return &checkedPV{uid: cur.UID, sc: sc, pvc: pvc, repl: repl, kept: kept, adoption: ad}, nil
}

// untranslatable is the refusal of a PV whose rewrite failed with err: its
// plugin's blocking findings, each with its own code as the plan gives it
// (CephFSSecretFileOnly, RBDInvalidSource, ...), or NotTranslatable with
// err where the plugin names none.
func (a *Writer) untranslatable(cur *v1.PersistentVolume, err error) *rewrite.Refusal {
	_, findings, _, _ := a.tr.TranslateAndCheckPV(a.logger, cur)
	var rs []*rewrite.Refusal
	for _, f := range findings {
		if f.Severity == plugin.SeverityBlocker {
			rs = append(rs, rewrite.FindingRefusal(f))
		}
	}
	if r := rewrite.JoinRefusals(rs...); r != nil {
		return r
	}
	return rewrite.Refuse(rewrite.CodeNotTranslatable, "%v", err)
}

// secretRefusal is why the rewrite leaves an in-tree Ceph PV alone for the
// secrets its replacement r makes Ceph CSI read (the deletion secret of one
// that ends with reclaim policy Delete included): each must exist with what
// the driver reads, as the user of the in-tree source (secrets.CephCSISecretReady,
// the rule the plan applies). A PV rewritten before its secret is ready would
// not stage, expand or delete. Every such Secret is named at once. Values
// are never read into anything printed.
func (a *Writer) secretRefusal(ctx context.Context, cur *v1.PersistentVolume, r rewrite.PV) error {
	needs := rewrite.SecretNeeds(cur, r.CSI)
	if need, ok := r.DeletionNeed(); ok {
		needs = append(needs, need)
	}
	var rs reasons
	for _, need := range needs {
		ref := need.Key()
		s, err := a.secret(ctx, need.Namespace, need.Name)
		if err != nil {
			return fmt.Errorf("reading Secret %s, which Ceph CSI reads for the rewritten PV (%s): %w", ref, strings.Join(need.Uses, ", "), err)
		}
		action, problem, fixes := rewrite.Judge(need, s)
		if action == "" {
			continue
		}
		fields, _ := need.Fields(action)
		remedy := fmt.Sprintf("%s it: %s", action, strings.Join(fields, ", "))
		for _, f := range fixes {
			remedy = fmt.Sprintf("add %s: %s to Secret %s", f.Field, f.Value, ref)
		}
		code := rewrite.CodeSecretMissing
		if s != nil {
			code = rewrite.CodeSecretNotReady
		}
		rs.add(&rewrite.Refusal{Code: code, Reason: fmt.Sprintf("Secret %s, which Ceph CSI reads for the rewritten PV (%s), %s", ref, strings.Join(need.Uses, ", "), problem), Remedy: remedy,
			Action: plugin.ActionCreateSecret, ActsOn: "Secret " + ref})
	}
	return rs.err()
}

// buildRewrite is the CSI replacement of an in-tree PV.
func (a *Writer) buildRewrite(cur *v1.PersistentVolume, c *checkedPV) (*v1.PersistentVolume, string, error) {
	rewriteOf := rewrite.Rewrite
	if c.adoption != nil && c.adoption.why == "" {
		rewriteOf = rewrite.RewriteAdopted
	}
	r, err := rewriteOf(a.tr, a.logger, cur, c.sc, c.pvc)
	if err != nil {
		return nil, "", err
	}
	return a.adopted(r, c.adoption)
}

// cephEntryRefusal is why the rewrite leaves an in-tree Ceph PV alone while
// the Ceph CSI driver does not serve the cluster entry its replacement repl
// names (rewrite.CephEntryNeeded): the driver would not mount it.
func (a *Writer) cephEntryRefusal(ctx context.Context, cur, repl *v1.PersistentVolume) error {
	e, ok := rewrite.CephEntryNeeded(cur, repl)
	return a.entryRefusal(ctx, e, ok, "the migrated volume names")
}

// classEntryRefusal is why the rewrite leaves an in-tree RBD StorageClass
// alone while the Ceph CSI driver does not serve the cluster entry its
// replacement repl names (rewrite.ClassCephEntryNeeded): nothing the class
// provisions would mount, and the cluster's class (often its default) would
// fail every new claim.
func (a *Writer) classEntryRefusal(ctx context.Context, repl *storagev1.StorageClass) error {
	e, ok := rewrite.ClassCephEntryNeeded(repl)
	return a.entryRefusal(ctx, e, ok, "the replacement class names")
}

// entryRefusal is why the rewrite leaves an object alone whose replacement
// needs entry e (ok: it needs one) while Options.CephServed does not list
// it; who is what names it ("the migrated volume names").
func (a *Writer) entryRefusal(ctx context.Context, e ceph.ClusterEntry, ok bool, who string) error {
	if a.o.CephServed == nil || !ok {
		return nil
	}
	served, err := a.o.CephServed(ctx)
	var refused *rewrite.Refusal
	switch {
	case errors.As(err, &refused):
		// The reader says why it cannot tell (CodeCephEntryUnchecked):
		// the volume is left as it is, not treated as served.
		return refused
	case err != nil:
		return fmt.Errorf("reading the cluster entries Ceph CSI serves: %w", err)
	}
	if _, err := served.Lookup(e.ClusterID); err != nil {
		return &rewrite.Refusal{Code: rewrite.CodeCephEntryMissing,
			Reason: fmt.Sprintf("Ceph CSI does not serve cluster entry %s (monitors %s), which %s (%v): the driver would not mount it", e.ClusterID, strings.Join(e.Monitors, ","), who, err),
			Remedy: "add the entry where the cluster's Ceph CSI deployment reads its config, in the form that lasts there", Action: plugin.ActionAddCephEntry, ActsOn: e.ClusterID}
	}
	return nil
}
