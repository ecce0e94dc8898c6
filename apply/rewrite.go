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

// inTreeCheck is what the checks of an in-tree PV read and learn, in
// rewrite.Checklist's order: its translation and findings (nil where it
// failed), its driver, claim and class, its rewrite (nil where it could not
// be built), and the pods using it.
type inTreeCheck struct {
	cur      *v1.PersistentVolume
	out      *v1.PersistentVolume
	checked  []plugin.Finding
	driver   string
	pvc      *v1.PersistentVolumeClaim
	sc       *storagev1.StorageClass
	r        *rewrite.PV
	pods     []v1.Pod
	podsRead bool
}

// inTreeChecks are the writer's functions of rewrite.Checklist, one per
// check: each returns the check's refusal (nil when it holds, or when what
// it judges an earlier check could not give) or an error that ends the
// checks.
var inTreeChecks = map[rewrite.Check]func(a *Writer, ctx context.Context, c *inTreeCheck) error{
	rewrite.CheckTranslation: func(a *Writer, _ context.Context, c *inTreeCheck) error {
		out, checked, _, err := a.tr.TranslateAndCheckPV(a.logger, c.cur)
		var rs []*rewrite.Refusal
		for _, f := range checked {
			if f.Severity == plugin.SeverityBlocker {
				rs = append(rs, rewrite.FindingRefusal(f))
			}
		}
		switch r := rewrite.JoinRefusals(rs...); {
		case r != nil:
			return r
		case err != nil:
			return rewrite.Refuse(rewrite.CodeNotTranslatable, "%v", err)
		}
		c.out, c.checked, c.driver = out, checked, out.Spec.CSI.Driver
		return nil
	},
	rewrite.CheckDriver: func(a *Writer, ctx context.Context, c *inTreeCheck) error { return a.driverRefusal(ctx, c.driver) },
	rewrite.CheckObject: func(a *Writer, _ context.Context, c *inTreeCheck) error { return objectRefusal(c.cur) },
	rewrite.CheckClaim: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		if cr := c.cur.Spec.ClaimRef; cr != nil && cr.UID != "" {
			var err error
			if c.pvc, err = a.claim(ctx, cr.Namespace, cr.Name); err != nil {
				return err
			}
		}
		return claimRefusal(c.cur, c.pvc)
	},
	rewrite.CheckReplacement: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		var err error
		if c.sc, err = a.storageClass(ctx, c.cur); err != nil || c.out == nil {
			return err
		}
		r, err := rewrite.Replacement(a.tr, a.logger, c.cur, c.out, c.checked, c.sc, c.pvc)
		if err != nil {
			return rewrite.Refuse(rewrite.CodeNotTranslatable, "%v", err)
		}
		c.r = &r
		return nil
	},
	rewrite.CheckKept: func(a *Writer, _ context.Context, c *inTreeCheck) error {
		return a.keptRefusal("PersistentVolume", c.cur)
	},
	rewrite.CheckNodePlugin: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		pods, err := c.usingPods(ctx, a)
		if err != nil {
			return err
		}
		return a.nodePluginRefusal(ctx, c.driver, pods)
	},
	rewrite.CheckSecrets: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		if c.out == nil {
			return nil
		}
		needs := rewrite.SecretNeeds(c.cur, c.out)
		if c.r != nil {
			if need, ok := c.r.DeletionNeed(); ok {
				needs = append(needs, need)
			}
		}
		return a.secretRefusal(ctx, needs)
	},
	rewrite.CheckCephEntry: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		e, ok := rewrite.CephEntryNeeded(c.cur, c.out)
		return a.entryRefusal(ctx, e, ok, c.driver, "the migrated volume names")
	},
	rewrite.CheckInUse: func(a *Writer, ctx context.Context, c *inTreeCheck) error {
		pods, err := c.usingPods(ctx, a)
		if err != nil {
			return err
		}
		handle := ""
		if c.out != nil {
			handle = c.out.Spec.CSI.VolumeHandle
		}
		return a.inUseRefusalOf(ctx, c.cur, c.cur, c.driver, handle, pods)
	},
}

// usingPods are the pods, not finished, that use the PV's claim (read
// once).
func (c *inTreeCheck) usingPods(ctx context.Context, a *Writer) ([]v1.Pod, error) {
	if c.podsRead {
		return c.pods, nil
	}
	cr := c.cur.Spec.ClaimRef
	if cr == nil {
		c.podsRead = true
		return nil, nil
	}
	pods, err := a.podsUsing(ctx, cr.Namespace, cr.Name)
	if err != nil {
		return nil, err
	}
	c.pods, c.podsRead = pods, true
	return pods, nil
}

// check runs rewrite.Checklist on an in-tree PV, naming every refusal at
// once, and decides its replacement (its adoption included).
func (a *Writer) check(ctx context.Context, cur *v1.PersistentVolume) (*checkedPV, error) {
	c := &inTreeCheck{cur: cur}
	// The driver of its backend, as a translation names it.
	c.driver, _ = a.tr.GetCSINameFromInTreeName(plugin.InTreeNameOfPV(cur))
	var rs reasons
	for _, check := range rewrite.Checklist() {
		if err := rs.add(inTreeChecks[check](a, ctx, c)); err != nil {
			return nil, err
		}
	}
	if err := rs.err(); err != nil {
		return nil, err
	}
	r, sc, pvc := *c.r, c.sc, c.pvc
	ad, err := a.adoptionOf(ctx, cur, r.CSI, len(c.pods) > 0)
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

// secretRefusal is why the rewrite leaves an in-tree Ceph PV alone for the
// secrets its replacement r makes Ceph CSI read (the deletion secret of one
// that ends with reclaim policy Delete included): each must exist with what
// the driver reads, as the user of the in-tree source (secrets.CephCSISecretReady,
// the rule the plan applies). A PV rewritten before its secret is ready would
// not stage, expand or delete. Every such Secret is named at once. Values
// are never read into anything printed.
func (a *Writer) secretRefusal(ctx context.Context, needs []rewrite.SecretNeed) error {
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

// classEntryRefusal is why the rewrite leaves an in-tree RBD StorageClass
// alone while the Ceph CSI driver does not serve the cluster entry its
// replacement repl names (rewrite.ClassCephEntryNeeded): nothing the class
// provisions would mount, and the cluster's class (often its default) would
// fail every new claim.
func (a *Writer) classEntryRefusal(ctx context.Context, repl *storagev1.StorageClass) error {
	e, ok := rewrite.ClassCephEntryNeeded(repl)
	return a.entryRefusal(ctx, e, ok, repl.Provisioner, "the replacement class names")
}

// entryRefusal is why the rewrite leaves an object alone whose replacement
// needs entry e (ok: it needs one) while Options.CephServed does not list
// it among those of driver, the replacement's; who is what names it ("the
// migrated volume names").
func (a *Writer) entryRefusal(ctx context.Context, e ceph.ClusterEntry, ok bool, driver, who string) error {
	if a.o.CephServed == nil || !ok {
		return nil
	}
	served, err := a.o.CephServed(ctx, driver)
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
			Reason: fmt.Sprintf("%s does not serve cluster entry %s (monitors %s), which %s (%v): the driver would not mount it", driver, e.ClusterID, strings.Join(e.Monitors, ","), who, err),
			Remedy: "add the entry where the cluster's Ceph CSI deployment reads its config, in the form that lasts there", Action: plugin.ActionAddCephEntry, ActsOn: e.ClusterID}
	}
	return nil
}
