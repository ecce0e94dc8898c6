package testenv

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/featuregate"
)

// What the upgrade journeys (cephtest, vspheretest) check on a cluster
// after its control plane moved.

// RunPod creates a pod of claim on node (PodOn) and waits until it runs.
func RunPod(t testing.TB, c kubernetes.Interface, ns, name, node, claim string) {
	t.Helper()
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), PodOn(ns, name, node, claim), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitPodRunning(t, c, ns, name, 90*time.Second)
}

// DeletePod deletes a pod and waits until it is gone (the kubelet
// confirms the deletion once its volumes are unmounted).
func DeletePod(t testing.TB, c kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not gone after 90 s: %v", ns, name, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// CheckAttachments fails the test for a VolumeAttachment whose PV is gone,
// or whose name is not the one kube-controller-manager computes from the
// PV's handle, driver and node (it was made for another handle).
func CheckAttachments(t testing.TB, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	list, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, va := range list.Items {
		name := va.Spec.Source.PersistentVolumeName
		if name == nil {
			continue
		}
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, *name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("VolumeAttachment %s names PV %s: %v", va.Name, *name, err)
		case pv.Spec.CSI == nil || va.Name != featuregate.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, va.Spec.NodeName):
			t.Errorf("VolumeAttachment %s of PV %s on %s is not the one of its handle", va.Name, *name, va.Spec.NodeName)
		}
	}
}

// LogHas fails the test unless a line of the log at path has both texts.
func LogHas(t testing.TB, path, text, about string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, text) && strings.Contains(line, about) {
			return
		}
	}
	t.Errorf("%s has no line with %q about %s", path, text, about)
}

// NoErrorsAbout fails the test for each error line (klog's E) of the log
// at path that names one of the objects, as a word (quoted, escaped or
// not).
func NoErrorsAbout(t testing.TB, path string, objects ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []*regexp.Regexp
	for _, o := range objects {
		names = append(names, regexp.MustCompile(`(^|[^A-Za-z0-9.-])`+regexp.QuoteMeta(o)+`($|[^A-Za-z0-9.-])`))
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "E") {
			continue
		}
		for i, re := range names {
			if re.MatchString(line) {
				t.Errorf("%s logs an error about %s: %s", path, objects[i], line)
				break
			}
		}
	}
}
