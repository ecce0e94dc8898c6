package testenv

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PlayAttacher plays external-attacher for driver until ctx ends: every
// VolumeAttachment of the driver is marked attached.
func PlayAttacher(ctx context.Context, t testing.TB, c kubernetes.Interface, driver string) {
	go func() {
		for ctx.Err() == nil {
			list, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, va := range list.Items {
					if va.Spec.Attacher == driver && !va.Status.Attached && va.DeletionTimestamp == nil {
						va.Status.Attached = true
						if _, err := c.StorageV1().VolumeAttachments().UpdateStatus(ctx, &va, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
							t.Logf("marking %s attached: %v", va.Name, err)
						}
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// PodOn is a pod on node (nodeName set: no scheduler runs) using claim.
func PodOn(ns, name, node, claim string) *v1.Pod {
	noToken := false
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: &noToken,
			Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

// WaitPodRunning waits until the pod is Running, failing the test after d.
func WaitPodRunning(t testing.TB, c kubernetes.Interface, ns, name string, d time.Duration) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodRunning {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Running after %s: %v %+v", ns, name, d, err, p.Status)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
