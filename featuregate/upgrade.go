package featuregate

import (
	"fmt"

	"github.com/csimigrate/csimigrate/plugin"
)

// UpgradeSteps returns, for a cluster at Kubernetes 1.minor, the ordered
// feature-gate steps that migrate p's volumes safely (the KEP's order) and
// what the next upgrade requires.
func UpgradeSteps(minor int, p PluginGates) []string {
	name := p.InTreeName
	var out []string
	// A release newer than the table has the newest known release's
	// gates: for these plugins nothing changed after their removal.
	fg, err := ForVersion(min(minor, MaxMinor))
	if err == nil && p.Project {
		err = AddProjectGates(fg)
	}
	switch {
	case err != nil:
		return []string{err.Error()}
	case p.Project && p.InTreeRemovedIn != 0 && minor >= p.InTreeRemovedIn:
		// No Kubernetes component of this release has the plugin, and
		// none built on it migrates it: no gate to name.
		out = append(out, fmt.Sprintf("%s: 1.%d has no in-tree plugin, and Kubernetes never translated it: rewrite the stored PVs as %s PVs; they do not mount until then", name, minor, p.Driver))
	case p.Project:
		out = append(out, fmt.Sprintf("%s: Kubernetes never migrated it; components built with csimigrate migrate it with this project's gate %s (default on); stored PVs must be rewritten as CSI PVs before 1.%d, which removes the in-tree plugin", name, p.Migration, p.InTreeRemovedIn))
	case p.TranslationRemovedIn != 0 && minor >= p.TranslationRemovedIn:
		out = append(out, fmt.Sprintf("%s: 1.%d neither has the in-tree plugin nor translates it: rewrite the stored PVs as %s PVs; they do not mount until then", name, minor, p.Driver))
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
				fmt.Sprintf("%s: install %s on every node, with what its volumes need (%s)", name, p.Driver, driverNeeds(p)),
				fmt.Sprintf("%s: set %s=true on kube-controller-manager (and kube-apiserver, kube-scheduler)%s", name, p.Migration, csiMigrationToo(minor)),
				fmt.Sprintf("%s: node by node: drain, set %s=true on the kubelet, uncordon (the kubelet lists the plugin in CSINode annotation %s)", name, p.Migration, AnnMigratedPlugins),
				fmt.Sprintf("%s: when every node is migrated: set %s=true on the control plane and the kubelets", name, p.Unregister))
		}
		if p.InTreeRemovedIn != 0 && minor < p.InTreeRemovedIn {
			out = append(out, fmt.Sprintf("%s: before upgrading to 1.%d (no in-tree plugin), rewrite the stored in-tree PVs as CSI PVs", name, p.InTreeRemovedIn))
		}
	}
	return out
}

// driverNeeds names what the driver of p's volumes needs besides itself.
func driverNeeds(p PluginGates) string {
	if p.InTreeName == plugin.VSphereInTreePluginName {
		return "its vCenter configuration"
	}
	return "the Ceph CSI cluster entry and the Secrets the volumes name"
}

func csiMigrationToo(minor int) string {
	if minor <= 24 {
		return " together with CSIMigration=true"
	}
	return ""
}
