// Package staged plans the staged CSI migration of a running cluster the way
// Gardener's generic CSI migration controller did (2020-2023): from what it
// observes of a cluster, the next step to take (wait, requeue, delete the
// legacy StorageClasses, annotate, re-render the control plane, done).
package staged

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

// Config configures the staged migration of one provider's clusters.
type Config struct {
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
func NextStep(cfg Config, obs ObservedCluster) Step {
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
