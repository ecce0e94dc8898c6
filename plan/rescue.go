package plan

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/rewrite"
)

// BrokenVolume is an in-tree PV that cannot mount on the cluster's
// release: the release has neither the plugin nor its translation
// (RBD and CephFS from 1.31), so no kubelet mounts it until it is rewritten
// as a CSI PV.
type BrokenVolume struct {
	PV     string `json:"pv"`
	Plugin string `json:"plugin"`
	Claim  string `json:"claim,omitempty"`
	// Pods are the pods that use it: those whose status shows that they
	// cannot start (Stuck), and those that still run (they stop at their
	// next restart).
	Pods []StuckPod `json:"pods,omitempty"`
}

// StuckPod is a pod of a BrokenVolume.
type StuckPod struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// Stuck is what its status shows (rewrite.PodStuck: ContainerCreating,
	// PodReadyToStartContainers False), "" otherwise; Phase is its phase
	// (Running: it still runs, and stops at its next restart).
	Stuck string `json:"stuck,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Workload is the object that owns it at the top ("StatefulSet
	// app/orders"), "" for a pod of its own.
	Workload string `json:"workload,omitempty"`
}

// RescueStep is one step of a rescue, in the order Plan.Rescue gives.
type RescueStep struct {
	// Step is what the step does: RescueDriver, RescueEntries,
	// RescueSecrets, RescueStop, RescueRewrite or RescueStart.
	Step string `json:"step"`
	// Text says it in words.
	Text string `json:"text"`
	// Objects are what it acts on: the CSI drivers to install, the
	// clusterIDs to add, the Secrets ("namespace/name"), the workloads
	// ("StatefulSet app/orders", or "Pod app/orders-0" for a pod of its
	// own), or the PVs and "storageclass/NAME" to rewrite.
	Objects []string `json:"objects"`
	// Replicas are, for RescueStop and RescueStart, each workload's
	// replicas to restore ("" where it has none to scale), by Objects'
	// index.
	Replicas []string `json:"replicas,omitempty"`
	// Delete are, for RescueStop, the stuck pods of StatefulSets
	// ("namespace/name") to delete once they are scaled to zero: a
	// StatefulSet's scale-down (podManagementPolicy OrderedReady, the
	// default) waits for an unhealthy pod to be ready first, which a stuck
	// pod never is.
	Delete []string `json:"delete,omitempty"`
}

// The steps of a rescue, in their order.
const (
	RescueDriver  = "driver"
	RescueEntries = "entries"
	RescueSecrets = "secrets"
	RescueStop    = "stop"
	RescueRewrite = "rewrite"
	RescueStart   = "start"
)

// settleRescue lists, on a release past a plugin's removal (and its
// translation's), each in-tree PV that cannot mount with the pods it
// keeps from starting, and the rescue in its order: the driver where none
// is installed, the cluster entries, the Secrets, the workloads stopped,
// the rewrite, the workloads started.
func (p *Planner) settleRescue(plan *Plan) {
	var stop, del []string
	for _, v := range plan.Volumes {
		if !p.inTreeRemoved(v.Plugin) || onlineMayApply(v.Plugin, p.opts.KubernetesMinor) {
			continue
		}
		b := BrokenVolume{PV: v.Name, Plugin: v.Plugin, Claim: v.Claim}
		for _, pod := range v.InUseBy {
			sp := StuckPod{Pod: pod, Stuck: p.pods.stuck[pod], Phase: p.pods.phase[pod]}
			if ws := p.workloadsOf([]string{pod}); len(ws) > 0 {
				sp.Workload = ws[0]
			}
			b.Pods = append(b.Pods, sp)
			w := sp.Workload
			if w == "" {
				w = "Pod " + pod
			}
			if !slices.Contains(stop, w) {
				stop = append(stop, w)
			}
			// Stuck, or not running at all: the scale-down waits on it.
			if strings.HasPrefix(w, "StatefulSet ") && (sp.Stuck != "" || sp.Phase != string(v1.PodRunning)) && !slices.Contains(del, pod) {
				del = append(del, pod)
			}
		}
		plan.Broken = append(plan.Broken, b)
	}
	if len(plan.Broken) == 0 {
		return
	}
	add := func(step, text string, objects []string) {
		plan.Rescue = append(plan.Rescue, RescueStep{Step: step, Text: text, Objects: objects})
	}
	var install, entries []string
	for _, c := range plan.CephCSIConfig {
		if c.Install {
			// The operator's objects carry the entries too.
			install = append(install, c.Drivers...)
			continue
		}
		for _, e := range c.Missing {
			if !slices.Contains(entries, e.ClusterID) {
				entries = append(entries, e.ClusterID)
			}
		}
	}
	if len(install) > 0 {
		add(RescueDriver, "install Ceph CSI with the ceph-csi-operator, and create the objects the plan gives for it (a Driver for each driver, a CephConnection and a ClientProfile for each cluster entry): the rewritten PVs mount through these drivers", install)
	}
	if len(entries) > 0 {
		add(RescueEntries, "add the cluster entries the plan gives, where the driver reads them: it serves no rewritten PV of a clusterID it lacks", entries)
	}
	var secrets []string
	for _, s := range plan.Secrets {
		if s.Action != "check" {
			secrets = append(secrets, s.Namespace+"/"+s.Name)
		}
	}
	if len(secrets) > 0 {
		add(RescueSecrets, "create or change the Secrets the plan lists: the rewritten PVs name them, and the driver reads them to mount, expand and delete", secrets)
	}
	var replicas []string
	for _, w := range stop {
		replicas = append(replicas, p.replicasOf(w))
	}
	if len(stop) > 0 {
		plan.Rescue = append(plan.Rescue, RescueStep{Step: RescueStop, Objects: stop, Replicas: replicas, Delete: del,
			Text: "stop the workloads of the broken volumes' pods (scale them to zero, then delete a StatefulSet's stuck pods, which its scale-down waits on; delete a pod of its own): the rewrite refuses a PV whose pods have not finished, and a pod stuck now never mounts the old PV"})
	}
	var targets []string
	for _, b := range plan.Broken {
		targets = append(targets, b.PV)
	}
	for _, s := range plan.StorageClasses {
		if p.inTreeRemoved(s.From) && !onlineMayApply(s.From, p.opts.KubernetesMinor) {
			targets = append(targets, "storageclass/"+s.Name)
		}
	}
	add(RescueRewrite, "rewrite the broken PVs as CSI PVs, and the in-tree classes (a claim on one stays Pending): review it, then apply it", targets)
	if len(stop) > 0 {
		plan.Rescue = append(plan.Rescue, RescueStep{Step: RescueStart, Objects: stop, Replicas: replicas,
			Text: "start the workloads again (their former replicas; a pod of its own: create it again from its manifest); the new pods mount through the CSI driver"})
	}
}

// replicasOf is the replicas of a workload ("Kind namespace/name") the
// input has ("" when it has no replicas to scale: a DaemonSet, a Job, a
// pod, or one not in the input).
func (p *Planner) replicasOf(workload string) string {
	kind, rest, _ := strings.Cut(workload, " ")
	if n, ok := p.inline.replicas[kind+"/"+rest]; ok {
		return fmt.Sprint(n)
	}
	return ""
}

// addReplicas records a Deployment's, StatefulSet's, ReplicaSet's or
// ReplicationController's replicas (1 where unset, as the API server
// defaults them).
func (p *Planner) addReplicas(w *rewrite.Workload) {
	var r *int32
	switch o := w.Obj.(type) {
	case *appsv1.Deployment:
		r = o.Spec.Replicas
	case *appsv1.StatefulSet:
		r = o.Spec.Replicas
	case *appsv1.ReplicaSet:
		r = o.Spec.Replicas
	case *v1.ReplicationController:
		r = o.Spec.Replicas
	default:
		return
	}
	n := int32(1)
	if r != nil {
		n = *r
	}
	p.inline.replicas[w.Key()] = n
}
