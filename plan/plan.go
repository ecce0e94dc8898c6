// Package plan decides, for a cluster's objects as they arrive, whether each
// in-tree volume and class can be migrated and what must happen first: the
// planner of csimigrate plan, with its report. It reads objects, never a
// cluster, and applies the rules of package rewrite, so that what it calls
// migratable is what a rewrite does.
package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

// Plan is the report of `csimigrate plan`.
type Plan struct {
	// Hazards concern the cluster rather than one volume.
	Hazards        []plugin.Finding    `json:"hazards,omitempty"`
	Volumes        []VolumePlan        `json:"volumes"`
	InlineVolumes  []InlinePlan        `json:"inlineVolumes,omitempty"`
	ClaimTemplates []ClaimTemplatePlan `json:"claimTemplates,omitempty"`
	StorageClasses []StorageClassPlan  `json:"storageClasses,omitempty"`
	CephClusters   []ceph.ClusterEntry `json:"cephClusters,omitempty"`
	Secrets        []SecretPlan        `json:"secrets,omitempty"`
	FeatureGates   []string            `json:"featureGateSteps,omitempty"`
	Blocked        bool                `json:"blocked"`
	// CephCSIConfig says, for each Ceph CSI deployment the migrated
	// volumes and classes go to, where it reads its cluster entries, which
	// it serves, and the missing ones in the form that lasts there (none
	// without Ceph volumes or classes).
	CephCSIConfig []CephCSIConfigPlan `json:"cephCSIConfig,omitempty"`
	// VCenter is what the plan read from vCenter (with Options.VCenter and
	// vSphere volumes or classes in the input).
	VCenter *VCenterReport `json:"vcenter,omitempty"`
}

// VolumePlan is the plan for one in-tree PV.
type VolumePlan struct {
	Name       string           `json:"name"`
	Plugin     string           `json:"plugin"`
	Driver     string           `json:"driver,omitempty"`
	Migratable bool             `json:"migratable"`
	Reason     string           `json:"reason,omitempty"`
	Claim      string           `json:"claim,omitempty"`
	InUseBy    []string         `json:"inUseBy,omitempty"`
	Findings   []plugin.Finding `json:"findings,omitempty"`
	Handle     string           `json:"volumeHandle,omitempty"`
	// Form is what a migrated volume is to its CSI driver (package adopt's
	// forms): "native" for an RBD image rewrite -apply -adopt can register
	// in Ceph CSI's journal (predicted from its class's imageFeatures; the
	// rewrite reads the image) and for a vSphere disk it can register as a
	// First Class Disk, "migration-handle" for one it cannot, and "static"
	// for CephFS; Features are the CSI operations the driver then serves and
	// FormWhy why they are fewer than a native volume's, and what the
	// volume gets without adoption.
	Form     string   `json:"form,omitempty"`
	Features []string `json:"features,omitempty"`
	FormWhy  []string `json:"formWhy,omitempty"`
	// AdoptClusterID is the clusterID an adopted Ceph volume's ID names:
	// the entry of the driver's own deployment for the volume's Ceph
	// cluster (compared by fsid, with Options.CephFSID), else its
	// migration entry; "" where the form is not native.
	AdoptClusterID string `json:"adoptClusterID,omitempty"`
}

// InlinePlan is the plan for one inline in-tree volume of a workload's pod
// template or of a pod.
type InlinePlan struct {
	// Workload is "Kind namespace/name" of the object whose pod spec has
	// the volume: the top owner in the input (a Deployment rather than its
	// ReplicaSets and pods), which is the object to change.
	Workload string `json:"workload"`
	Volume   string `json:"volume"`
	Plugin   string `json:"plugin"`
	// Via lists the objects owned by Workload that carry the same volume
	// (its ReplicaSets, Jobs, pods), when they are in the input.
	Via        []string `json:"via,omitempty"`
	Migratable bool     `json:"migratable"`
	Reason     string   `json:"reason,omitempty"`
	// Claim is the name of the PV and claim of the volume's translation
	// (rewrite.NewInlineForm) that replace it.
	Claim string `json:"claim,omitempty"`
}

// ClaimTemplatePlan is a StatefulSet volumeClaimTemplate whose class is an
// in-tree one: claims made from it after the upgrade are provisioned by
// the class csimigrate recreates.
type ClaimTemplatePlan struct {
	StatefulSet  string `json:"statefulSet"`
	Template     string `json:"template"`
	StorageClass string `json:"storageClass"`
	Migratable   bool   `json:"migratable"`
	Reason       string `json:"reason"`
}

// StorageClassPlan says how to recreate an in-tree StorageClass.
type StorageClassPlan struct {
	Name       string `json:"name"`
	From       string `json:"from"`
	To         string `json:"to,omitempty"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
}

// SecretPlan is a Secret to create or change. Values are never included.
type SecretPlan struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Action    string   `json:"action"`
	Fields    []string `json:"fields"`
	From      string   `json:"from,omitempty"`
	Reason    string   `json:"reason"`
}

func claimKey(ns, name string) string { return ns + "/" + name }

// Phase says which objects a Planner reads: the PVs are planned after
// everything else has been read (claims, classes, secrets), in a second
// pass over the input, or last in a single pass when the source lists them
// last (a live cluster).
type Phase int

// Phases.
const (
	PhaseAll    Phase = iota // every object, PVs last
	PhaseOthers              // everything but PVs
	PhasePVs                 // PVs only
)

// Planner builds a Plan from objects as they arrive, so that a dump of any
// size is planned in memory proportional to the report and to the claims
// and classes: a PV is translated, checked and dropped; what depends on
// objects that may come later (pods using a claim, the secrets a volume
// needs) is kept as a small record and settled in finish. Secret values are
// never kept: only whether "key" is set and the adminId.
type Planner struct {
	opts Options
	tr   *translate.Translator
	// byVolume maps a volume (rewrite.VolumeKey: an RBD image, a CephFS
	// path, a vSphere disk) to the indexes of the volumes naming it;
	// decide, by index, decides a volume's form again (package adopt's
	// rules) once the other PVs naming it are known.
	byVolume map[string][]int
	decide   map[int]func(referencedBy []string) (adopt.Decision, error)
	// subvolume reads CephFS subvolumes (nil: predicted from the path).
	subvolume func(fs, group, name string) (*adopt.Subvolume, string, error)
	// groups are the subvolume groups of CephFS volumes, by index.
	groups map[int]string
	// rbdImage reads an RBD image from Ceph (nil: the forms are predicted).
	rbdImage    func(pool, name string) (*adopt.Image, error)
	logger      klog.Logger
	plan        *Plan
	phase       Phase
	podsByClaim map[string][]string
	secrets     map[string]*v1.Secret // slim: no values
	sawSecrets  bool
	// claims are slim claims (metadata and volumeName) by namespace/name.
	claims       map[string]*v1.PersistentVolumeClaim
	sawClaims    bool
	classes      map[string]*storagev1.StorageClass
	defaultClass string
	clusters     map[string]ceph.ClusterEntry
	// secretNeeds are the secrets the migrated volumes and classes make
	// the Ceph CSI drivers read, settled in finish against the input's.
	secretNeeds []secretNeed
	// vsphereKeys are the translation's CSI topology keys.
	vsphereKeys []string
	// drivers are the input's CSI drivers and where their node plugins
	// run; pendingClasses the in-tree classes read before the drivers are
	// settled (at the first PV, or in Finish); podNode the node of each
	// running pod ("namespace/name").
	drivers        clusterDrivers
	cephConfig     cephConfigInput
	pendingClasses []*storagev1.StorageClass
	podNode        map[string]string
	// owners maps "Kind/namespace/name" of every workload read to its
	// controller's "Kind/name"; inline holds the inline volumes found,
	// settled by owner in finish; templates the StatefulSets' claim
	// templates.
	owners    map[string]string
	inline    []inlineFound
	templates []ClaimTemplatePlan
	// messages holds interned finding messages (see intern).
	messages map[string]string
	// plugins are the in-tree plugins the input uses.
	plugins map[string]bool
	// inlineCapacity is the size of PVs made for inline volumes.
	inlineCapacity resource.Quantity
	// nodes are the Nodes read, with their vSphere VM's UUID (with
	// Options.VCenter); sawCSINodes and vsphereDriver say whether CSINodes
	// were read and one runs the vSphere CSI driver.
	nodes                      []NodeVM
	sawCSINodes, vsphereDriver bool
}

type inlineFound struct {
	plan  InlinePlan
	key   string // the workload's "Kind/namespace/name"
	owner string // its controller's "Kind/name"
	ns    string
}

// secretNeed is a Secret a Ceph CSI driver will read for a migrated volume
// or class (rewrite.SecretNeed), and what it is needed for in the plan.
type secretNeed struct {
	rewrite.SecretNeed
	volume int    // index in plan.Volumes, -1 for others
	class  string // the StorageClass whose admin secret it is
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Options are what a Planner is told beyond its translator.
type Options struct {
	// VSphereKeys are the CSI topology keys the translation writes, to
	// check against what nodes' vSphere drivers report (CSINode).
	VSphereKeys []string
	// RBDImage, when set, reads an RBD image from Ceph (the command's Ceph
	// access): the plan then says what each in-tree RBD image becomes as
	// rewrite -apply -adopt will decide it, instead of predicting it from
	// its class. It must not modify anything.
	RBDImage func(pool, name string) (*adopt.Image, error)
	// CephFSSubvolume, when set, reads a CephFS subvolume from Ceph (fs ""
	// the only file system): the plan then says whether Ceph's volumes
	// module serves each in-tree CephFS path as a subvolume (notServed says
	// why not) instead of predicting it from the path. It must not modify
	// anything but what Ceph's volumes module itself records on a first
	// look at a legacy subvolume.
	CephFSSubvolume func(fs, group, name string) (sv *adopt.Subvolume, notServed string, err error)
	// CephFSID, when set, reads the fsid of the Ceph cluster at monitors
	// (the command's Ceph access): the plan then says which entry of the
	// driver's deployment an adopted volume's ID will name, as rewrite
	// -apply -adopt decides it (adopt.JoinDeployment).
	CephFSID func(monitors []string) (string, error)
	// KubernetesMinor is the cluster's Kubernetes minor version, for the
	// feature-gate steps of the plugins its objects use
	// (featuregate.MinMinor to featuregate.MaxMinor; 0: none).
	KubernetesMinor int
	// CephConfigWarnings are what the Ceph CSI cluster config given to the
	// translator accepts but Ceph CSI would not serve
	// (ceph.ClusterConfig.Warnings): cluster-wide hazards.
	CephConfigWarnings []string
	// CephCSINamespace, when set, is the namespace of the Ceph CSI
	// drivers' config map, for an input that has Ceph CSI config maps in
	// several namespaces and not the drivers' pods that tell which one
	// each reads.
	CephCSINamespace string
	// VCenter, when set, reads vCenter: the plan then judges the
	// environment (vCenter and ESXi versions, the nodes' virtual machines,
	// found by their Nodes' providerID), each in-tree vSphere volume (its
	// datastore, disk, storage policy and registration) and class (its
	// datastore and storage policy) by what vCenter has.
	VCenter VCenter
	// VSphereMappings are the vSphere CSI driver's migration mappings
	// (CnsVSphereVolumeMigration: volume path to volume ID), nil when not
	// read.
	VSphereMappings map[string]string
	// Drivers are the CSI drivers the administrator chose, by in-tree
	// plugin name, where the cluster has more than one for a backend.
	// Otherwise the plan uses the one driver of each backend its input's
	// CSIDrivers have (plugin.InTreeNameOfDriver), and blocks the volumes
	// of a backend with none.
	Drivers map[string]string
}

// New returns a Planner that translates with tr and logs to logger. It reads
// every object (PhaseAll) until SetPhase says otherwise.
func New(tr *translate.Translator, logger klog.Logger, opts Options) *Planner {
	return &Planner{opts: opts, vsphereKeys: opts.VSphereKeys, rbdImage: opts.RBDImage, subvolume: opts.CephFSSubvolume, byVolume: map[string][]int{}, tr: tr, logger: logger, plan: &Plan{Volumes: []VolumePlan{}}, podsByClaim: map[string][]string{},
		secrets: map[string]*v1.Secret{}, clusters: map[string]ceph.ClusterEntry{},
		claims: map[string]*v1.PersistentVolumeClaim{}, classes: map[string]*storagev1.StorageClass{}, owners: map[string]string{},
		plugins: map[string]bool{}, inlineCapacity: rewrite.DefaultInlineCapacity,
		drivers: clusterDrivers{chosen: opts.Drivers}, podNode: map[string]string{}}
}

// settleDrivers decides, once the CSIDrivers are read (the PVs come
// last), which driver each backend's volumes go to, translates with
// those names from then on, and plans the classes read so far.
func (p *Planner) settleDrivers() {
	if p.drivers.resolved {
		return
	}
	p.drivers.resolve()
	if names := DriverNames(p.drivers.choices); len(names) > 0 {
		tr, err := p.tr.WithDriverNames(names)
		if err != nil {
			// A name no driver of the backend can have: the plan keeps
			// the upstream names and says why.
			p.plan.Hazards = append(p.plan.Hazards, plugin.Finding{Code: FindingCSIDriverMissing, Severity: plugin.SeverityBlocker, Field: "CSIDriver",
				Message: err.Error(), Remedy: "choose an installed driver of the backend"})
			p.plan.Blocked = true
		} else {
			p.tr = tr
		}
	}
	for _, sc := range p.pendingClasses {
		p.addStorageClass(sc)
	}
	p.pendingClasses = nil
}

// SetPhase says which objects Add reads from now on.
func (p *Planner) SetPhase(ph Phase) { p.phase = ph }

// Plugins are the in-tree plugins the objects read use.
func (p *Planner) Plugins() map[string]bool { return maps.Clone(p.plugins) }

// Add reads one object: a PV, claim, StorageClass, CSIDriver, CSINode,
// Secret (only the fields the checks read are kept, never a key), Pod or
// workload, a ConfigMap that may hold Ceph CSI's cluster entries, or the
// ceph-csi-operator's Driver, ClientProfile and CephConnection (as
// *unstructured.Unstructured); others are ignored.
func (p *Planner) Add(obj any) {
	if pv, ok := obj.(*v1.PersistentVolume); ok {
		if p.phase != PhaseOthers {
			p.addPV(pv)
		}
		return
	}
	if p.phase == PhasePVs {
		return
	}
	if w, ok := rewrite.WorkloadOf(obj); ok {
		p.addWorkload(w)
		return
	}
	switch o := obj.(type) {
	case *v1.PersistentVolumeClaim:
		p.sawClaims = true
		p.claims[claimKey(o.Namespace, o.Name)] = &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, Annotations: o.Annotations, DeletionTimestamp: o.DeletionTimestamp},
			Spec:       v1.PersistentVolumeClaimSpec{VolumeName: o.Spec.VolumeName}}
	case *storagev1.StorageClass:
		p.classes[o.Name] = o
		if o.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			p.defaultClass = o.Name
		}
		if p.drivers.resolved {
			p.addStorageClass(o)
		} else {
			p.pendingClasses = append(p.pendingClasses, o)
		}
	case *v1.Node:
		p.addNode(o)
	case *storagev1.CSIDriver:
		p.drivers.add(o)
		p.cephConfig.addObject(o)
	case *v1.ConfigMap, *unstructured.Unstructured:
		p.cephConfig.addObject(o)
	case *storagev1.CSINode:
		p.sawCSINodes = true
		p.drivers.add(o)
		if slices.ContainsFunc(o.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == vsphere.DriverName }) {
			p.vsphereDriver = true
		}
	case *v1.Secret:
		p.sawSecrets = true
		p.secrets[claimKey(o.Namespace, o.Name)] = slimSecret(o)
	}
}

func (p *Planner) addPV(pv *v1.PersistentVolume) {
	name := plugin.InTreeNameOfPV(pv)
	if name == "" {
		return
	}
	p.settleDrivers()
	p.plugins[name] = true
	vp := VolumePlan{Name: pv.Name, Plugin: name}
	if pv.Spec.ClaimRef != nil {
		vp.Claim = claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
	idx := len(p.plan.Volumes)
	if !p.tr.IsPVMigratable(pv) {
		vp.Reason = "no migration plugin registered for " + name
		p.plan.Volumes = append(p.plan.Volumes, vp)
		p.plan.Blocked = true
		return
	}
	vp.Driver, _ = p.tr.GetCSINameFromInTreeName(name)
	// Without CSIDrivers in the input the volume is not ready, and the
	// plan's hazard says what to give, once.
	driverNotChecked := p.drivers.check(name)
	if f := driverNotChecked; f != nil && f.Code != FindingCSIDriversNotChecked {
		vp.Findings = append(vp.Findings, *f)
		driverNotChecked = nil
	}
	checked := p.tr.CheckPV(pv)
	for _, f := range checked {
		if p.sawSecrets && secretWarnings[f.Code] {
			// The secrets are in the input: finish judges them instead.
			continue
		}
		vp.Findings = append(vp.Findings, f)
	}
	out, err := p.tr.TranslateInTreePVToCSI(p.logger, pv)
	if err != nil {
		vp.Reason = err.Error()
	} else {
		vp.Migratable = true
		vp.Handle = out.Spec.CSI.VolumeHandle
		p.form(&vp, pv, out)
		if pv.Spec.VsphereVolume != nil {
			vp.Findings = append(vp.Findings, p.drivers.topologyFindings(out, p.vsphereKeys)...)
		}
	}
	// What rewrite -apply refuses, by the same rules.
	if why := p.rewriteRefusal(pv); why != nil {
		vp.Findings = append(vp.Findings, *why)
	}
	p.needs(pv, out, err, idx)
	if err == nil && !slices.ContainsFunc(vp.Findings, func(f plugin.Finding) bool { return f.Severity == plugin.SeverityBlocker }) {
		// The replacement is built from out and the findings, not translated again.
		vp.Findings = append(vp.Findings, p.rewriteChanges(pv, out, checked, idx)...)
	}
	for _, f := range vp.Findings {
		if f.Severity == plugin.SeverityBlocker {
			vp.Migratable = false
			if vp.Reason == "" {
				vp.Reason = f.Message
			}
		}
	}
	if f := driverNotChecked; f != nil && vp.Migratable {
		vp.Migratable, vp.Reason = false, f.Message
	}
	if !vp.Migratable {
		p.plan.Blocked = true
	}
	p.plan.Volumes = append(p.plan.Volumes, vp)
}

// form predicts what a migrated Ceph volume will be to Ceph CSI: an RBD
// image from its class's imageFeatures (the in-tree provisioner's default
// is none: no layering), a CephFS volume static.
func (p *Planner) form(vp *VolumePlan, pv, out *v1.PersistentVolume) {
	switch {
	case pv.Spec.RBD != nil:
		var features *string
		if sc, ok := p.classes[pv.Spec.StorageClassName]; ok && sc != nil && pv.Spec.StorageClassName != "" {
			f := ""
			for k, v := range rewrite.InTreeClass(sc).Parameters {
				if strings.EqualFold(k, "imageFeatures") {
					f = v
				}
			}
			features = &f
		}
		in := adopt.RBDInput{PV: out, ClassFeatures: features, FormOnly: true}
		var readErr error
		if p.rbdImage != nil {
			pool := pv.Spec.RBD.RBDPool
			if pool == "" {
				pool = "rbd"
			}
			in.Image, readErr = p.rbdImage(pool, pv.Spec.RBD.RBDImage)
		}
		decide := func(referencedBy []string) (adopt.Decision, error) {
			in := in
			in.ReferencedBy = referencedBy
			d, err := adopt.RBD(in)
			if readErr != nil {
				d.Why = append([]string{"reading the image from Ceph: " + readErr.Error()}, d.Why...)
			}
			return d, err
		}
		d, err := decide(nil)
		if err != nil {
			return
		}
		vp.Form, vp.Features, vp.FormWhy = string(d.Form), featureNames(d.Features), d.Why
		p.sameVolume(pv, decide)
		if d.KeepRetain != "" {
			vp.FormWhy = append(vp.FormWhy, d.KeepRetain)
		}
		if d.Predicted {
			vp.FormWhy = append(vp.FormWhy, "when adopted (the adoption reads the image first); otherwise the migration handle: stage, expand, delete")
		} else {
			vp.FormWhy = append(vp.FormWhy, "when adopted (the image as Ceph reports it now); otherwise the migration handle: stage, expand, delete")
		}
	case pv.Spec.CephFS != nil && out.Spec.CSI != nil:
		p.cephFSForm(vp, pv, out)
	case pv.Spec.VsphereVolume != nil && out.Spec.CSI != nil:
		decide := func(referencedBy []string) (adopt.Decision, error) {
			return adopt.VSphere(adopt.VSphereInput{PV: out, ReferencedBy: referencedBy})
		}
		d, err := decide(nil)
		if err != nil {
			return
		}
		vp.Form, vp.Features = string(d.Form), featureNames(d.Features)
		vp.FormWhy = []string{vSphereNativeWhy}
		p.sameVolume(pv, decide)
		if p.opts.VCenter != nil {
			blockers, why := p.vsphereDisk("spec.vsphereVolume", pv.Spec.VsphereVolume)
			vp.Findings = append(vp.Findings, blockers...)
			vp.FormWhy = append(vp.FormWhy, why...)
		}
	}
}

// featureNames are features as strings.
func featureNames(fs []adopt.Feature) []string {
	var s []string
	for _, f := range fs {
		s = append(s, string(f))
	}
	return s
}

// What the vSphere CSI driver v3.7.0 serves for a vSphere volume (measured
// in vspheretest): by its First Class Disk ID, as its own volume (the form
// rewrite -apply -adopt gives it), publish, expand, delete and snapshot; by
// its datastore path, only through its migration mapping, and no snapshot.
const vSphereNativeWhy = "when adopted (the adoption registers the disk as a First Class Disk and CNS volume where it is not one, as the driver's syncer does, " +
	"and gives the PV that ID as handle); otherwise the migration handle, its datastore path, which the driver serves only through its migration mapping " +
	"(CnsVSphereVolumeMigration): publish, expand, delete, and no snapshot"

// cephFSForm predicts what a migrated CephFS volume becomes: native where
// its path is /volumes/<group>/<name> (and, with CephFSSubvolume, Ceph's
// volumes module serves it), with the cluster entry of its group added to
// the config map the plan prints; static otherwise.
func (p *Planner) cephFSForm(vp *VolumePlan, pv, out *v1.PersistentVolume) {
	attrs := out.Spec.CSI.VolumeAttributes
	// The form when adopted with the admin Secret, which the plan cannot
	// know will be given: the rules decide the form alone.
	in := adopt.CephFSInput{PV: out, FormOnly: true}
	var readErr error
	if group, name, ok := adopt.SubvolumeOf(attrs["rootPath"]); ok {
		e := ceph.CephFSGroupEntry(ceph.EntryFor(pv.Spec.CephFS.Monitors), group)
		p.clusters[e.ClusterID] = e
		// The adoption's entry: listed with the others, blocking nothing
		// (without it the volume stays static).
		p.cephConfig.need(cephfs.PluginName, e, -1, "")
		in.ClusterID = e.ClusterID
		if p.groups == nil {
			p.groups = map[int]string{}
		}
		p.groups[len(p.plan.Volumes)] = group
		if p.subvolume != nil {
			in.Subvolume, in.NotSubvolume, readErr = p.subvolume(attrs["fsName"], group, name)
		}
	}
	decide := func(referencedBy []string) (adopt.Decision, error) {
		in := in
		in.ReferencedBy = referencedBy
		d, err := adopt.CephFS(in)
		if readErr != nil {
			d.Why = append([]string{"reading the subvolume from Ceph: " + readErr.Error()}, d.Why...)
		}
		return d, err
	}
	d, err := decide(nil)
	if err != nil {
		return
	}
	vp.Form, vp.Features, vp.FormWhy = string(d.Form), featureNames(d.Features), d.Why
	p.sameVolume(pv, decide)
	if d.Form != adopt.FormNative {
		return
	}
	if d.KeepRetain != "" {
		vp.FormWhy = append(vp.FormWhy, d.KeepRetain)
	}
	how := "when adopted with the admin Secret Ceph CSI's CephFS StorageClass names (adminID and adminKey)"
	if d.Predicted {
		how += ", which reads the subvolume first"
	}
	vp.FormWhy = append(vp.FormWhy, how+"; otherwise a static volume: stage only")
	user := pv.Spec.CephFS.User
	if user == "" {
		user = "admin"
	}
	vp.FormWhy = append(vp.FormWhy, "adopted, Ceph CSI mounts it with that Secret's admin credentials, as its own volumes, not as its own Ceph user client."+user)
}

// rewriteRefusal is the finding for what makes rewrite -apply refuse the
// PV (objectRefusal, claimRefusal), or for claims the input lacks.
func (p *Planner) rewriteRefusal(pv *v1.PersistentVolume) *plugin.Finding {
	refused := func(err error) *plugin.Finding {
		return &plugin.Finding{Code: FindingRewriteRefuses, Severity: plugin.SeverityBlocker, Field: "PersistentVolume " + pv.Name,
			Message: "the rewrite would refuse it: " + reasonOf(err), Remedy: remedyOf(err), Action: actionOf(err), ActsOn: actsOnOf(err)}
	}
	if err := rewrite.ObjectRefusal(pv); err != nil {
		return refused(err)
	}
	c := pv.Spec.ClaimRef
	if c == nil {
		return nil
	}
	if !p.sawClaims && c.UID != "" {
		if pv.Status.Phase == v1.VolumeReleased {
			return refused(&rewrite.Refusal{Code: rewrite.CodeClaimGone, Reason: fmt.Sprintf("its claim %s/%s is gone (the PV is Released)", c.Namespace, c.Name),
				Remedy: "reclaim it (delete the image by hand, then the PV), or re-bind it: clear spec.claimRef.uid and create a claim with spec.volumeName " + pv.Name})
		}
		return &plugin.Finding{Code: FindingClaimNotChecked, Severity: plugin.SeverityBlocker, Field: "spec.claimRef",
			Message: reasonClaimNotChecked, Remedy: remedyClaimNotChecked, Action: plugin.ActionGiveInput, ActsOn: "PersistentVolumeClaims"}
	}
	pvc, found := p.claims[claimKey(c.Namespace, c.Name)]
	if !found {
		pvc = nil
	}
	if err := rewrite.ClaimRefusal(pv, pvc); err != nil {
		return refused(err)
	}
	return nil
}

// The finding of a bound PV whose claim the input lacks (the same strings
// for every PV: a dump of PVs alone has one per PV).
const (
	reasonClaimNotChecked = "the input has no PersistentVolumeClaims: whether the claim exists and is bound to this PV (the rewrite requires it) is not checked"
	remedyClaimNotChecked = "give the claims too: kubectl get pv,pvc,sc,pods,secrets -A -o yaml, or read them from the cluster"
)

// rewriteChanges are the findings for what the rewrite changes beyond the
// translated source: a reclaim policy kept at Retain.
// out is pv's translation and checked its findings (rewrite -apply's
// replacement is built from them, not translated again).
func (p *Planner) rewriteChanges(pv, out *v1.PersistentVolume, checked []plugin.Finding, idx int) []plugin.Finding {
	var pvc *v1.PersistentVolumeClaim
	if c := pv.Spec.ClaimRef; c != nil {
		pvc = p.claims[claimKey(c.Namespace, c.Name)]
	}
	sc := p.classes[pv.Spec.StorageClassName]
	r, err := rewrite.Replacement(p.tr, p.logger, pv, out, checked, sc, pvc)
	if need, ok := r.DeletionNeed(); ok && err == nil {
		p.secretNeeds = append(p.secretNeeds, secretNeed{SecretNeed: need, volume: idx})
	}
	if err != nil {
		// CheckPV's blockers are reported already (the caller asks only
		// without them); what is left is the class's provisioner secret.
		return []plugin.Finding{{Code: FindingRewriteRefuses, Severity: plugin.SeverityBlocker, Field: "spec.storageClassName",
			Message: "the rewrite would refuse it: " + err.Error(),
			Remedy:  "fix the provisioner secret parameters (csi.storage.k8s.io/provisioner-secret-name and csi.storage.k8s.io/provisioner-secret-namespace) of StorageClass " + pv.Spec.StorageClassName}}
	}
	var found []plugin.Finding
	if change := rewrite.AccessModeChange(pv, r.CSI); change != "" {
		found = append(found, plugin.Finding{Code: FindingAccessModesChanged, Severity: plugin.SeverityWarning, Field: "spec.accessModes",
			Message: p.intern("the rewritten PV's " + change), Remedy: "nothing to do if the volume's pods run on one node at a time; otherwise keep the PV in-tree and move its data to a volume of a driver that serves those modes"})
	}
	if r.KeptRetain() == "" {
		return found
	}
	msg := strings.Join(r.KeptWhy, "; ")
	remedy := "delete the volume by hand when it is released"
	if r.NoDeletionSecret {
		remedy += "; or give the PV's StorageClass with its provisioner secret in the input (or set annotations " + secrets.AnnDeletionSecretName + " and " + secrets.AnnDeletionSecretNamespace + " on the PV) so that the driver can delete it"
	}
	return append(found, plugin.Finding{Code: FindingReclaimKept, Severity: plugin.SeverityWarning, Field: "spec.persistentVolumeReclaimPolicy",
		Message: p.intern(fmt.Sprintf("the rewritten PV keeps reclaim policy %s instead of %s: %s", r.RestorePolicy, r.OriginalPolicy, msg)),
		Remedy:  p.intern(remedy)})
}

// reasonOf is the reason of a rewrite refusal, without its remedy.
func reasonOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return err.Error()
}

// intern returns one copy of each distinct message, so that a finding
// many PVs share is kept once.
func (p *Planner) intern(msg string) string {
	if m, ok := p.messages[msg]; ok {
		return m
	}
	if p.messages == nil {
		p.messages = map[string]string{}
	}
	if len(p.messages) < 1000 {
		p.messages[msg] = msg
	}
	return msg
}

// remedyOf is the remedy of a rewrite refusal.
func remedyOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) && r.Remedy != "" {
		return r.Remedy
	}
	return "see the message; the rewrite leaves the PV as it is"
}

// actsOnOf is what a refusal's remedy acts on ("" for none).
func actsOnOf(err error) string {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.ActsOn
	}
	return ""
}

// actionOf is the action of a refusal's remedy ("" for none).
func actionOf(err error) plugin.Action {
	var r *rewrite.Refusal
	if errors.As(err, &r) {
		return r.Action
	}
	return ""
}

// needs records the Ceph cluster entry and the secrets the translation of
// pv (out, or err) makes a Ceph CSI driver read; volume is its index in the
// plan, -1 for the PV form of an inline volume.
func (p *Planner) needs(pv *v1.PersistentVolume, out *v1.PersistentVolume, err error, volume int) {
	var e ceph.ClusterEntry
	switch {
	case pv.Spec.RBD != nil:
		e = p.addCluster(pv.Spec.RBD.CephMonitors)
	case pv.Spec.CephFS != nil:
		e = p.addCluster(pv.Spec.CephFS.Monitors)
	default:
		return
	}
	if err == nil && out != nil && out.Spec.CSI != nil {
		if id := out.Spec.CSI.VolumeAttributes["clusterID"]; id != "" {
			e.ClusterID = id
		}
	}
	p.cephConfig.need(plugin.InTreeNameOfPV(pv), e, volume, "")
	if err != nil {
		return
	}
	for _, n := range rewrite.SecretNeeds(pv, out) {
		p.secretNeeds = append(p.secretNeeds, secretNeed{SecretNeed: n, volume: volume})
	}
}

func (p *Planner) addCluster(mons []string) ceph.ClusterEntry {
	e := ceph.EntryFor(mons)
	p.clusters[e.ClusterID] = e
	return e
}

// addWorkload records the in-tree inline volumes of a pod or a workload's
// pod template, the claims a running pod uses, and a StatefulSet's claim
// templates.
func (p *Planner) addWorkload(w *rewrite.Workload) {
	p.owners[w.Key()] = w.Owner
	p.cephConfig.addWorkload(w)
	if w.Kind == "Pod" && !w.Finished {
		if w.Spec.NodeName != "" {
			p.podNode[w.Namespace+"/"+w.Name] = w.Spec.NodeName
		}
		for _, vol := range w.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil {
				k := claimKey(w.Namespace, vol.PersistentVolumeClaim.ClaimName)
				p.podsByClaim[k] = append(p.podsByClaim[k], w.Namespace+"/"+w.Name)
			}
		}
	}
	for i := range w.Spec.Volumes {
		vol := &w.Spec.Volumes[i]
		if name := plugin.InTreeNameOfVolume(vol); name != "" {
			p.plugins[name] = true
			p.inline = append(p.inline, inlineFound{plan: p.planInline(w, vol, name), key: w.Key(), owner: w.Owner, ns: w.Namespace})
		}
	}
	for _, t := range w.ClaimTemplates {
		class := ""
		if t.Spec.StorageClassName != nil {
			class = *t.Spec.StorageClassName
		}
		p.templates = append(p.templates, ClaimTemplatePlan{StatefulSet: w.Namespace + "/" + w.Name, Template: t.Name, StorageClass: class})
	}
}

// planInline plans an inline volume: never migratable in place (no pod
// spec can be changed, and nothing translates inline volumes for the
// kubelet after the in-tree plugins are gone), but movable to a PV and
// claim, whose needs (secrets, cluster entry) and blockers are those of the
// PV form `csimigrate translate` prints.
func (p *Planner) planInline(w *rewrite.Workload, vol *v1.Volume, plugin string) InlinePlan {
	ip := InlinePlan{Workload: w.ID(), Volume: vol.Name, Plugin: plugin, Claim: rewrite.InlineClaimName(w, vol.Name)}
	why := "the in-tree plugin is removed (1.31) and no component translates inline volumes for the kubelet any more"
	if vol.VsphereVolume != nil {
		why = "the vSphere CSI driver does not support inline volumes after migration"
	}
	ip.Reason = why + "; a pod's volumes cannot be changed: create the PV and claim of its translation (" + ip.Claim +
		") and change the " + w.Kind + " to use the claim"
	form := rewrite.NewInlineForm(p.tr, p.logger, w, vol, ip.Claim, p.inlineCapacity, InlineRemedy)
	if form.InTree == nil {
		return ip
	}
	var blockers []string
	for _, f := range form.Blockers {
		blockers = append(blockers, f.Message+" ("+f.Remedy+")")
	}
	if form.Err != nil {
		blockers = append(blockers, form.Err.Error())
	}
	if vol.VsphereVolume != nil && p.opts.VCenter != nil {
		found, _ := p.vsphereDisk("spec.volumes["+vol.Name+"].vsphereVolume", vol.VsphereVolume)
		for _, f := range found {
			blockers = append(blockers, f.Message+" ("+f.Remedy+")")
		}
	}
	if len(blockers) > 0 {
		ip.Reason += "; first: " + strings.Join(blockers, "; ")
	}
	p.needs(form.InTree, form.CSI, form.Err, -1)
	return ip
}

// InlineRemedy is the remedy of a finding of an inline volume's PV form:
// the workload's volume is what the admin changes before translating.
func InlineRemedy(w *rewrite.Workload, f plugin.Finding) string {
	switch f.Code {
	case rbd.FindingNoSecret:
		return "create a Secret in " + w.Namespace + " holding the user's key under \"key\" (and \"adminId\" for a non-admin user), name it in the volume's secretRef in the " + w.Kind + "'s manifest, then translate it"
	case cephfs.FindingSecretFileOnly:
		return "create a Secret in " + w.Namespace + " holding the key under \"key\", name it in the volume's secretRef in the " + w.Kind + "'s manifest, then translate it"
	}
	return f.Remedy
}

func (p *Planner) addStorageClass(sc *storagev1.StorageClass) {
	if !rewrite.TranslatableClass(p.tr, sc) {
		return
	}
	in := rewrite.InTreeClass(sc)
	p.plugins[in.Provisioner] = true
	sp := StorageClassPlan{Name: sc.Name, From: sc.Provisioner}
	if sc.Provisioner == plugin.CephFSExternalProvisioner {
		sp.Reason = p.cephFSProvisionerClass(sc)
		p.plan.StorageClasses = append(p.plan.StorageClasses, sp)
		p.plan.Blocked = true
		return
	}
	out, err := p.tr.TranslateInTreeStorageClassToCSI(p.logger, in.Provisioner, in)
	if err != nil {
		sp.Reason = err.Error()
		p.plan.Blocked = true
	} else {
		sp.Migratable, sp.To = true, out.Provisioner
		var notes []string
		if in != sc {
			notes = append(notes, sc.Provisioner+" (retired, outside Kubernetes) creates in-tree "+in.Provisioner+" PVs, which no kubelet mounts from 1.31; its parameters are the in-tree plugin's and translate as such")
		}
		if d := out.Annotations[rbd.AnnDroppedParameters]; d != "" {
			notes = append(notes, "parameters without a Ceph CSI counterpart are dropped: "+d)
		}
		sp.Reason = strings.Join(notes, "; ")
		if mons := out.Parameters["monitors"]; mons != "" && in.Provisioner == rbd.PluginName {
			e := ceph.ClusterEntry{ClusterID: out.Parameters["clusterID"], Monitors: strings.Split(mons, ",")}
			p.clusters[e.ClusterID] = e
			p.cephConfig.need(in.Provisioner, e, -1, sc.Name)
		}
		if in.Provisioner == rbd.PluginName {
			// Ceph CSI reads the migration user from the admin secret's
			// adminId, never from the class's parameter.
			if ref, user, err := rewrite.ClassAdminSecret(out); err == nil && ref != nil {
				p.secretNeeds = append(p.secretNeeds, secretNeed{SecretNeed: rewrite.SecretNeed{Namespace: ref.Namespace, Name: ref.Name, Driver: secrets.CephRBDDriver,
					User: user, Uses: []string{string(secrets.Provisioner), string(secrets.NodeStage), string(secrets.ControllerExpand)}}, volume: -1, class: sc.Name})
			}
		}
	}
	if f := p.drivers.check(in.Provisioner); f != nil && sp.Migratable {
		// The class's needs are planned all the same (its secrets), but
		// nothing would provision for it.
		sp.Migratable, sp.Reason = false, f.Message+"; "+f.Remedy
		p.plan.Blocked = true
	}
	p.plan.StorageClasses = append(p.plan.StorageClasses, sp)
	if sp.Migratable && in.Provisioner == vsphere.PluginName && p.opts.VCenter != nil {
		p.vsphereClass(in)
	}
}

// cephFSProvisionerClass is the reason a ceph.com/cephfs class cannot be
// replaced automatically, with what its CSI replacement needs.
func (p *Planner) cephFSProvisionerClass(sc *storagev1.StorageClass) string {
	why := sc.Provisioner + " (retired, outside Kubernetes) creates in-tree CephFS PVs (one directory and one Ceph user per claim), which no kubelet mounts from 1.31, and it has no CSI counterpart csimigrate can derive: Ceph CSI's CephFS provisioner needs the file system's name (fsName) and an admin secret with adminID/adminKey"
	clusterID := "<clusterID>"
	if mons := sc.Parameters["monitors"]; mons != "" {
		e := ceph.EntryFor(strings.Split(mons, ","))
		p.clusters[e.ClusterID] = e
		clusterID = e.ClusterID
	}
	return why + "; delete the class and create it again with the same name, provisioner cephfs.csi.ceph.com and parameters clusterID: " + clusterID +
		", fsName: <your file system>, csi.storage.k8s.io/provisioner-secret-name/-namespace and node-stage-secret-name/-namespace naming such a secret"
}

// Finding codes of the plan itself (the library's are the plugins').
const (
	// FindingRewriteRefuses: rewrite -apply would refuse the PV.
	FindingRewriteRefuses = "RewriteRefuses"
	// FindingClaimNotChecked: the input has no claims to check a binding.
	FindingClaimNotChecked = "ClaimNotChecked"
	// FindingReclaimKept: the rewritten PV keeps Retain instead of Delete.
	FindingReclaimKept = "ReclaimPolicyKeptRetain"
	// FindingSecretMissing: a Secret a migrated volume or class needs is
	// not in the input (or, for rewrite -apply, not in the cluster).
	FindingSecretMissing = "SecretMissing"
	// FindingSecretsNotChecked: the input has no Secrets.
	FindingSecretsNotChecked = "SecretsNotChecked"
	// FindingVolumeInUse: pods use the volume; the rewrite waits for them
	// to stop, or replaces it under them only online.
	FindingVolumeInUse = "VolumeInUse"
	// FindingCephConfigEntry: an entry of the Ceph CSI cluster config
	// given to the translator that Ceph CSI would not serve.
	FindingCephConfigEntry = "CephConfigEntry"
	// FindingClassSecretNeedsAdminId: an RBD class's admin secret lacks
	// the adminId of a non-admin adminId parameter.
	FindingClassSecretNeedsAdminId = "RBDClassSecretNeedsAdminId"
	// FindingSecretNotReady: a Secret a migrated volume (or class) makes
	// the Ceph CSI driver read is missing or lacks what the driver reads.
	FindingSecretNotReady = "SecretNotReady"
	// FindingAccessModesChanged: the rewritten PV has other access modes
	// than the in-tree PV (a translation narrowed them).
	FindingAccessModesChanged = "AccessModesChanged"
)

// Finish settles what depended on later objects and returns the plan.
func (p *Planner) Finish() *Plan {
	p.settleDrivers()
	plan := p.plan
	if f := p.drivers.notChecked(); f != nil {
		plan.Hazards = append(plan.Hazards, *f)
		plan.Blocked = true
	}
	p.shareImages(plan)
	p.markInUse(plan)
	p.settleInline()
	p.settleSecrets(plan)
	p.settleTemplates()
	for _, id := range slices.Sorted(maps.Keys(p.clusters)) {
		plan.CephClusters = append(plan.CephClusters, p.clusters[id])
	}
	p.settleVCenter(plan)
	p.settleCephConfig(plan)
	p.addNotices(plan)
	return plan
}

// sameVolume records that the volume planned next is the one pv names
// (rewrite.VolumeKey), and how its form is decided, for shareImages.
func (p *Planner) sameVolume(pv *v1.PersistentVolume, decide func(referencedBy []string) (adopt.Decision, error)) {
	if key, ok := rewrite.VolumeKey(pv); ok && p.byVolume != nil {
		idx := len(p.plan.Volumes)
		p.byVolume[key] = append(p.byVolume[key], idx)
		if p.decide == nil {
			p.decide = map[int]func([]string) (adopt.Decision, error){}
		}
		p.decide[idx] = decide
	}
}

// shareImages decides again, by package adopt's rules, the form of each
// volume more than one PV names (its image, path or disk): the adoption
// leaves it, since deleting either PV would destroy it.
func (p *Planner) shareImages(plan *Plan) {
	for _, idx := range p.byVolume {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			var others []string
			for _, j := range idx {
				if j != i {
					others = append(others, plan.Volumes[j].Name)
				}
			}
			d, err := p.decide[i](others)
			if err != nil {
				continue
			}
			v := &plan.Volumes[i]
			why := d.Why
			if v.Plugin == plugin.VSphereInTreePluginName && len(v.FormWhy) > 1 {
				why = append(why, v.FormWhy[1:]...) // what vCenter said of the disk
			}
			v.Form, v.Features, v.FormWhy = string(d.Form), featureNames(d.Features), why
		}
	}
}

// markInUse names the pods that use each volume, and says why a volume
// that could be native is adopted only once they stop.
func (p *Planner) markInUse(plan *Plan) {
	for i := range plan.Volumes {
		if c := plan.Volumes[i].Claim; c != "" {
			plan.Volumes[i].InUseBy = p.podsByClaim[c]
			if v := &plan.Volumes[i]; v.Driver != "" {
				for _, f := range p.drivers.nodePluginMissing(v.Driver, v.InUseBy, p.podNode) {
					v.Findings = append(v.Findings, f)
					v.Migratable = false
					if v.Reason == "" {
						v.Reason = f.Message
					}
					plan.Blocked = true
				}
			}
			if v := &plan.Volumes[i]; len(v.InUseBy) > 0 && v.Form == string(adopt.FormNative) {
				if v.Plugin == plugin.CephFSInTreePluginName {
					v.FormWhy = append(v.FormWhy, "pods use it: the adoption changes the volume handle the kubelet tracks, so it is adopted once they are stopped (rewritten online while in use, it is a static volume until an adoption of CSI PVs adopts it unused)")
				} else {
					v.FormWhy = append(v.FormWhy, "pods use it: the adoption changes the volume handle the kubelet tracks, so it is adopted once they are stopped (rewritten online, it gets its migration handle, and an adoption of CSI PVs adopts it when unused)")
				}
			}
		}
	}
}

// settleSecrets plans the Secrets the volumes and classes need, once each,
// and blocks the plan when the input has none to check.
func (p *Planner) settleSecrets(plan *Plan) {
	secretPlans := map[string]*SecretPlan{}
	add := func(sp SecretPlan) {
		k := sp.Namespace + "/" + sp.Name + "/" + sp.Action
		if old, ok := secretPlans[k]; ok {
			old.Fields = slices.Compact(slices.Sorted(slices.Values(append(old.Fields, sp.Fields...))))
			return
		}
		secretPlans[k] = &sp
	}
	var unchecked []string
	for _, need := range p.secretNeeds {
		if !p.sawSecrets {
			unchecked = append(unchecked, need.Key())
			if need.From != "" {
				unchecked = append(unchecked, need.From)
			}
		}
		p.planSecret(need, add)
	}
	if len(unchecked) > 0 {
		slices.Sort(unchecked)
		unchecked = slices.Compact(unchecked)
		plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingSecretsNotChecked, Severity: plugin.SeverityBlocker, Field: "Secret",
			Message: fmt.Sprintf("the input has no Secrets: the %d the migrated volumes and classes need (%s) are not checked", len(unchecked), strings.Join(first(unchecked, 5), ", ")),
			Remedy:  "give the secrets too: kubectl get pv,pvc,sc,pods,secrets -A -o yaml, or read them from the cluster; values are never printed", Action: plugin.ActionGiveInput, ActsOn: "Secrets"})
		plan.Blocked = true
	}
	for _, k := range slices.Sorted(maps.Keys(secretPlans)) {
		plan.Secrets = append(plan.Secrets, *secretPlans[k])
	}
}

// addNotices adds what concerns the migration beyond each volume's
// translation: a volume in use, the Ceph config's warnings, and the
// feature-gate steps of the plugins in use.
func (p *Planner) addNotices(plan *Plan) {
	for i := range plan.Volumes {
		if v := &plan.Volumes[i]; len(v.InUseBy) > 0 {
			v.Findings = append(v.Findings, plugin.Finding{Code: FindingVolumeInUse, Severity: plugin.SeverityWarning, Field: "claim " + v.Claim,
				Message: "in use by " + strings.Join(v.InUseBy, ", ") + "; the rewrite refuses a PV in use while its pods run (unless it is rewritten online, where the plugin is already migrated on their nodes)",
				Remedy:  "stop the pods (scale their workloads to zero) before the rewrite deletes and recreates the PV object; data is kept"})
		}
	}
	for _, w := range p.opts.CephConfigWarnings {
		plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingCephConfigEntry, Severity: plugin.SeverityWarning, Field: "Ceph CSI config.json",
			Message: w, Remedy: "fix or remove the entry in Ceph CSI's config map; volumes of other clusterIDs are not affected"})
	}
	if m := p.opts.KubernetesMinor; m != 0 {
		var steps []string
		for _, pl := range featuregate.Plugins {
			if !p.plugins[pl.InTreeName] {
				continue
			}
			if d := p.drivers.driverName(pl.InTreeName); d != pl.Driver && !pl.Project {
				// Kubernetes' own migration routes to the upstream name only.
				steps = append(steps, fmt.Sprintf("%s: the cluster's driver is %s, and Kubernetes' CSI migration (%s) routes only to %s: no feature gate migrates these volumes here; rewrite the stored PVs as %s PVs before upgrading to 1.%d, which removes the in-tree plugin",
					pl.InTreeName, d, pl.Migration, pl.Driver, d, pl.InTreeRemovedIn))
				continue
			}
			steps = append(steps, featuregate.UpgradeSteps(m, pl)...)
		}
		plan.FeatureGates = steps
	}
}

// settleCephConfig plans where each Ceph CSI driver reads its cluster
// entries, and blocks the volumes and classes whose entry it does not
// serve yet (or, where the input does not show its config, whose entry is
// not checked).
func (p *Planner) settleCephConfig(plan *Plan) {
	configs, volumes, classes := p.cephConfig.settle(p.drivers.driverName, p.opts.CephCSINamespace)
	plan.CephCSIConfig = configs
	p.joinDeployments(plan)
	for _, i := range slices.Sorted(maps.Keys(volumes)) {
		v, f := &plan.Volumes[i], volumes[i]
		v.Findings = append(v.Findings, f)
		if v.Migratable {
			v.Migratable, v.Reason = false, f.Message
		}
		plan.Blocked = true
	}
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		if i := slices.IndexFunc(plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == name }); i >= 0 && plan.StorageClasses[i].Migratable {
			f := classes[name]
			p.classBlocked(name, f.Message+"; "+f.Remedy)
		}
	}
}

// settleInline lists each inline volume once, under the top owner in the
// input whose pod template has it (a Deployment rather than its ReplicaSets
// and pods), with the owned objects it came through.
func (p *Planner) settleInline() {
	has := make(map[string]bool, len(p.inline)) // "key\x00volume" of every inline volume found
	for _, f := range p.inline {
		has[f.key+"\x00"+f.plan.Volume] = true
	}
	top := func(f inlineFound) string {
		k, owner := f.key, f.owner
		for i := 0; owner != "" && i < 8; i++ {
			kind, name, _ := strings.Cut(owner, "/")
			cand := kind + "/" + f.ns + "/" + name
			next, known := p.owners[cand]
			if !known {
				break
			}
			if has[cand+"\x00"+f.plan.Volume] {
				k = cand
			}
			owner = next
		}
		return k
	}
	index := map[string]int{} // group -> index in out
	var out []InlinePlan
	var via [][]string
	for _, f := range p.inline {
		t := top(f)
		group := t + "\x00" + f.plan.Volume
		i, ok := index[group]
		if !ok {
			i = len(out)
			index[group] = i
			out = append(out, InlinePlan{})
			via = append(via, nil)
		}
		if t == f.key {
			out[i] = f.plan
		} else {
			via[i] = append(via[i], f.plan.Workload)
		}
	}
	for i := range out {
		slices.Sort(via[i])
		out[i].Via = via[i]
	}
	if len(out) > 0 {
		p.plan.Blocked = true
	}
	p.plan.InlineVolumes = out
}

// settleTemplates keeps the claim templates whose class (their own, else
// the default class) is an in-tree one.
func (p *Planner) settleTemplates() {
	var out []ClaimTemplatePlan
	for _, t := range p.templates {
		class := t.StorageClass
		if class == "" {
			class = p.defaultClass
		}
		sc, ok := p.classes[class]
		if !ok || !rewrite.TranslatableClass(p.tr, sc) {
			continue
		}
		t.StorageClass = class
		i := slices.IndexFunc(p.plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == class })
		t.Migratable = i >= 0 && p.plan.StorageClasses[i].Migratable
		if t.Migratable {
			t.Reason = "new replicas' claims are provisioned by class " + class + ", which the rewrite replaces by its CSI form (same name): nothing to change in the StatefulSet"
		} else {
			t.Reason = "new replicas' claims would be provisioned by class " + class + ", which cannot be translated (the class's findings say why): scaling up fails after the upgrade"
			p.plan.Blocked = true
		}
		out = append(out, t)
	}
	p.plan.ClaimTemplates = out
}

// classBlocked marks an in-tree class as not migratable, for why.
func (p *Planner) classBlocked(name, why string) {
	if i := slices.IndexFunc(p.plan.StorageClasses, func(s StorageClassPlan) bool { return s.Name == name }); i >= 0 {
		p.plan.StorageClasses[i].Migratable = false
		p.plan.StorageClasses[i].Reason = why
	}
	p.plan.Blocked = true
}

// secretMissing reports a Secret that is not in the input.
func (p *Planner) secretMissing(ref, why string) {
	p.plan.Hazards = append(p.plan.Hazards, plugin.Finding{Code: FindingSecretMissing, Severity: plugin.SeverityBlocker, Object: "Secret " + ref,
		Message: "Secret " + ref + " is not in the input: " + why, Remedy: "create it (the plan's Secrets list its fields), or give it in the input"})
	p.plan.Blocked = true
}

// planSecret judges a secret a migrated volume or class needs as its Ceph
// CSI driver will read it (secrets.CephCSISecretReady, the rule rewrite
// -apply applies too), lists what to create or change under SECRETS, and
// blocks the volume or class until the secret is ready: a PV rewritten
// before would not mount, expand or delete.
func (p *Planner) planSecret(need secretNeed, add func(SecretPlan)) {
	ref := need.Key()
	what := "migrated volumes"
	if need.class != "" {
		what = "StorageClass " + need.class + " (provisioning, expansion and deletion)"
	}
	s, ok := p.secrets[ref]
	if !p.sawSecrets {
		p.secretNotChecked(need, what, add)
		return
	}
	if need.From != "" {
		if _, ok := p.secrets[need.From]; !ok {
			p.secretMissing(need.From, "the CephFS secret "+ref+" is made from it")
		}
	}
	if !ok {
		s = nil
	}
	action, problem, fixes := rewrite.Judge(need.SecretNeed, s)
	if action == "" {
		return
	}
	fields, reason := need.Fields(action)
	for _, f := range fixes {
		fields, reason = []string{f.Field + "=" + f.Value}, f.Reason
	}
	add(SecretPlan{Namespace: need.Namespace, Name: need.Name, Action: action, Fields: fields, From: need.From, Reason: reason})
	remedy := fmt.Sprintf("%s Secret %s with %s (the plan's Secrets list it), then run the plan again", action, ref, strings.Join(fields, ", "))
	if need.From != "" && action == "create" {
		remedy = fmt.Sprintf("create Secret %s with %s, userKey being the key of Secret %s (the plan's Secrets list it), then run the plan again", ref, strings.Join(fields, ", "), need.From)
	}
	msg := fmt.Sprintf("Secret %s, which Ceph CSI reads for %s (%s), %s", ref, what, strings.Join(need.Uses, ", "), problem)
	p.plan.Blocked = true
	if need.volume >= 0 {
		v := &p.plan.Volumes[need.volume]
		code := FindingSecretNotReady
		if !ok {
			code = FindingSecretMissing
		}
		v.Findings = append(v.Findings, plugin.Finding{Code: code, Severity: plugin.SeverityBlocker, Object: "Secret " + ref,
			Message: p.intern(msg), Remedy: p.intern(remedy)})
		if v.Migratable || v.Reason == "" {
			v.Migratable = false
			v.Reason = p.intern("Secret " + ref + " " + problem)
		}
		return
	}
	if need.class != "" {
		code := FindingSecretNotReady
		if len(fixes) > 0 && fixes[0].Field == secrets.CephMigrationUserKey {
			code = FindingClassSecretNeedsAdminId
			msg = fmt.Sprintf("the class's adminId is %q, but Ceph CSI reads the migration user only from the admin secret's adminId and defaults to admin: provisioning would connect as client.admin with %s's key and fail", need.User, need.User)
		}
		if !ok {
			code = FindingSecretMissing
		}
		p.plan.Hazards = append(p.plan.Hazards, plugin.Finding{Code: code, Severity: plugin.SeverityBlocker, Object: "StorageClass " + need.class, Message: msg, Remedy: remedy})
		why := "its admin secret " + ref + " " + problem
		for _, f := range fixes {
			why = fmt.Sprintf("Ceph CSI would provision as client.admin: add %s: %s to Secret %s", f.Field, f.Value, ref)
		}
		p.classBlocked(need.class, why)
		return
	}
	// The PV form of an inline volume: its own plan says what it needs.
}

// secretNotChecked lists a secret the input could not show (it has no
// Secrets) for checking. Ready means checked: a volume or class whose
// Secret could not be judged is not called migratable (the hazard
// SecretsNotChecked says what to give).
func (p *Planner) secretNotChecked(need secretNeed, what string, add func(SecretPlan)) {
	ref := need.Key()
	fields, _ := need.Fields("create")
	add(SecretPlan{Namespace: need.Namespace, Name: need.Name, Action: "check", Fields: fields, From: need.From,
		Reason: "not checked (the input has no Secrets): Ceph CSI needs it for " + what + ", with " + strings.Join(fields, ", ")})
	why := "Secret " + ref + " not checked: the input has no Secrets"
	switch {
	case need.volume >= 0:
		if v := &p.plan.Volumes[need.volume]; v.Migratable {
			v.Migratable = false
			v.Reason = p.intern(why)
		}
	case need.class != "":
		p.classBlocked(need.class, "its admin "+strings.ToLower(why[:1])+why[1:])
	}
}

// secretWarnings are the plugins' secret warnings, which the plan replaces
// by its judgement of the secrets when the input has them.
var secretWarnings = map[string]bool{rbd.FindingNonAdminUser: true, cephfs.FindingCSISecret: true}

// slimSecret keeps of a Secret what the checks read: whether "key" and
// "userKey" are set, and the user names (adminId, userID); never a key.
func slimSecret(o *v1.Secret) *v1.Secret {
	slim := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}, Data: map[string][]byte{}}
	data := secrets.SecretStringData(o)
	for _, k := range []string{secrets.CephInTreeKey, secrets.CephUserKey} {
		if data[k] != "" {
			slim.Data[k] = []byte("set")
		}
	}
	for _, k := range []string{secrets.CephMigrationUserKey, secrets.CephUserID} {
		if id, ok := data[k]; ok {
			slim.Data[k] = []byte(id)
		}
	}
	return slim
}
