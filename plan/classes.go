package plan

import (
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	storagev1 "k8s.io/api/storage/v1"
)

func (p *Planner) addStorageClass(sc *storagev1.StorageClass) {
	if p.opts.Namespace != "" || !rewrite.TranslatableClass(p.tr, sc) {
		return
	}
	in := rewrite.InTreeClass(sc)
	p.plugins[in.Provisioner] = true
	sp := StorageClassPlan{Name: sc.Name, From: sc.Provisioner}
	if sc.Provisioner == plugin.CephFSExternalProvisioner {
		sp.Reason, sp.Codes = p.cephFSProvisionerClass(sc), []string{string(rewrite.CodeNotTranslatable)}
		p.plan.StorageClasses = append(p.plan.StorageClasses, sp)
		p.plan.Blocked = true
		return
	}
	out, err := p.tr.TranslateInTreeStorageClassToCSI(p.logger, in.Provisioner, in)
	if err != nil {
		sp.Reason, sp.Codes = err.Error(), []string{string(rewrite.CodeNotTranslatable)}
		p.plan.Blocked = true
	} else {
		sp.Migratable, sp.To = true, out.Provisioner
		var notes []string
		if in != sc {
			notes = append(notes, sc.Provisioner+" (retired, outside Kubernetes) creates in-tree "+in.Provisioner+" PVs, which no kubelet mounts from 1.31; its parameters are the in-tree plugin's and translate as such")
		}
		if d := out.Annotations[rbd.AnnDroppedParameters]; d != "" {
			notes = append(notes, "parameters without a Ceph CSI counterpart are dropped: "+d)
		}
		sp.Reason = strings.Join(notes, "; ")
		if e, ok := rewrite.ClassCephEntryNeeded(out); ok && in.Provisioner == rbd.PluginName {
			p.ceph.clusters[e.ClusterID] = e
			p.ceph.config.need(in.Provisioner, e, "", sc.Name)
		}
		if in.Provisioner == rbd.PluginName {
			// Ceph CSI reads the migration user from the admin secret's
			// adminId, never from the class's parameter.
			if ref, user, err := rewrite.ClassAdminSecret(out); err == nil && ref != nil {
				p.secrets.needs = append(p.secrets.needs, secretNeed{SecretNeed: rewrite.SecretNeed{Namespace: ref.Namespace, Name: ref.Name, Driver: secrets.CephRBDDriver,
					User: user, Uses: []string{string(secrets.Provisioner), string(secrets.NodeStage), string(secrets.ControllerExpand)}}, class: sc.Name})
			}
		}
	}
	if f := p.drivers.check(in.Provisioner); f != nil && sp.Migratable {
		// The class's needs are planned all the same (its secrets), but
		// nothing would provision for it.
		sp.Migratable, sp.Reason, sp.Codes = false, f.Message+"; "+f.Remedy, []string{f.Code}
		p.plan.Blocked = true
	}
	p.keptClass(&sp, sc)
	p.plan.StorageClasses = append(p.plan.StorageClasses, sp)
	if sp.Migratable && in.Provisioner == vsphere.PluginName && p.opts.VCenter != nil {
		p.vsphereClass(in)
	}
}

// cephFSProvisionerClass is the reason a ceph.com/cephfs class cannot be
// replaced automatically, with what its CSI replacement needs.
func (p *Planner) cephFSProvisionerClass(sc *storagev1.StorageClass) string {
	why := sc.Provisioner + " (retired, outside Kubernetes) creates in-tree CephFS PVs (one directory and one Ceph user per claim), which no kubelet mounts from 1.31, and it has no CSI counterpart csimigrate can derive: Ceph CSI's CephFS provisioner needs the file system's name (fsName) and an admin secret with adminID/adminKey"
	clusterID := "<clusterID>"
	if mons := sc.Parameters["monitors"]; mons != "" {
		e := ceph.EntryFor(strings.Split(mons, ","))
		p.ceph.clusters[e.ClusterID] = e
		clusterID = e.ClusterID
	}
	return why + "; delete the class and create it again with the same name, provisioner cephfs.csi.ceph.com and parameters clusterID: " + clusterID +
		", fsName: <your file system>, csi.storage.k8s.io/provisioner-secret-name/-namespace and node-stage-secret-name/-namespace naming such a secret"
}

// classBlocked marks an in-tree class as not migratable, for why (of
// code), which joins what already blocks it: the class names every reason,
// as rewrite -apply's refusal of it does.
func (p *Planner) classBlocked(name, code, why string) {
	if i := slices.IndexFunc(p.plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == name }); i >= 0 {
		sp := &p.plan.StorageClasses[i]
		if sp.Migratable || sp.Reason == "" {
			sp.Reason = why
		} else {
			sp.Reason += "; also: " + why
		}
		sp.Migratable = false
		sp.Codes = append(sp.Codes, code)
	}
	p.plan.Blocked = true
}

// keptClass notes the keepers of an in-tree class (keptFinding), with the
// class as their source should hold it, and blocks it while they have not
// been told.
func (p *Planner) keptClass(sp *StorageClassPlan, sc *storagev1.StorageClass) {
	f, keepers := p.keptFinding("StorageClass", sc)
	if f == nil {
		return
	}
	sp.KeptBy, sp.Kept = keepers, f
	if sp.Migratable {
		if r, err := rewrite.ClassReplacement(p.tr, p.logger, sc); err == nil {
			sp.Source = rewrite.SourceClass(r)
		}
	}
	if f.Severity == plugin.SeverityBlocker {
		if sp.Migratable {
			sp.Reason = f.Message
		} else {
			sp.Reason += "; also: " + f.Message
		}
		sp.Migratable, sp.Codes = false, append(sp.Codes, f.Code)
		p.plan.Blocked = true
	}
}
