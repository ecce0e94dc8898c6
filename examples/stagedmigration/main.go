// Command stagedmigration drives staged.NextStep, the staged CSI
// migration planner, against a simulated cluster and prints each step until
// the migration is done: an existing vSphere cluster upgraded to 1.26 whose
// nodes still run 1.25 kubelets, with the legacy StorageClasses in place.
//
//	go run ./examples/stagedmigration
package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/csimigrate/csimigrate/featuregate/staged"
)

// cluster is the simulation: it carries out steps the way the real world
// eventually does (nodes are upgraded one by one while the planner waits).
type cluster struct {
	obs staged.ObservedCluster
}

func (c *cluster) apply(s staged.Step, w io.Writer) {
	switch s.Action {
	case staged.ActionWait:
		c.obs.Hibernated = false
		fmt.Fprintln(w, "   world: the cluster wakes up")
	case staged.ActionRequeue:
		nodes := slices.Sorted(maps.Keys(c.obs.KubeletMinors))
		for _, n := range nodes {
			if c.obs.KubeletMinors[n] < c.obs.Minor {
				c.obs.KubeletMinors[n] = c.obs.Minor
				fmt.Fprintf(w, "   world: node %s rolled to kubelet 1.%d\n", n, c.obs.Minor)
				return
			}
		}
	case staged.ActionDeleteStorageClasses:
		c.obs.StorageClasses = slices.DeleteFunc(c.obs.StorageClasses, func(sc staged.StorageClassRef) bool {
			return slices.Contains(s.StorageClasses, sc.Name) && sc.Provisioner == "kubernetes.io/vsphere-volume"
		})
		fmt.Fprintf(w, "   world: deleted StorageClasses %v (the CSI ones are created under the same names)\n", s.StorageClasses)
	case staged.ActionAnnotate:
		for _, k := range slices.Sorted(maps.Keys(s.Annotations)) {
			c.obs.Annotations[k] = s.Annotations[k]
			fmt.Fprintf(w, "   world: annotated %s=%s\n", k, s.Annotations[k])
		}
	case staged.ActionRerenderControlPlane:
		c.obs.ControlPlaneRendered = true
		fmt.Fprintln(w, "   world: kube-apiserver, kube-controller-manager and kube-scheduler re-rendered with InTreePluginvSphereUnregister=true")
	}
}

func run(w io.Writer) int {
	cfg := staged.Config{MigrationMinor: 26, LegacyProvisioner: "kubernetes.io/vsphere-volume", LegacyStorageClassNames: []string{"default", "thin"}}
	c := &cluster{obs: staged.ObservedCluster{
		ControlPlaneExists: true,
		Hibernated:         true,
		Minor:              26,
		KubeletMinors:      map[string]int{"worker-a": 25, "worker-b": 25, "worker-c": 26},
		StorageClasses: []staged.StorageClassRef{
			{Name: "default", Provisioner: "kubernetes.io/vsphere-volume"},
			{Name: "thin", Provisioner: "kubernetes.io/vsphere-volume"},
			{Name: "fast", Provisioner: "csi.vsphere.vmware.com"},
		},
		Annotations: map[string]string{},
	}}
	for i := 1; i <= 20; i++ {
		s := staged.NextStep(cfg, c.obs)
		fmt.Fprintf(w, "%2d. %s: %s", i, s.Action, s.Reason)
		if s.RequeueAfter > 0 {
			fmt.Fprintf(w, " (requeue after %s)", s.RequeueAfter)
		}
		fmt.Fprintln(w)
		if s.Action == staged.ActionDone {
			return 0
		}
		c.apply(s, w)
	}
	fmt.Fprintln(w, "not done after 20 steps")
	return 1
}

func main() { os.Exit(run(os.Stdout)) }
