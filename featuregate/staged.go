package featuregate

import (
	"fmt"
	"slices"
	"time"
)

// Annotations the staged migration sets on a cluster object.
const (
	AnnNeedsComplete = "csi-migration.extensions.gardener.cloud/needs-complete-feature-gates"
	AnnFinished      = "csi-migration.extensions.gardener.cloud/finished"
)

// StagedConfig configures the staged migration of one provider's clusters.
type StagedConfig struct {
	// MigrationMinor is the Kubernetes minor release that starts migration.
	MigrationMinor int
	// LegacyProvisioner is the in-tree provisioner, e.g.
	// "kubernetes.io/vsphere-volume".
	LegacyProvisioner string
	// LegacyStorageClassNames are the StorageClasses to recreate with the
	// CSI provisioner (they are immutable).
	LegacyStorageClassNames []string
	// RequeueAfter is the wait for old kubelets (default one minute).
	RequeueAfter time.Duration
}

// StorageClassRef is a StorageClass name and provisioner.
type StorageClassRef struct {
	Name        string
	Provisioner string
}

// ObservedCluster is what the planner sees of a cluster.
type ObservedCluster struct {
	// ControlPlaneExists is false for a cluster being created.
	ControlPlaneExists bool
	Hibernated         bool
	// Minor is the cluster's Kubernetes minor version.
	Minor int
	// KubeletMinors has the kubelet minor version of every node.
	KubeletMinors  map[string]int
	StorageClasses []StorageClassRef
	// Annotations on the cluster object.
	Annotations map[string]string
	// ControlPlaneRendered reports that kube-apiserver,
	// kube-controller-manager and kube-scheduler run with the complete
	// gates (observed from their Deployments).
	ControlPlaneRendered bool
}

// Action is the next thing the planner wants done.
type Action string

// Actions.
const (
	ActionDone                 Action = "Done"
	ActionAnnotate             Action = "Annotate"
	ActionWait                 Action = "Wait"
	ActionRequeue              Action = "Requeue"
	ActionDeleteStorageClasses Action = "DeleteStorageClasses"
	ActionRerenderControlPlane Action = "RerenderControlPlane"
)

// Step is the planner's answer.
type Step struct {
	Action Action
	Reason string
	// RequeueAfter is set for ActionRequeue.
	RequeueAfter time.Duration
	// StorageClasses are the names to delete for ActionDeleteStorageClasses.
	StorageClasses []string
	// Annotations to set for ActionAnnotate.
	Annotations map[string]string
}

// NextStep returns the next step of the staged migration of a cluster, as
// Gardener's generic CSI migration controller did: a new cluster, or one
// above the migration release, is marked complete and finished; one below it
// needs nothing; one at the migration release waits while hibernated,
// requeues while a kubelet is older, deletes the legacy StorageClasses
// (only those whose provisioner is the legacy one), annotates that it needs
// the complete gates, has the control plane re-rendered with them, and is
// marked finished. It is a pure function: the caller carries out the step
// and observes the cluster again.
func NextStep(cfg StagedConfig, obs ObservedCluster) Step {
	if obs.Annotations[AnnFinished] == "true" {
		return Step{Action: ActionDone, Reason: "migration marked finished"}
	}
	complete := map[string]string{AnnNeedsComplete: "true", AnnFinished: "true"}
	switch {
	case obs.Minor < cfg.MigrationMinor:
		return Step{Action: ActionDone, Reason: fmt.Sprintf("Kubernetes 1.%d is below the migration release 1.%d: in-tree, nothing to do", obs.Minor, cfg.MigrationMinor)}
	case !obs.ControlPlaneExists:
		return Step{Action: ActionAnnotate, Annotations: complete, Reason: "new cluster: start with CSI and the complete gates"}
	case obs.Minor > cfg.MigrationMinor:
		return Step{Action: ActionAnnotate, Annotations: complete, Reason: fmt.Sprintf("Kubernetes 1.%d is above the migration release: CSI and complete", obs.Minor)}
	case obs.Hibernated:
		return Step{Action: ActionWait, Reason: "cluster is hibernated: wait until it wakes up"}
	}
	var old []string
	for node, m := range obs.KubeletMinors {
		if m < cfg.MigrationMinor {
			old = append(old, node)
		}
	}
	if len(old) > 0 {
		slices.Sort(old)
		after := cfg.RequeueAfter
		if after <= 0 {
			after = time.Minute
		}
		return Step{Action: ActionRequeue, RequeueAfter: after, Reason: fmt.Sprintf("kubelets older than 1.%d on %v", cfg.MigrationMinor, old)}
	}
	var del []string
	for _, sc := range obs.StorageClasses {
		if sc.Provisioner == cfg.LegacyProvisioner && slices.Contains(cfg.LegacyStorageClassNames, sc.Name) {
			del = append(del, sc.Name)
		}
	}
	if len(del) > 0 {
		slices.Sort(del)
		return Step{Action: ActionDeleteStorageClasses, StorageClasses: slices.Compact(del),
			Reason: "legacy StorageClasses are immutable: delete them so they are recreated with the CSI provisioner"}
	}
	if obs.Annotations[AnnNeedsComplete] != "true" {
		return Step{Action: ActionAnnotate, Annotations: map[string]string{AnnNeedsComplete: "true"},
			Reason: "every kubelet is at the migration release: the control plane can get the complete gates"}
	}
	if !obs.ControlPlaneRendered {
		return Step{Action: ActionRerenderControlPlane,
			Reason: "patch kube-apiserver, kube-controller-manager and kube-scheduler so they are rendered with the complete / unregister gates"}
	}
	return Step{Action: ActionAnnotate, Annotations: map[string]string{AnnFinished: "true"}, Reason: "migration complete"}
}

// UpgradeSteps returns, for a cluster at Kubernetes 1.minor, the ordered
// feature-gate steps that migrate p's volumes safely (the KEP's order) and
// what the next upgrade requires.
func UpgradeSteps(minor int, p Plugin) []string {
	name := p.InTreeName
	var out []string
	fg, err := ForVersion(minor)
	if err == nil && p.Project {
		err = AddProjectGates(fg)
	}
	switch {
	case err != nil:
		return []string{err.Error()}
	case p.Project:
		out = append(out, fmt.Sprintf("%s: Kubernetes never migrated it; components built with csimigrate migrate it with this project's gate %s (default on); stored PVs must be rewritten as CSI PVs before 1.%d, which removes the in-tree plugin", name, p.Migration, p.InTreeRemovedIn))
	case p.TranslationRemovedIn != 0 && minor >= p.TranslationRemovedIn:
		out = append(out, fmt.Sprintf("%s: 1.%d neither has the in-tree plugin nor translates it: rewrite the stored PVs as %s PVs (csimigrate rewrite); they do not mount until then", name, minor, p.Driver))
	case MigrationEnabled(fg, minor, p) && !known(fg, p.Migration):
		what := "migration is GA and always on"
		if minor >= p.InTreeRemovedIn {
			what = "there is no in-tree plugin; migration is always on"
		}
		out = append(out, fmt.Sprintf("%s: in 1.%d %s: %s must run on every node with its migration settings", name, minor, what, p.Driver))
	default:
		spec, ok := SpecAt(p.Migration, minor)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: 1.%d has no %s gate: upgrade to 1.%d or later to migrate", name, minor, p.Migration, lifecycles[p.Migration].Stages[0].Since))
		case spec.LockToDefault:
			out = append(out, fmt.Sprintf("%s: %s is locked on in 1.%d: install %s before upgrading to it", name, p.Migration, minor, p.Driver))
		default:
			out = append(out,
				fmt.Sprintf("%s: install %s on every node and create what `csimigrate plan` lists (Ceph CSI config map, secrets)", name, p.Driver),
				fmt.Sprintf("%s: set %s=true on kube-controller-manager (and kube-apiserver, kube-scheduler)%s", name, p.Migration, csiMigrationToo(minor)),
				fmt.Sprintf("%s: node by node: drain, set %s=true on the kubelet, uncordon (the kubelet lists the plugin in CSINode annotation %s)", name, p.Migration, AnnMigratedPlugins),
				fmt.Sprintf("%s: when every node is migrated: set %s=true on the control plane and the kubelets", name, p.Unregister))
		}
		if p.InTreeRemovedIn != 0 && minor < p.InTreeRemovedIn {
			out = append(out, fmt.Sprintf("%s: before upgrading to 1.%d (no in-tree plugin), rewrite the stored in-tree PVs as CSI PVs (csimigrate rewrite)", name, p.InTreeRemovedIn))
		}
	}
	return out
}

func csiMigrationToo(minor int) string {
	if minor <= 24 {
		return " together with CSIMigration=true"
	}
	return ""
}
