// Package translate is the entry point of csimigrate: a registry of
// [plugin.InTreePlugin] translators and a [Translator] with every method of
// k8s.io/csi-translation-lib's CSITranslator, with the same signatures, so it
// can replace that type in external-provisioner, external-attacher,
// external-resizer and kube-controller-manager forks.
//
// New registers the built-in RBD, CephFS and vSphere plugins; WithPlugins adds
// plugins (from this module or written for csi-translation-lib) and
// WithReplacedPlugins replaces registered ones.
// Dispatch is a map lookup by in-tree plugin name, CSI driver name, or the
// volume source set in a spec. Inputs are never modified; plugins that do not
// promise that (plugin.NonMutating) are given a copy.
package translate

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// Error kinds, for errors.Is. Plugin errors wrap the plugins package's kinds,
// re-exported here.
var (
	// ErrNoPlugin: no registered plugin handles the given name, driver or
	// volume source.
	ErrNoPlugin = errors.New("no migration plugin")
	// ErrInvalid: the object cannot be translated; the error is a
	// *plugin.InvalidError naming the fields.
	ErrInvalid = plugin.ErrInvalid
	// ErrUnsupported: the plugin does not offer this translation.
	ErrUnsupported = plugin.ErrUnsupported
	// ErrMissingInformation: information the translation needs is neither in
	// the object nor in the options.
	ErrMissingInformation = plugin.ErrMissingInformation
	// ErrDriverName: a driver name given with WithDriverName is not one of
	// the plugin's driver.
	ErrDriverName = errors.New("not a CSI driver name of the plugin")
	// ErrConflict: two plugins claim the same in-tree plugin or CSI driver
	// name, or a replacement has nothing to replace (from New).
	ErrConflict = errors.New("conflicting migration plugins")
)

// NoPluginError reports that no plugin handles what was asked for.
type NoPluginError struct {
	// What describes the lookup, e.g. `in-tree plugin "kubernetes.io/nfs"`.
	What string
}

// Error implements error.
func (e *NoPluginError) Error() string {
	return "no migration plugin for " + e.What
}

// Unwrap returns ErrNoPlugin.
func (e *NoPluginError) Unwrap() error { return ErrNoPlugin }

type config struct {
	extra          []plugin.InTreePlugin
	replacements   []plugin.InTreePlugin
	clusters       ceph.ClusterConfig
	noNodeExpand   bool
	vsphereOpts    vsphere.Options
	disabledPlugin map[string]bool
	// drivers are the built-in plugins' driver names by in-tree name.
	drivers map[string]string
}

// clone is a copy of c that shares nothing c's options can change.
func (c config) clone() config {
	c.extra = slices.Clone(c.extra)
	c.replacements = slices.Clone(c.replacements)
	c.disabledPlugin = maps.Clone(c.disabledPlugin)
	c.drivers = maps.Clone(c.drivers)
	return c
}

// Option configures New.
type Option func(*config)

// WithPlugins registers plugins in addition to the built-in ones. A plugin
// with the in-tree plugin name of a registered one (built in, or given
// earlier) makes New fail with ErrConflict; use WithReplacedPlugins to
// replace one.
func WithPlugins(p ...plugin.InTreePlugin) Option {
	return func(c *config) { c.extra = append(c.extra, p...) }
}

// WithReplacedPlugins replaces registered plugins (built in, or given with
// WithPlugins) by those with the same in-tree plugin name, for example
// csi-translation-lib's translator in place of a built-in one. A plugin that
// has nothing to replace, or two replacements of one plugin, make New fail
// with ErrConflict.
func WithReplacedPlugins(p ...plugin.InTreePlugin) Option {
	return func(c *config) { c.replacements = append(c.replacements, p...) }
}

// WithCephClusterConfig gives the RBD and CephFS plugins Ceph CSI's cluster
// config (config.json), used to find the monitors of CSI volumes translated
// back to in-tree.
func WithCephClusterConfig(cfg ceph.ClusterConfig) Option {
	return func(c *config) { c.clusters = cfg }
}

// WithNodeExpandSecret sets whether translated PVs get a nodeExpandSecretRef
// (the CSINodeExpandSecret feature; on by default).
func WithNodeExpandSecret(enabled bool) Option {
	return func(c *config) { c.noNodeExpand = !enabled }
}

// WithDriverName makes the built-in plugin of in-tree plugin inTree
// translate to and from the CSI driver named driver instead of its upstream
// name, as clusters run Ceph CSI under other names (Rook and the
// ceph-csi-operator: "rook-ceph.rbd.csi.ceph.com"). The name must be one
// plugin.InTreeNameOfDriver gives inTree for; New fails with ErrDriverName
// otherwise. The last name given for a plugin counts.
func WithDriverName(inTree, driver string) Option {
	return func(c *config) {
		if c.drivers == nil {
			c.drivers = map[string]string{}
		}
		c.drivers[inTree] = driver
	}
}

// WithVSphereOptions configures the built-in vSphere plugin.
func WithVSphereOptions(o vsphere.Options) Option {
	return func(c *config) { c.vsphereOpts = o }
}

// WithFeatureGates makes the translator honour the feature gates of a
// component of Kubernetes 1.minor: no nodeExpandSecretRef while
// CSINodeExpandSecret is off, and a built-in plugin is not registered (its
// volumes are not migratable) while featuregate.TranslationEnabled is false
// for it. fg may include this project's CephFS gates
// (featuregate.AddProjectGates); without them CephFS is translated.
func WithFeatureGates(fg featuregate.Gates, minor int) Option {
	return func(c *config) {
		c.noNodeExpand = !featuregate.NodeExpandSecretEnabled(fg, minor)
		if c.disabledPlugin == nil {
			c.disabledPlugin = map[string]bool{}
		}
		for _, p := range featuregate.Plugins {
			if !featuregate.TranslationEnabled(fg, minor, p) {
				c.disabledPlugin[p.InTreeName] = true
			}
		}
	}
}

// Translator translates in-tree volume objects to CSI and back by dispatching
// to the registered plugins. It is safe for concurrent use.
type Translator struct {
	byInTree map[string]plugin.InTreePlugin
	byDriver map[string]plugin.InTreePlugin
	// unknown holds plugins whose in-tree name is not one of
	// plugin.KnownInTreeNames: they are found by CanSupport.
	unknown []plugin.InTreePlugin
	safe    map[plugin.InTreePlugin]bool
	// cfg is what New was given, for WithDriverNames.
	cfg config
}

// New returns a Translator with the built-in plugins and those given with
// WithPlugins and WithReplacedPlugins. Two plugins claiming the same in-tree
// plugin name or CSI driver name, a replacement without a plugin to replace,
// and a nil plugin are errors matching ErrConflict.
func New(opts ...Option) (*Translator, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return newTranslator(c.clone())
}

// newTranslator is New for the options applied to c, which it keeps.
func newTranslator(c config) (*Translator, error) {
	for _, inTree := range slices.Sorted(maps.Keys(c.drivers)) {
		d := c.drivers[inTree]
		if plugin.UpstreamDriverName(inTree) == "" {
			return nil, fmt.Errorf("%w: in-tree plugin %q is not one of this module's (%s, %s, %s)", ErrDriverName, inTree,
				plugin.RBDInTreePluginName, plugin.CephFSInTreePluginName, plugin.VSphereInTreePluginName)
		}
		if plugin.InTreeNameOfDriver(d) != inTree || len(d) > 63 {
			return nil, fmt.Errorf("%w: driver %q for in-tree plugin %q: want %s, or for Ceph CSI that name after a prefix and a dot (as Rook's rook-ceph.%s), at most 63 characters",
				ErrDriverName, d, inTree, plugin.UpstreamDriverName(inTree), plugin.UpstreamDriverName(inTree))
		}
	}
	vsphereOpts := c.vsphereOpts
	vsphereOpts.DriverName = c.drivers[plugin.VSphereInTreePluginName]
	builtin := []plugin.InTreePlugin{
		rbd.New(rbd.Options{ClusterConfig: c.clusters, DisableNodeExpandSecret: c.noNodeExpand, DriverName: c.drivers[plugin.RBDInTreePluginName]}),
		cephfs.New(cephfs.Options{ClusterConfig: c.clusters, DriverName: c.drivers[plugin.CephFSInTreePluginName]}),
		vsphere.New(vsphereOpts),
	}
	t := &Translator{
		byInTree: map[string]plugin.InTreePlugin{},
		byDriver: map[string]plugin.InTreePlugin{},
		safe:     map[plugin.InTreePlugin]bool{},
		cfg:      c,
	}
	for _, p := range append(builtin, c.extra...) {
		if p == nil {
			return nil, fmt.Errorf("%w: a nil plugin was given", ErrConflict)
		}
		name := p.GetInTreePluginName()
		if _, dup := t.byInTree[name]; dup {
			return nil, fmt.Errorf("%w: in-tree plugin %q is registered twice (use WithReplacedPlugins to replace a plugin)", ErrConflict, name)
		}
		t.byInTree[name] = p
	}
	replaced := map[string]bool{}
	for _, p := range c.replacements {
		if p == nil {
			return nil, fmt.Errorf("%w: a nil plugin was given", ErrConflict)
		}
		name := p.GetInTreePluginName()
		switch _, ok := t.byInTree[name]; {
		case !ok:
			return nil, fmt.Errorf("%w: no registered plugin %q to replace (use WithPlugins to add one)", ErrConflict, name)
		case replaced[name]:
			return nil, fmt.Errorf("%w: in-tree plugin %q is replaced twice", ErrConflict, name)
		}
		replaced[name] = true
		t.byInTree[name] = p
	}
	for name := range c.disabledPlugin {
		delete(t.byInTree, name)
	}
	for inTree, d := range c.drivers {
		if p, ok := t.byInTree[inTree]; ok && p.GetCSIPluginName() != d {
			return nil, fmt.Errorf("%w: in-tree plugin %q is replaced by a plugin of driver %q, not %q", ErrDriverName, inTree, p.GetCSIPluginName(), d)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.byInTree)) {
		p := t.byInTree[name]
		d := p.GetCSIPluginName()
		if other, ok := t.byDriver[d]; ok {
			return nil, fmt.Errorf("%w: in-tree plugins %q and %q both claim CSI driver %q", ErrConflict,
				other.GetInTreePluginName(), name, d)
		}
		t.byDriver[d] = p
		if !slices.Contains(plugin.KnownInTreeNames, name) {
			t.unknown = append(t.unknown, p)
		}
		if _, ok := p.(plugin.NonMutating); ok {
			t.safe[p] = true
		}
	}
	return t, nil
}

// WithDriverNames returns a Translator like t whose built-in plugins
// translate to and from the CSI drivers named in drivers (in-tree plugin
// name to driver name, as WithDriverName), for a cluster whose drivers run
// under other names than those t was made with. Plugins not named keep
// theirs. t is not changed; errors are New's.
func (t *Translator) WithDriverNames(drivers map[string]string) (*Translator, error) {
	c := t.cfg.clone()
	for inTree, d := range drivers {
		WithDriverName(inTree, d)(&c)
	}
	return newTranslator(c)
}

// Plugins returns the registered plugins sorted by in-tree name.
func (t *Translator) Plugins() []plugin.InTreePlugin {
	out := make([]plugin.InTreePlugin, 0, len(t.byInTree))
	for _, n := range slices.Sorted(maps.Keys(t.byInTree)) {
		out = append(out, t.byInTree[n])
	}
	return out
}

func (t *Translator) pluginForPV(pv *v1.PersistentVolume) plugin.InTreePlugin {
	if name := plugin.InTreeNameOfPV(pv); name != "" {
		if p, ok := t.byInTree[name]; ok && p.CanSupport(pv) {
			return p
		}
		return nil
	}
	for _, p := range t.unknown {
		if p.CanSupport(pv) {
			return p
		}
	}
	return nil
}

func (t *Translator) pluginForVolume(vol *v1.Volume) plugin.InTreePlugin {
	if name := plugin.InTreeNameOfVolume(vol); name != "" {
		if p, ok := t.byInTree[name]; ok && p.CanSupportInline(vol) {
			return p
		}
		return nil
	}
	for _, p := range t.unknown {
		if p.CanSupportInline(vol) {
			return p
		}
	}
	return nil
}

// TranslateInTreeStorageClassToCSI translates a StorageClass of the named
// in-tree provisioner. sc is not modified.
func (t *Translator) TranslateInTreeStorageClassToCSI(logger klog.Logger, inTreePluginName string, sc *storage.StorageClass) (*storage.StorageClass, error) {
	p, ok := t.byInTree[inTreePluginName]
	if !ok {
		return nil, &NoPluginError{What: fmt.Sprintf("in-tree plugin %q", inTreePluginName)}
	}
	if sc != nil && !t.safe[p] {
		sc = sc.DeepCopy()
	}
	return p.TranslateInTreeStorageClassToCSI(logger, sc)
}

// TranslateInTreeInlineVolumeToCSI translates a pod's inline in-tree volume to
// a PV with a CSI source. podNamespace is the pod's namespace. The PV's
// volume mode is Filesystem unless the plugin set one. volume is not modified.
func (t *Translator) TranslateInTreeInlineVolumeToCSI(logger klog.Logger, volume *v1.Volume, podNamespace string) (*v1.PersistentVolume, error) {
	if volume == nil {
		return nil, &NoPluginError{What: "a nil volume"}
	}
	p := t.pluginForVolume(volume)
	if p == nil {
		return nil, &NoPluginError{What: fmt.Sprintf("inline volume %q", volume.Name)}
	}
	if !t.safe[p] {
		volume = volume.DeepCopy()
	}
	pv, err := p.TranslateInTreeInlineVolumeToCSI(logger, volume, podNamespace)
	if err != nil {
		return nil, err
	}
	if pv != nil && pv.Spec.VolumeMode == nil {
		fs := v1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &fs
	}
	return pv, nil
}

// TranslateInTreePVToCSI translates a PV with an in-tree source to one with a
// CSI source. pv is not modified.
func (t *Translator) TranslateInTreePVToCSI(logger klog.Logger, pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil {
		return nil, &NoPluginError{What: "a nil PersistentVolume"}
	}
	p := t.pluginForPV(pv)
	if p == nil {
		return nil, &NoPluginError{What: fmt.Sprintf("PersistentVolume %q (no registered in-tree source)", pv.Name)}
	}
	if !t.safe[p] {
		pv = pv.DeepCopy()
	}
	return p.TranslateInTreePVToCSI(logger, pv)
}

// TranslateCSIPVToInTree translates a PV with a CSI source back to the
// in-tree source of the plugin that migrates to its driver. pv is not
// modified.
func (t *Translator) TranslateCSIPVToInTree(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv == nil || pv.Spec.CSI == nil {
		return nil, &NoPluginError{What: "a PersistentVolume without a CSI source"}
	}
	p, ok := t.byDriver[pv.Spec.CSI.Driver]
	if !ok {
		return nil, &NoPluginError{What: fmt.Sprintf("CSI driver %q", pv.Spec.CSI.Driver)}
	}
	if !t.safe[p] {
		pv = pv.DeepCopy()
	}
	return p.TranslateCSIPVToInTree(pv)
}

// IsMigratableIntreePluginByName reports whether a plugin is registered for
// the in-tree plugin name.
func (t *Translator) IsMigratableIntreePluginByName(inTreePluginName string) bool {
	_, ok := t.byInTree[inTreePluginName]
	return ok
}

// IsMigratedCSIDriverByName reports whether a registered plugin migrates to
// the CSI driver.
func (t *Translator) IsMigratedCSIDriverByName(csiPluginName string) bool {
	_, ok := t.byDriver[csiPluginName]
	return ok
}

// GetInTreePluginNameFromSpec returns the in-tree plugin name of a PV or, when
// pv is nil, of an inline volume.
func (t *Translator) GetInTreePluginNameFromSpec(pv *v1.PersistentVolume, vol *v1.Volume) (string, error) {
	switch {
	case pv != nil:
		if p := t.pluginForPV(pv); p != nil {
			return p.GetInTreePluginName(), nil
		}
		return "", &NoPluginError{What: fmt.Sprintf("PersistentVolume %q", pv.Name)}
	case vol != nil:
		if p := t.pluginForVolume(vol); p != nil {
			return p.GetInTreePluginName(), nil
		}
		return "", &NoPluginError{What: fmt.Sprintf("volume %q", vol.Name)}
	}
	return "", &NoPluginError{What: "a nil PersistentVolume and a nil volume"}
}

// GetCSINameFromInTreeName returns the CSI driver that supersedes the in-tree
// plugin.
func (t *Translator) GetCSINameFromInTreeName(pluginName string) (string, error) {
	if p, ok := t.byInTree[pluginName]; ok {
		return p.GetCSIPluginName(), nil
	}
	return "", &NoPluginError{What: fmt.Sprintf("in-tree plugin %q", pluginName)}
}

// GetInTreeNameFromCSIName returns the in-tree plugin a CSI driver supersedes.
func (t *Translator) GetInTreeNameFromCSIName(pluginName string) (string, error) {
	if p, ok := t.byDriver[pluginName]; ok {
		return p.GetInTreePluginName(), nil
	}
	return "", &NoPluginError{What: fmt.Sprintf("CSI driver %q", pluginName)}
}

// IsPVMigratable reports whether a registered plugin can translate the PV.
func (t *Translator) IsPVMigratable(pv *v1.PersistentVolume) bool {
	return t.pluginForPV(pv) != nil
}

// IsInlineMigratable reports whether a registered plugin can translate the
// inline volume.
func (t *Translator) IsInlineMigratable(vol *v1.Volume) bool {
	return t.pluginForVolume(vol) != nil
}

// RepairVolumeHandle asks the plugin of the CSI driver to repair a handle.
func (t *Translator) RepairVolumeHandle(driverName, volumeHandle, nodeID string) (string, error) {
	if p, ok := t.byDriver[driverName]; ok {
		return p.RepairVolumeHandle(volumeHandle, nodeID)
	}
	return "", &NoPluginError{What: fmt.Sprintf("CSI driver %q", driverName)}
}

// TranslateAndCheckPV is TranslateInTreePVToCSI and CheckPV of one PV with
// one lookup of its plugin: the CSI PV, the plugin's findings, and the
// plugin's in-tree name. pv is not modified.
func (t *Translator) TranslateAndCheckPV(logger klog.Logger, pv *v1.PersistentVolume) (csi *v1.PersistentVolume, findings []plugin.Finding, inTree string, err error) {
	if pv == nil {
		return nil, nil, "", &NoPluginError{What: "a nil PersistentVolume"}
	}
	p := t.pluginForPV(pv)
	if p == nil {
		return nil, nil, "", &NoPluginError{What: fmt.Sprintf("PersistentVolume %q (no registered in-tree source)", pv.Name)}
	}
	if c, ok := p.(plugin.Checker); ok {
		findings = c.CheckPV(pv)
	}
	in := pv
	if !t.safe[p] {
		in = pv.DeepCopy()
	}
	csi, err = p.TranslateInTreePVToCSI(logger, in)
	return csi, findings, p.GetInTreePluginName(), err
}

// CheckPV returns the migration hazards the PV's plugin reports (plugins
// implementing plugin.Checker), or nil.
func (t *Translator) CheckPV(pv *v1.PersistentVolume) []plugin.Finding {
	if c, ok := t.pluginForPV(pv).(plugin.Checker); ok {
		return c.CheckPV(pv)
	}
	return nil
}
