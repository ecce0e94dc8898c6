package featuregate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	k8sfeaturegate "k8s.io/component-base/featuregate"

	"github.com/csimigrate/csimigrate/plugin"
)

// Plugin describes the gates and history of one in-tree plugin.
type PluginGates struct {
	// InTreeName is the in-tree plugin name, e.g. "kubernetes.io/rbd".
	InTreeName string
	// Driver is the CSI driver it migrates to.
	Driver string
	// Migration is the CSIMigration<X> gate.
	Migration k8sfeaturegate.Feature
	// Complete is the CSIMigration<X>Complete gate (before 1.21), if any.
	Complete k8sfeaturegate.Feature
	// Unregister is the InTreePlugin<X>Unregister gate (1.21 on).
	Unregister k8sfeaturegate.Feature
	// InTreeRemovedIn is the first release without the in-tree plugin.
	InTreeRemovedIn int
	// TranslationRemovedIn is the first release whose csi-translation-lib
	// no longer translates the plugin (0: never removed).
	TranslationRemovedIn int
	// Project marks plugins whose gates are this project's own.
	Project bool
}

// The plugins this module ships.
var (
	RBD = PluginGates{InTreeName: plugin.RBDInTreePluginName, Driver: plugin.RBDDriverName, Migration: CSIMigrationRBD,
		Unregister: InTreePluginRBDUnregister, InTreeRemovedIn: 31, TranslationRemovedIn: 31}
	VSphere = PluginGates{InTreeName: plugin.VSphereInTreePluginName, Driver: plugin.VSphereDriverName, Migration: CSIMigrationvSphere,
		Complete: CSIMigrationvSphereComplete, Unregister: InTreePluginvSphereUnregister, InTreeRemovedIn: 30}
	CephFS = PluginGates{InTreeName: plugin.CephFSInTreePluginName, Driver: plugin.CephFSDriverName, Migration: CSIMigrationCephFS,
		Unregister: InTreePluginCephFSUnregister, InTreeRemovedIn: 31, Project: true}
)

// Plugins lists RBD, CephFS and vSphere.
var Plugins = []PluginGates{RBD, CephFS, VSphere}

// PluginByName returns the plugin with the in-tree name.
func PluginByName(inTreeName string) (PluginGates, bool) {
	for _, p := range Plugins {
		if p.InTreeName == inTreeName {
			return p, true
		}
	}
	return PluginGates{}, false
}

// MigrationEnabled reports whether a component of Kubernetes 1.minor with
// gates fg migrates the plugin's volumes to CSI, as pkg/volume/csimigration
// decides: up to 1.24 CSIMigration and the plugin's gate must both be on,
// from 1.25 only the plugin's gate; once the plugin's gate is removed after
// GA, always. A release whose csi-translation-lib no longer has the
// plugin (RBD from 1.31) cannot migrate it: false. For this project's own
// CephFS gates, fg must contain them (AddProjectGates); Kubernetes itself
// never migrates CephFS.
func MigrationEnabled(fg Gates, minor int, p PluginGates) bool {
	if p.TranslationRemovedIn != 0 && minor >= p.TranslationRemovedIn {
		return false
	}
	if !known(fg, p.Migration) {
		// Removed after GA: migration is always on.
		l := lifecycles[p.Migration]
		return !p.Project && l.RemovedIn != 0 && minor >= l.RemovedIn
	}
	if !enabled(fg, p.Migration) {
		return false
	}
	if minor <= 24 && !p.Project {
		return enabled(fg, CSIMigration)
	}
	return true
}

// MigrationComplete reports whether the in-tree plugin is unregistered:
// migration is enabled and, before 1.21, CSIMigration<X>Complete is on; from
// 1.21 InTreePlugin<X>Unregister is on (in 1.21 vSphere accepts either); a
// release without the in-tree plugin is complete.
func MigrationComplete(fg Gates, minor int, p PluginGates) bool {
	if !MigrationEnabled(fg, minor, p) {
		return false
	}
	if p.InTreeRemovedIn != 0 && minor >= p.InTreeRemovedIn {
		return true
	}
	switch {
	case minor < 21:
		return p.Complete != "" && enabled(fg, p.Complete)
	case minor == 21 && p.Complete != "" && enabled(fg, p.Complete):
		return true
	}
	return enabled(fg, p.Unregister)
}

// Owner names who handles a plugin's volumes.
type Owner string

// Owners.
const (
	OwnerInTree Owner = "in-tree"
	OwnerCSI    Owner = "csi"
	// OwnerNone: the in-tree plugin is gone and nothing translates its
	// volumes; they do not mount until rewritten as CSI PVs.
	OwnerNone Owner = "none"
)

// OwnerOf returns who handles the plugin's volumes in a component of
// Kubernetes 1.minor with gates fg.
func OwnerOf(fg Gates, minor int, p PluginGates) Owner {
	switch {
	case MigrationEnabled(fg, minor, p):
		return OwnerCSI
	case p.InTreeRemovedIn != 0 && minor >= p.InTreeRemovedIn:
		return OwnerNone
	}
	return OwnerInTree
}

// AnnMigratedPlugins is the CSINode annotation in which the kubelet lists
// the in-tree plugins it migrates.
const AnnMigratedPlugins = "storage.alpha.kubernetes.io/migrated-plugins"

// ParseMigratedPlugins parses the annotation value: comma-separated plugin
// names; spaces around names and empty items are ignored; the result is
// sorted and without duplicates.
func ParseMigratedPlugins(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FormatMigratedPlugins writes the annotation value as the kubelet does:
// sorted and comma-joined.
func FormatMigratedPlugins(plugins []string) string {
	return strings.Join(ParseMigratedPlugins(strings.Join(plugins, ",")), ",")
}

// KubeletMigratedPlugins returns the annotation value a kubelet of 1.minor
// with gates fg writes, over the given plugins.
func KubeletMigratedPlugins(fg Gates, minor int, plugins ...PluginGates) string {
	var names []string
	for _, p := range plugins {
		if MigrationEnabled(fg, minor, p) {
			names = append(names, p.InTreeName)
		}
	}
	return FormatMigratedPlugins(names)
}

// AttachmentName is the name kube-controller-manager's CSI attacher gives
// the VolumeAttachment of a volume on a node (getAttachmentName in
// k8s.io/kubernetes/pkg/volume/csi, unexported there): "csi-" and the hex
// SHA-256 of handle, driver and node name. A migrated in-tree volume gets
// the name of its translated handle, so a CSI PV with the same driver and
// handle keeps its attachment.
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// Route is where the attach/detach controller sends a volume.
type Route string

// Routes.
const (
	RouteInTree Route = "in-tree"
	RouteCSI    Route = "csi"
)

// ErrDriverNotInstalled: the node migrates the plugin but lacks its driver.
var ErrDriverNotInstalled = errors.New("CSI driver not installed on the node")

// AttachRoute decides, as the attach/detach controller of 1.minor with
// gates fg does, how a plugin's volume is attached to a node with the given
// CSINode (nil when the node has none): CSI without looking at the node when
// migration is complete; otherwise CSI when the node's annotation lists the
// plugin and its driver is in spec.drivers, an error wrapping
// ErrDriverNotInstalled when listed without the driver, and in-tree when
// migration is off or the node does not list the plugin.
func AttachRoute(fg Gates, minor int, p PluginGates, node string, csiNode *storagev1.CSINode) (Route, error) {
	if !MigrationEnabled(fg, minor, p) {
		if p.InTreeRemovedIn != 0 && minor >= p.InTreeRemovedIn {
			return "", fmt.Errorf("%s: the in-tree plugin is removed in 1.%d and migration is off", p.InTreeName, minor)
		}
		return RouteInTree, nil
	}
	if MigrationComplete(fg, minor, p) {
		return RouteCSI, nil
	}
	if csiNode == nil || !slices.Contains(ParseMigratedPlugins(csiNode.Annotations[AnnMigratedPlugins]), p.InTreeName) {
		return RouteInTree, nil
	}
	for _, d := range csiNode.Spec.Drivers {
		if d.Name == p.Driver {
			return RouteCSI, nil
		}
	}
	return "", fmt.Errorf("%w: in-tree plugin %s is migrated on node %s but driver %s is not installed", ErrDriverNotInstalled, p.InTreeName, node, p.Driver)
}

// Component is a component's version and gates.
type Component struct {
	Minor int
	Gates Gates
}

// Node is a node's kubelet.
type Node struct {
	Name    string
	Kubelet Component
	// Drained reports a cordoned node with no pods using the plugin's
	// volumes, where a mismatch does no harm.
	Drained bool
}

// Codes of the findings of CheckSkew.
const (
	// FindingKubeletAhead: the kubelet migrates the plugin, the
	// controllers do not.
	FindingKubeletAhead = "MigrationSkewKubeletAhead"
	// FindingKubeletBehind: the controllers treat migration as complete,
	// the kubelet does not migrate.
	FindingKubeletBehind = "MigrationSkewKubeletBehind"
)

// CheckSkew reports the nodes on which a plugin's volumes would be handled
// inconsistently: the kubelet migrates while the controllers do not (the
// controllers attach in-tree what the kubelet stages through CSI; the KEP's
// order enables the controllers first), or the controllers consider
// migration complete, so they attach through CSI on every node, while the
// kubelet still mounts in-tree. Drained nodes are not reported. A kubelet
// that is not migrated under migrating controllers is the expected middle
// state of the KEP's order (controllers route by the node's CSINode) and
// not reported.
func CheckSkew(controlPlane Component, nodes []Node, plugins ...PluginGates) []plugin.Finding {
	var out []plugin.Finding
	for _, p := range plugins {
		ctrl := OwnerOf(controlPlane.Gates, controlPlane.Minor, p)
		complete := MigrationComplete(controlPlane.Gates, controlPlane.Minor, p)
		for _, n := range nodes {
			if n.Drained {
				continue
			}
			kub := OwnerOf(n.Kubelet.Gates, n.Kubelet.Minor, p)
			owners := fmt.Sprintf("%s: controllers %s, kubelet %s: ", p.InTreeName, ctrl, kub)
			switch {
			case kub == OwnerCSI && ctrl != OwnerCSI:
				out = append(out, plugin.Finding{Code: FindingKubeletAhead, Severity: plugin.SeverityBlocker, Object: "node/" + n.Name,
					Message: owners + "the kubelet migrates the plugin but the controllers do not: volumes are attached in-tree and staged through CSI",
					Remedy:  "enable migration on the control plane first, or drain the node and disable it on its kubelet"})
			case complete && kub != OwnerCSI:
				out = append(out, plugin.Finding{Code: FindingKubeletBehind, Severity: plugin.SeverityBlocker, Object: "node/" + n.Name,
					Message: owners + "the controllers treat migration as complete and attach through CSI, but the kubelet handles the volumes " + string(kub),
					Remedy:  "drain the node, enable migration on its kubelet, uncordon; or turn off " + string(p.Unregister) + " on the control plane"})
			}
		}
	}
	return out
}

// TranslationEnabled reports whether a component built with csimigrate, at
// Kubernetes 1.minor with gates fg, should translate the plugin's volumes:
// as MigrationEnabled while the plugin's gate exists; true once the gate
// was removed (the plugin is GA, or gone from Kubernetes and translated only
// by csimigrate); false before the gate existed. For the project's CephFS
// gates, absent gates mean their defaults.
func TranslationEnabled(fg Gates, minor int, p PluginGates) bool {
	if known(fg, p.Migration) {
		if !enabled(fg, p.Migration) {
			return false
		}
		return minor > 24 || p.Project || enabled(fg, CSIMigration)
	}
	if p.Project {
		return lifecycles[p.Migration].Stages[0].Spec.Default
	}
	l := lifecycles[p.Migration]
	return l.RemovedIn != 0 && minor >= l.RemovedIn
}

// NodeExpandSecretEnabled reports whether CSINodeExpandSecret is on in
// Kubernetes 1.minor with gates fg (always on once the gate was removed
// after GA in 1.31).
func NodeExpandSecretEnabled(fg Gates, minor int) bool {
	if known(fg, CSINodeExpandSecret) {
		return enabled(fg, CSINodeExpandSecret)
	}
	return minor >= lifecycles[CSINodeExpandSecret].RemovedIn
}
