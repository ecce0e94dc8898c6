package main

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// isInTreeInline reports whether vol is an inline volume of a plugin
// csimigrate knows.
func isInTreeInline(vol *v1.Volume) bool { return plugin.InTreeNameOfVolume(vol) != "" }

// kinds gives the apiVersion of each workload kind, for objects listed from
// a cluster (which come without their TypeMeta).
var workloadAPIVersion = map[string]string{"Pod": "v1", "ReplicationController": "v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1",
	"DaemonSet": "apps/v1", "ReplicaSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}

// forCreate clears what the server sets on a workload object: metadata it
// owns and the status.
func forCreate(w *rewrite.Workload) {
	m := w.Meta
	m.ResourceVersion, m.UID, m.Generation, m.CreationTimestamp, m.ManagedFields = "", "", 0, metav1.Time{}, nil
	clearSelfLink(m)
	switch o := w.Obj.(type) {
	case *v1.Pod:
		o.Status = v1.PodStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
	case *v1.ReplicationController:
		o.Status = v1.ReplicationControllerStatus{}
	}
	if t, ok := w.Obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		t.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(workloadAPIVersion[w.Kind], w.Kind))
	}
}
