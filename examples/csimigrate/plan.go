package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// Plan is the report of `csimigrate plan`.
type Plan struct {
	Volumes        []VolumePlan        `json:"volumes"`
	InlineVolumes  []InlinePlan        `json:"inlineVolumes,omitempty"`
	StorageClasses []StorageClassPlan  `json:"storageClasses,omitempty"`
	CephClusters   []ceph.ClusterEntry `json:"cephClusters,omitempty"`
	Secrets        []SecretPlan        `json:"secrets,omitempty"`
	FeatureGates   []string            `json:"featureGateSteps,omitempty"`
	Blocked        bool                `json:"blocked"`
}

// VolumePlan is the plan for one in-tree PV.
type VolumePlan struct {
	Name       string            `json:"name"`
	Plugin     string            `json:"plugin"`
	Driver     string            `json:"driver,omitempty"`
	Migratable bool              `json:"migratable"`
	Reason     string            `json:"reason,omitempty"`
	Claim      string            `json:"claim,omitempty"`
	InUseBy    []string          `json:"inUseBy,omitempty"`
	Findings   []plugins.Finding `json:"findings,omitempty"`
	Handle     string            `json:"volumeHandle,omitempty"`
}

// InlinePlan is the plan for one inline in-tree volume of a pod.
type InlinePlan struct {
	Pod        string `json:"pod"`
	Volume     string `json:"volume"`
	Plugin     string `json:"plugin"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
}

// StorageClassPlan says how to recreate an in-tree StorageClass.
type StorageClassPlan struct {
	Name       string `json:"name"`
	From       string `json:"from"`
	To         string `json:"to,omitempty"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
}

// SecretPlan is a Secret to create or change. Values are never included.
type SecretPlan struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Action    string   `json:"action"`
	Fields    []string `json:"fields"`
	From      string   `json:"from,omitempty"`
	Reason    string   `json:"reason"`
}

func claimKey(ns, name string) string { return ns + "/" + name }

// buildPlan computes the plan of an inventory.
func buildPlan(inv *Inventory, tr *translate.Translator, logger klog.Logger, steps []string) *Plan {
	p := &Plan{FeatureGates: steps}
	secretsByKey := map[string]*v1.Secret{}
	for _, s := range inv.Secrets {
		secretsByKey[claimKey(s.Namespace, s.Name)] = s
	}
	// Pods using each claim, for the in-use warning.
	podsByClaim := map[string][]string{}
	for _, pod := range inv.Pods {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil {
				k := claimKey(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
				podsByClaim[k] = append(podsByClaim[k], pod.Namespace+"/"+pod.Name)
			}
		}
	}
	clusters := map[string]ceph.ClusterEntry{}
	secretPlans := map[string]*SecretPlan{}
	addSecret := func(sp SecretPlan) {
		k := sp.Namespace + "/" + sp.Name + "/" + sp.Action
		if old, ok := secretPlans[k]; ok {
			old.Fields = slices.Compact(slices.Sorted(slices.Values(append(old.Fields, sp.Fields...))))
			return
		}
		secretPlans[k] = &sp
	}
	for _, pv := range inv.PVs {
		name := plugins.InTreeNameOfPV(pv)
		if name == "" {
			continue
		}
		vp := VolumePlan{Name: pv.Name, Plugin: name}
		if pv.Spec.ClaimRef != nil {
			vp.Claim = claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
			vp.InUseBy = podsByClaim[vp.Claim]
		}
		if !tr.IsPVMigratable(pv) {
			vp.Reason = "no migration plugin registered for " + name
			p.Volumes = append(p.Volumes, vp)
			p.Blocked = true
			continue
		}
		vp.Driver, _ = tr.GetCSINameFromInTreeName(name)
		for _, f := range tr.CheckPV(pv) {
			// The secret is in the input and already names the user.
			if f.Code == rbd.FindingNonAdminUser && pv.Spec.RBD.SecretRef != nil {
				if s, ok := secretsByKey[claimKey(pv.Spec.RBD.SecretRef.Namespace, pv.Spec.RBD.SecretRef.Name)]; ok {
					if fixes, err := secrets.CephMigrationSecretFixes(s, pv.Spec.RBD.RadosUser); err == nil && len(fixes) == 0 {
						continue
					}
				}
			}
			vp.Findings = append(vp.Findings, f)
		}
		out, err := tr.TranslateInTreePVToCSI(logger, pv)
		switch {
		case err != nil:
			vp.Reason = err.Error()
		default:
			vp.Migratable = true
			vp.Handle = out.Spec.CSI.VolumeHandle
		}
		for _, f := range vp.Findings {
			if f.Severity == plugins.SeverityBlocker {
				vp.Migratable = false
				if vp.Reason == "" {
					vp.Reason = f.Message
				}
			}
		}
		if !vp.Migratable {
			p.Blocked = true
		}
		switch {
		case pv.Spec.RBD != nil:
			e := ceph.EntryFor(pv.Spec.RBD.CephMonitors)
			clusters[e.ClusterID] = e
			if ref := pv.Spec.RBD.SecretRef; ref != nil {
				planRBDSecret(ref.Namespace, ref.Name, pv.Spec.RBD.RadosUser, secretsByKey, addSecret)
			}
		case pv.Spec.CephFS != nil:
			e := ceph.EntryFor(pv.Spec.CephFS.Monitors)
			clusters[e.ClusterID] = e
			if err == nil && out.Spec.CSI.NodeStageSecretRef != nil && pv.Spec.CephFS.SecretRef != nil && pv.Annotations[cephfs.AnnNodeStageSecret] == "" {
				ref := out.Spec.CSI.NodeStageSecretRef
				from := claimKey(ref.Namespace, pv.Spec.CephFS.SecretRef.Name)
				sp := SecretPlan{Namespace: ref.Namespace, Name: ref.Name, Action: "create", From: from,
					Fields: []string{secrets.CephUserID, secrets.CephUserKey},
					Reason: "Ceph CSI stages static CephFS volumes with userID/userKey; the in-tree secret stays as it is"}
				if _, ok := secretsByKey[from]; !ok {
					sp.Reason += " (source secret not in the input)"
				}
				addSecret(sp)
			}
		}
		p.Volumes = append(p.Volumes, vp)
	}
	for _, pod := range inv.Pods {
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			name := plugins.InTreeNameOfVolume(vol)
			if name == "" {
				continue
			}
			ip := InlinePlan{Pod: pod.Namespace + "/" + pod.Name, Volume: vol.Name, Plugin: name}
			if _, err := tr.TranslateInTreeInlineVolumeToCSI(logger, vol, pod.Namespace); err != nil {
				ip.Reason = err.Error()
			} else {
				ip.Migratable = true
				if vol.RBD != nil {
					e := ceph.EntryFor(vol.RBD.CephMonitors)
					clusters[e.ClusterID] = e
					if vol.RBD.SecretRef != nil {
						planRBDSecret(pod.Namespace, vol.RBD.SecretRef.Name, vol.RBD.RadosUser, secretsByKey, addSecret)
					}
				}
				if vol.VsphereVolume != nil {
					ip.Migratable = false
					ip.Reason = "the vSphere CSI driver does not support inline volumes after migration: move it to a PV and PVC"
				}
			}
			if !ip.Migratable {
				p.Blocked = true
			}
			p.InlineVolumes = append(p.InlineVolumes, ip)
		}
	}
	for _, sc := range inv.StorageClasses {
		if !tr.IsMigratableIntreePluginByName(sc.Provisioner) {
			continue
		}
		sp := StorageClassPlan{Name: sc.Name, From: sc.Provisioner}
		out, err := tr.TranslateInTreeStorageClassToCSI(logger, sc.Provisioner, sc)
		if err != nil {
			sp.Reason = err.Error()
			p.Blocked = true
		} else {
			sp.Migratable, sp.To = true, out.Provisioner
			if d := out.Annotations[rbd.AnnDroppedParameters]; d != "" {
				sp.Reason = "parameters without a Ceph CSI counterpart are dropped: " + d
			}
			if mons := out.Parameters["monitors"]; mons != "" && sc.Provisioner == rbd.PluginName {
				e := ceph.ClusterEntry{ClusterID: out.Parameters["clusterID"], Monitors: strings.Split(mons, ",")}
				clusters[e.ClusterID] = e
			}
		}
		p.StorageClasses = append(p.StorageClasses, sp)
	}
	for _, id := range slices.Sorted(mapKeys(clusters)) {
		p.CephClusters = append(p.CephClusters, clusters[id])
	}
	keys := make([]string, 0, len(secretPlans))
	for k := range secretPlans {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.Secrets = append(p.Secrets, *secretPlans[k])
	}
	return p
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func planRBDSecret(ns, name, user string, have map[string]*v1.Secret, add func(SecretPlan)) {
	s, ok := have[claimKey(ns, name)]
	if !ok {
		if user != "" && user != secrets.CephDefaultUser {
			add(SecretPlan{Namespace: ns, Name: name, Action: "check", Fields: []string{secrets.CephInTreeKey, secrets.CephMigrationUserKey},
				Reason: fmt.Sprintf("not in the input: it must hold \"key\" and adminId=%s for Ceph CSI to connect as %s", user, user)})
		}
		return
	}
	fixes, err := secrets.CephMigrationSecretFixes(s, user)
	if errors.Is(err, secrets.ErrCephNoKey) {
		add(SecretPlan{Namespace: ns, Name: name, Action: "fix", Fields: []string{secrets.CephInTreeKey}, Reason: err.Error()})
		return
	}
	for _, f := range fixes {
		add(SecretPlan{Namespace: ns, Name: name, Action: "add", Fields: []string{f.Field + "=" + f.Value}, Reason: f.Reason})
	}
}

// storageClassesToRecreate translates the in-tree StorageClasses.
func storageClassesToRecreate(inv *Inventory, tr *translate.Translator, logger klog.Logger) ([]*storagev1.StorageClass, []error) {
	var out []*storagev1.StorageClass
	var errs []error
	for _, sc := range inv.StorageClasses {
		if !tr.IsMigratableIntreePluginByName(sc.Provisioner) {
			continue
		}
		csi, err := tr.TranslateInTreeStorageClassToCSI(logger, sc.Provisioner, sc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		csi.ResourceVersion, csi.UID, csi.CreationTimestamp, csi.ManagedFields = "", "", metav1.Time{}, nil
		out = append(out, csi)
	}
	return out, errs
}
