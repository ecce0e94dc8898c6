package staged

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// --- the staged planner ---

var cfg = Config{MigrationMinor: 26, LegacyProvisioner: "kubernetes.io/vsphere-volume", LegacyStorageClassNames: []string{"default", "thin"}}

func genObserved(t *rapid.T) ObservedCluster {
	obs := ObservedCluster{
		ControlPlaneExists:   rapid.Bool().Draw(t, "exists"),
		Hibernated:           rapid.Bool().Draw(t, "hibernated"),
		Minor:                rapid.IntRange(24, 28).Draw(t, "minor"),
		KubeletMinors:        rapid.MapOf(rapid.StringMatching(`node-[a-c]`), rapid.IntRange(24, 28)).Draw(t, "kubelets"),
		ControlPlaneRendered: rapid.Bool().Draw(t, "rendered"),
		Annotations:          map[string]string{},
	}
	for _, k := range []string{AnnNeedsComplete, AnnFinished} {
		if rapid.IntRange(0, 3).Draw(t, "has"+k) == 0 {
			obs.Annotations[k] = "true"
		}
	}
	obs.StorageClasses = rapid.SliceOf(rapid.Custom(func(t *rapid.T) StorageClassRef {
		return StorageClassRef{Name: rapid.SampledFrom([]string{"default", "thin", "fast"}).Draw(t, "name"),
			Provisioner: rapid.SampledFrom([]string{"kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", "other"}).Draw(t, "prov")}
	})).Draw(t, "scs")
	return obs
}

// converge carries out a step the way the world eventually does.
func converge(obs *ObservedCluster, s Step) {
	switch s.Action {
	case ActionAnnotate:
		for k, v := range s.Annotations {
			obs.Annotations[k] = v
		}
	case ActionWait:
		obs.Hibernated = false
	case ActionRequeue:
		for n := range obs.KubeletMinors {
			obs.KubeletMinors[n] = obs.Minor
		}
	case ActionDeleteStorageClasses:
		var keep []StorageClassRef
		for _, sc := range obs.StorageClasses {
			del := false
			for _, d := range s.StorageClasses {
				del = del || (sc.Name == d && sc.Provisioner == cfg.LegacyProvisioner)
			}
			if !del {
				keep = append(keep, sc)
			}
		}
		obs.StorageClasses = keep
	case ActionRerenderControlPlane:
		obs.ControlPlaneRendered = true
	}
}

func TestPlannerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		obs := genObserved(t)
		for i := 0; i < 20; i++ {
			s := NextStep(cfg, obs)
			if s.Action == ActionDone {
				return
			}
			if s.Action == ActionDeleteStorageClasses {
				for _, name := range s.StorageClasses {
					legacy := false
					for _, sc := range obs.StorageClasses {
						legacy = legacy || (sc.Name == name && sc.Provisioner == cfg.LegacyProvisioner)
					}
					if !legacy {
						t.Fatalf("deletes %q, whose provisioner is not the legacy one", name)
					}
				}
			}
			if s.Action == ActionAnnotate && s.Annotations[AnnFinished] == "true" && obs.ControlPlaneExists && obs.Minor == cfg.MigrationMinor {
				for n, m := range obs.KubeletMinors {
					if m < cfg.MigrationMinor {
						t.Fatalf("marks complete while node %s runs kubelet 1.%d", n, m)
					}
				}
			}
			if s.Action == ActionRequeue && s.RequeueAfter != time.Minute {
				t.Fatalf("requeue after %v", s.RequeueAfter)
			}
			converge(&obs, s)
		}
		t.Fatalf("not done after 20 steps: %+v", NextStep(cfg, obs))
	})
}
