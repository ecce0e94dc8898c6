package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controller"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controllercmd"
	"github.com/csimigrate/csimigrate/rewrite"
)

// overlayArgs are the controller's arguments in the Deployment an overlay
// renders, without the command's name and the metrics address (the test
// gives each process its own).
func overlayArgs(t *testing.T, dir string) []string {
	t.Helper()
	for _, u := range kustomized(t, dir) {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args[1:] {
			if !strings.HasPrefix(a, "-metrics-address") {
				out = append(out, a)
			}
		}
		return out
	}
	t.Fatalf("%s renders no Deployment", dir)
	return nil
}

// verdicts are the controller's verdicts on the PVs and StorageClasses
// named, from its Events on them: "migrates" (WouldMigrate in a dry run,
// Migrated when acting), a refusal's code, and "kept at Retain"; the Events
// of the steps, notes and waits are not verdicts.
func verdicts(c kubernetes.Interface, pvs, classes []string) map[string][]string {
	out := map[string][]string{}
	add := func(kind, name string) {
		list, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name + ",source=csimigrate-controller"})
		if err != nil {
			return
		}
		for _, e := range list.Items {
			v := e.Reason
			switch e.Reason {
			case controller.ReasonNoted, controller.ReasonWaitingForDriver, controller.ReasonWaitingForPVs:
				continue
			case controller.ReasonWouldMigrate, controller.ReasonMigrated:
				v = "migrates"
			}
			key := kind + "/" + name
			if !slices.Contains(out[key], v) {
				out[key] = append(out[key], v)
				slices.Sort(out[key])
			}
		}
	}
	for _, n := range pvs {
		add("PersistentVolume", n)
	}
	for _, n := range classes {
		add("StorageClass", n)
	}
	return out
}

// A dry run reports what the real run does: the act overlay's controller
// run with -dry-run, then acting, on the same cluster, gives each PV and
// class in its scope the same verdict (migrated, or refused with the same
// code: a Secret missing, Ceph CSI not serving the volume's entry, a volume
// in use) and the same reclaim policy kept, Event for Event. The reporting
// controller leads by its own Lease: rewrite -apply of a PV outside its
// scope proceeds beside it.
func TestControllerDryRunAsActing(t *testing.T) {
	cs := startControllerServer(t)
	c := cs.c
	ctx := context.Background()
	pvs := seedForPods(t, c, "dra")
	label := func(o metav1.Object) { o.SetLabels(map[string]string{"csimigrate.io/migrate": "true"}) }
	testenv.CreateBoundPV(t, c, "dra", "dra-nosecret", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "absent", Namespace: "dra"}
	})
	if err := c.CoreV1().Secrets("dra").Delete(ctx, "absent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Ceph CSI serves no entry for these monitors.
	testenv.CreateBoundPV(t, c, "dra", "dra-noentry", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.CephMonitors = []string{"10.70.53.200:6789"}
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-noentry", Namespace: "dra"}
	})
	testenv.CreateBoundPV(t, c, "dra", "dra-inuse", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-inuse", Namespace: "dra"}
	})
	runPodOn(t, c, "dra", "dra-inuse")
	// Outside the overlay's scope (no label): rewrite -apply's.
	testenv.CreateBoundPV(t, c, "dra", "dra-command", func(pv *v1.PersistentVolume) {
		pv.Spec.RBD.SecretRef = &v1.SecretReference{Name: "ceph-command", Namespace: "dra"}
	})
	pvs = append(pvs, "dra-nosecret", "dra-noentry", "dra-inuse")
	testenv.WaitBound(t, c, "dra", append(slices.Clone(pvs), "dra-command"))
	for _, n := range pvs {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		label(pv)
		if _, err := c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := c.StorageV1().StorageClasses().Get(ctx, "rbd-dra", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	label(sc)
	if _, err := c.StorageV1().StorageClasses().Update(ctx, sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range testenv.UpstreamCSIDrivers {
		createCSIDriver(t, c, d)
	}
	classes := []string{"rbd-dra"}
	args := overlayArgs(t, "deploy/overlays/act")
	complete := func(v map[string][]string) error {
		for _, n := range pvs {
			if len(v["PersistentVolume/"+n]) == 0 {
				return fmt.Errorf("no verdict on pv/%s yet: %v", n, v)
			}
		}
		if len(v["StorageClass/rbd-dra"]) == 0 {
			return fmt.Errorf("no verdict on storageclass/rbd-dra yet: %v", v)
		}
		return nil
	}

	dry := cs.startController(t, "dry", append(slices.Clone(args), "-dry-run")...)
	var dryV map[string][]string
	eventually(t, 60*time.Second, func() error {
		dryV = verdicts(c, pvs, classes)
		return complete(dryV)
	})
	// Beside the reporting controller, rewrite -apply takes the writer
	// Lease and rewrites its PV.
	if out, stderr, code := runCmd(t, "", "rewrite", "-apply", "-kubeconfig", cs.adminKC, "-lease-wait", "5s", "dra-command"); code != cli.ExitOK {
		t.Fatalf("rewrite -apply beside the reporting controller: exit %d\n%s\n%s", code, out, stderr)
	}
	waitRewritten(t, c, "dra-command")
	if l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, controllercmd.ReportLeaseName, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "dry" {
		t.Errorf("the reporting controller's Lease: %+v %v; want held by dry", l, err)
	}
	for _, n := range pvs {
		if st, _, err := pvPhase(c, n); err != nil || st != "in-tree" {
			t.Fatalf("pv/%s is %s after the dry run (%v)", n, st, err)
		}
	}
	if err := dry.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-dry.done
	// The dry run's Events go; the acting controller's come.
	// (Those of cluster-scoped objects are in namespace default.)
	for _, ns := range []string{metav1.NamespaceDefault, "dra"} {
		if err := c.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "source=csimigrate-controller"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		if v := verdicts(c, pvs, classes); len(v) > 0 {
			return fmt.Errorf("the dry run's Events are still listed: %v", v)
		}
		return nil
	})

	cs.startController(t, "act", args...)
	var actV map[string][]string
	eventually(t, 90*time.Second, func() error {
		actV = verdicts(c, pvs, classes)
		if err := complete(actV); err != nil {
			return err
		}
		// Each object ends migrated or refused (a kept reclaim policy is
		// said before the end).
		for k, v := range actV {
			if !slices.ContainsFunc(v, func(r string) bool { return r != controller.ReasonKeptRetain }) {
				return fmt.Errorf("%s: not migrated or refused yet: %v", k, v)
			}
		}
		return nil
	})
	keys := slices.Sorted(maps.Keys(dryV))
	if !slices.Equal(keys, slices.Sorted(maps.Keys(actV))) {
		t.Errorf("objects with verdicts: dry run %v, acting %v", keys, slices.Sorted(maps.Keys(actV)))
	}
	for _, k := range keys {
		if !slices.Equal(dryV[k], actV[k]) {
			t.Errorf("%s: the dry run said %v, the real run did %v", k, dryV[k], actV[k])
		}
	}
	// The cases the comparison is about are there.
	for k, want := range map[string]string{"PersistentVolume/dra-nosecret": string(rewrite.CodeSecretMissing), "PersistentVolume/dra-noentry": string(rewrite.CodeCephEntryMissing),
		"PersistentVolume/dra-inuse": string(rewrite.CodeInUse), "PersistentVolume/dra-rbd": "migrates", "StorageClass/rbd-dra": "migrates"} {
		if !slices.Contains(dryV[k], want) {
			t.Errorf("%s: the dry run said %v, want %s", k, dryV[k], want)
		}
	}
	if _, err := c.CoordinationV1().Leases("kube-system").Get(ctx, apply.LeaseName, metav1.GetOptions{}); err != nil {
		t.Errorf("the acting controller's writer Lease: %v", err)
	}
}
