package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

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
	opts   Options
	tr     *translate.Translator
	logger klog.Logger
	plan   *Plan
	phase  Phase
	// What the input holds beside the PVs, and what the PVs need of it,
	// by concern; each is settled in Finish.
	claims  claimInput
	pods    podInput
	classes classInput
	secrets secretInput
	ceph    cephInput
	vsphere vsphereInput
	inline  inlineInput
	shared  sharedVolumes
	// runs are the writer's saved states: what interrupted runs left.
	runs runInput
	// drivers are the input's CSI drivers and where their node plugins
	// run.
	drivers clusterDrivers
	// messages holds interned finding messages (see intern).
	messages map[string]string
	// plugins are the in-tree plugins the input uses.
	plugins map[string]bool
	// kubelets are the nodes' names by their kubelets' minor release.
	kubelets map[int][]string
}

// claimInput are the input's claims: slim (metadata and volumeName), by
// namespace/name; seen says the input has claims.
type claimInput struct {
	slim map[string]slimClaim
	seen bool
}

// slimClaim is what the plan keeps of a claim ("namespace/name" its key):
// its uid, deletion and volume, and the annotations a provisioner secret's
// template may name (not the binder's and provisioners' own, which every
// bound claim has). A large cluster has a claim for every volume.
type slimClaim struct {
	uid         types.UID
	volumeName  string
	deletion    *metav1.Time
	annotations map[string]string
}

// claimBookkeeping are the annotations Kubernetes itself sets on claims,
// which no secret template reads.
var claimBookkeeping = []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller", "volume.beta.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/storage-provisioner", "volume.kubernetes.io/selected-node", v1.LastAppliedConfigAnnotation}

func newSlimClaim(o *v1.PersistentVolumeClaim) slimClaim {
	c := slimClaim{uid: o.UID, volumeName: o.Spec.VolumeName, deletion: o.DeletionTimestamp, annotations: o.Annotations}
	n := 0
	for _, k := range claimBookkeeping {
		if _, ok := o.Annotations[k]; ok {
			n++
		}
	}
	if n > 0 {
		c.annotations = nil
		for k, v := range o.Annotations {
			if !slices.Contains(claimBookkeeping, k) {
				if c.annotations == nil {
					c.annotations = make(map[string]string, len(o.Annotations)-n)
				}
				c.annotations[k] = v
			}
		}
	}
	return c
}

// claim is the claim of key "namespace/name" as the rewrite's rules read
// it.
func (c slimClaim) claim(key string) *v1.PersistentVolumeClaim {
	ns, name, _ := strings.Cut(key, "/")
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: c.uid, Annotations: c.annotations, DeletionTimestamp: c.deletion},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: c.volumeName}}
}

// get is the claim of namespace ns and name name, nil when the input has
// none.
func (in *claimInput) get(ns, name string) *v1.PersistentVolumeClaim {
	key := claimKey(ns, name)
	c, ok := in.slim[key]
	if !ok {
		return nil
	}
	return c.claim(key)
}

// podInput are the running pods: their names by the claims they use, and
// each one's node ("namespace/name").
type podInput struct {
	byClaim map[string][]string
	node    map[string]string
	// stuck says of each pod that cannot start what its status shows
	// (rewrite.PodStuck), phase each pod's phase.
	stuck, phase map[string]string
}

// classInput are the input's StorageClasses by name, its default class,
// and the in-tree classes read before the drivers are settled (at the
// first PV, or in Finish).
type classInput struct {
	byName      map[string]*storagev1.StorageClass
	defaultName string
	pending     []*storagev1.StorageClass
}

// secretInput are the input's Secrets (slim: no values; seen says the
// input has Secrets) and the secrets the migrated volumes and classes make
// the Ceph CSI drivers read, settled in Finish against them.
type secretInput struct {
	slim  map[string]*v1.Secret
	seen  bool
	needs []secretNeed
}

// cephInput is what the plan reads of Ceph: its clusters (by clusterID),
// how Ceph CSI is deployed (config), the subvolume group of each CephFS
// volume (by PV), and the readers of RBD images and CephFS subvolumes
// (nil: the forms are predicted).
type cephInput struct {
	clusters      map[string]ceph.ClusterEntry
	config        cephConfigInput
	groups        map[string]string
	readImage     func(pool, name string) (*adopt.Image, error)
	readSubvolume func(fs, group, name string) (*adopt.Subvolume, string, error)
}

// vsphereInput is what the plan reads for vSphere: the translation's CSI
// topology keys, the Nodes with their VM's UUID (with Options.VCenter),
// whether CSINodes were read and whether one runs the vSphere CSI driver.
type vsphereInput struct {
	keys        []string
	nodes       []NodeVM
	sawCSINodes bool
	driverRuns  bool
}

// inlineInput are the inline volumes found (settled by owner in Finish),
// the controller ("Kind/name") of every workload read by its
// "Kind/namespace/name", the StatefulSets' claim templates, and the size
// of the PVs made for inline volumes.
type inlineInput struct {
	found     []inlineFound
	owners    map[string]string
	templates []ClaimTemplatePlan
	capacity  resource.Quantity
	// replicas are the replicas of each workload that has them, by
	// "Kind/namespace/name" (a rescue scales them back).
	replicas map[string]int32
}

// sharedVolumes maps a volume (rewrite.VolumeKey: an RBD image, a CephFS
// path, a vSphere disk) to the PVs naming it; decide, by PV, decides a
// volume's form again (package adopt's rules) once the other PVs naming
// it are known.
type sharedVolumes struct {
	byKey  map[string][]string
	decide map[string]decider
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
	// (featuregate.MinMinor or later, a release after featuregate.MaxMinor
	// with that one's rules; 0: none).
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
	// SourceChanged are the objects whose keepers' sources the
	// administrator says have the new form (rewrite.KeptRefusal), as
	// rewrite -apply is told.
	SourceChanged rewrite.ChangedSources
	// Online says the rewrite is to run online (rewrite -apply -online):
	// a volume in use is then a warning where the cluster's release still
	// migrates its plugin on the nodes (onlineMayApply), and a blocker
	// everywhere else, as the writer refuses it there.
	Online bool
	// WriterHolder names who holds the writer Lease as read from the
	// cluster ("" for nobody, or not read): a run is under way, or one
	// stopped less than the Lease's duration ago.
	WriterHolder string
	// ServerVersion is the API server's version as read from the cluster
	// ("v1.37.2"; "" when not read). With KubernetesMinor of another
	// release (an administrator's choice), the plan names the difference.
	ServerVersion string
	// Namespace, when set, scopes the plan to the claims of that namespace
	// (kubectl's -n): only PVs bound to its claims are planned, with the
	// inline volumes and claim templates of its workloads; StorageClasses,
	// which serve every namespace, are read for those PVs but not planned.
	Namespace string
}

// New returns a Planner that translates with tr and logs to logger. It reads
// every object (PhaseAll) until SetPhase says otherwise.
func New(tr *translate.Translator, logger klog.Logger, opts Options) *Planner {
	return &Planner{opts: opts, tr: tr, logger: logger, plan: &Plan{Volumes: []VolumePlan{}},
		claims:  claimInput{slim: map[string]slimClaim{}},
		pods:    podInput{byClaim: map[string][]string{}, node: map[string]string{}, stuck: map[string]string{}, phase: map[string]string{}},
		classes: classInput{byName: map[string]*storagev1.StorageClass{}},
		secrets: secretInput{slim: map[string]*v1.Secret{}},
		ceph:    cephInput{clusters: map[string]ceph.ClusterEntry{}, readImage: opts.RBDImage, readSubvolume: opts.CephFSSubvolume},
		vsphere: vsphereInput{keys: opts.VSphereKeys},
		inline:  inlineInput{owners: map[string]string{}, replicas: map[string]int32{}, capacity: rewrite.DefaultInlineCapacity},
		shared:  sharedVolumes{byKey: map[string][]string{}},
		plugins: map[string]bool{}, drivers: clusterDrivers{chosen: opts.Drivers}}
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
	for _, sc := range p.classes.pending {
		p.addStorageClass(sc)
	}
	p.classes.pending = nil
}

// SetPhase says which objects Add reads from now on.
func (p *Planner) SetPhase(ph Phase) { p.phase = ph }

// Plugins are the in-tree plugins the objects read use.
func (p *Planner) Plugins() map[string]bool { return maps.Clone(p.plugins) }

// Listed says that the input is a listing of every object of a resource
// ("csidrivers", "csinodes", "persistentvolumeclaims", "secrets", as the
// API server names them), read whole even where it has none: an empty
// listing then means that the cluster has none (no CSI driver installed),
// not that the input left them out. Call it before the PVs; other
// resources are ignored.
func (p *Planner) Listed(resource string) {
	switch resource {
	case "csidrivers":
		p.drivers.sawCSIDrivers = true
	case "csinodes":
		if p.drivers.onNode == nil {
			p.drivers.onNode, p.drivers.vsphereKeys = map[string][]string{}, map[string][]string{}
		}
	case "persistentvolumeclaims":
		p.claims.seen = true
	case "secrets":
		p.secrets.seen = true
	}
}

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
		p.claims.seen = true
		p.claims.slim[claimKey(o.Namespace, o.Name)] = newSlimClaim(o)
	case *storagev1.StorageClass:
		p.runs.saw(p.runs.classes, o.Name)
		p.classes.byName[o.Name] = o
		if o.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			p.classes.defaultName = o.Name
		}
		if p.drivers.resolved {
			p.addStorageClass(o)
		} else {
			p.classes.pending = append(p.classes.pending, o)
		}
	case *v1.Node:
		p.addNode(o)
		p.addKubelet(o)
	case *storagev1.CSIDriver:
		p.drivers.add(o)
		p.ceph.config.addObject(o)
	case *v1.ConfigMap:
		p.runs.addState(o)
		p.ceph.config.addObject(o)
	case *unstructured.Unstructured:
		p.ceph.config.addObject(o)
	case *storagev1.CSINode:
		p.vsphere.sawCSINodes = true
		p.drivers.add(o)
		if slices.ContainsFunc(o.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == vsphere.DriverName }) {
			p.vsphere.driverRuns = true
		}
	case *v1.Secret:
		p.secrets.seen = true
		p.secrets.slim[claimKey(o.Namespace, o.Name)] = slimSecret(o)
	}
}

// Finish settles what depended on later objects and returns the plan.
func (p *Planner) Finish() *Plan {
	p.settleDrivers()
	plan := p.plan
	if f := p.drivers.notChecked(); f != nil {
		plan.Hazards = append(plan.Hazards, *f)
		plan.Blocked = true
	}
	at := indexVolumes(plan)
	at.annotate(plan, p.shareImages(plan, at))
	at.annotate(plan, p.markInUse(plan))
	p.settleInline()
	at.annotate(plan, p.settleSecrets(plan))
	p.settleTemplates()
	for _, id := range slices.Sorted(maps.Keys(p.ceph.clusters)) {
		plan.CephClusters = append(plan.CephClusters, p.ceph.clusters[id])
	}
	p.settleVCenter(plan)
	at.annotate(plan, p.settleCephConfig(plan, at))
	at.annotate(plan, p.inUseWarnings(plan))
	at.annotate(plan, p.nodePlugins(plan))
	p.settleRuns(plan)
	p.addNotices(plan)
	p.settleRescue(plan)
	return plan
}

// inUseWarnings say of each volume in use what the rewrite does with it:
// it refuses it (rewrite.CodeInUse) while its pods have not finished,
// unless it runs online where the release still migrates the plugin on the
// nodes (then the writer's online check decides, and this is a warning).
// The remedy names the workloads to scale down.
func (p *Planner) inUseWarnings(plan *Plan) []volumeNote {
	var notes []volumeNote
	for _, v := range plan.Volumes {
		if len(v.InUseBy) == 0 {
			continue
		}
		workloads := p.workloadsOf(v.InUseBy)
		stop := "stop the pods " + strings.Join(v.InUseBy, ", ")
		if len(workloads) > 0 {
			stop = "scale " + strings.Join(workloads, ", ") + " to zero (kubectl scale --replicas=0), or stop the pods"
		}
		f := plugin.Finding{Code: FindingVolumeInUse, Severity: plugin.SeverityBlocker, Field: "claim " + v.Claim,
			Remedy: stop + " before the rewrite deletes and recreates the PV object, then start them again; data is kept"}
		removed, online := p.inTreeRemoved(v.Plugin), onlineMayApply(v.Plugin, p.opts.KubernetesMinor)
		switch {
		case removed && !online:
			// (vSphere: removed in 1.30, but translated for the kubelet
			// still; its pods mount it through the driver.)
			f.Message = fmt.Sprintf("in use by %s; Kubernetes 1.%d has no in-tree %s plugin, so these pods cannot mount the volume until it is rewritten, and no kubelet migrates it online: the rewrite refuses it while they exist", strings.Join(v.InUseBy, ", "), p.opts.KubernetesMinor, v.Plugin)
		case !online:
			f.Message = "in use by " + strings.Join(v.InUseBy, ", ") + "; the rewrite refuses a PV in use while its pods have not finished, and no kubelet migrates " + v.Plugin + " volumes, so it cannot be rewritten online either"
		case p.opts.Online:
			f.Severity = plugin.SeverityWarning
			f.Message = "in use by " + strings.Join(v.InUseBy, ", ") + "; rewritten online only where every node running them already migrates the plugin (the writer checks each node's CSINode and VolumeAttachment), else refused"
		default:
			f.Message = "in use by " + strings.Join(v.InUseBy, ", ") + "; the rewrite refuses a PV in use while its pods have not finished (a rewrite online, where the plugin is already migrated on their nodes, may replace it under them)"
		}
		n := volumeNote{pv: v.Name, findings: []plugin.Finding{f}}
		if f.Severity == plugin.SeverityBlocker {
			n.block = f.Message
		}
		notes = append(notes, n)
	}
	return notes
}

// inTreeRemoved reports whether the cluster's release (Options.
// KubernetesMinor; 0: not known) has no in-tree plugin of that name.
func (p *Planner) inTreeRemoved(inTree string) bool {
	m := p.opts.KubernetesMinor
	for _, pl := range featuregate.Plugins {
		if pl.InTreeName == inTree {
			return m != 0 && pl.InTreeRemovedIn != 0 && m >= pl.InTreeRemovedIn
		}
	}
	return false
}

// onlineMayApply reports whether kubelets of release minor (0: not known)
// can migrate volumes of in-tree plugin inTree to CSI, which a rewrite
// online needs: Kubernetes has the plugin's translation (never CephFS's)
// and has not removed it.
func onlineMayApply(inTree string, minor int) bool {
	for _, pl := range featuregate.Plugins {
		if pl.InTreeName == inTree {
			return !pl.Project && (pl.TranslationRemovedIn == 0 || minor == 0 || minor < pl.TranslationRemovedIn)
		}
	}
	return false
}

// workloadsOf names the workloads ("StatefulSet shop/db") whose pods
// ("namespace/name") those are: each pod's top owner in the input, or its
// direct owner where that is not in the input; pods without an owner are
// left out.
func (p *Planner) workloadsOf(pods []string) []string {
	var out []string
	for _, pod := range pods {
		ns, name, _ := strings.Cut(pod, "/")
		key, owner := "Pod/"+ns+"/"+name, ""
		for i := 0; i < 8; i++ {
			next, known := p.inline.owners[key]
			if !known || next == "" {
				break
			}
			owner = next
			kind, n, _ := strings.Cut(next, "/")
			key = kind + "/" + ns + "/" + n
		}
		if owner == "" {
			continue
		}
		// key is the top owner's "Kind/namespace/name".
		kind, rest, _ := strings.Cut(key, "/")
		if w := kind + " " + rest; !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// addNotices adds what concerns the migration beyond the volumes: the
// Ceph config's warnings and the feature-gate steps of the plugins in use.
func (p *Planner) addNotices(plan *Plan) {
	for _, w := range p.opts.CephConfigWarnings {
		plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingCephConfigEntry, Severity: plugin.SeverityWarning, Field: "Ceph CSI config.json",
			Message: w, Remedy: "fix or remove the entry in Ceph CSI's config map; volumes of other clusterIDs are not affected"})
	}
	plan.KubernetesMinor, plan.ServerVersion = p.opts.KubernetesMinor, p.opts.ServerVersion
	plan.Hazards = append(plan.Hazards, p.kubeletWarnings()...)
	if h := p.opts.WriterHolder; h != "" {
		plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingWriterRunning, Severity: plugin.SeverityWarning, Field: "Lease " + rewrite.WriterLease,
			Message: fmt.Sprintf("a csimigrate writer (%s) holds the writer Lease: a rewrite is under way, or one stopped less than the Lease's duration ago; a rewrite started now waits for it", h),
			Remedy:  "let it finish, or, if its run was interrupted, run the rewrite again: it takes the Lease over once it has stopped being renewed"})
	}
	if v := p.opts.ServerVersion; v != "" && p.opts.KubernetesMinor != 0 {
		if m, err := featuregate.ParseMinor(v); err == nil && m != p.opts.KubernetesMinor {
			plan.Hazards = append(plan.Hazards, plugin.Finding{Code: FindingVersionMismatch, Severity: plugin.SeverityWarning, Field: "Kubernetes version",
				Message: fmt.Sprintf("the API server runs Kubernetes %s, but the plan is for 1.%d, as it was asked: its steps and blockers are those of 1.%d", v, p.opts.KubernetesMinor, p.opts.KubernetesMinor),
				Remedy:  "plan for the release the cluster runs, unless you plan an upgrade to the one asked"})
		}
	}
	if m := p.opts.KubernetesMinor; m != 0 {
		var steps []string
		if m > featuregate.MaxMinor && len(p.plugins) > 0 {
			steps = append(steps, fmt.Sprintf("1.%d is newer than the releases csimigrate knows (to 1.%d): their rules apply; for these plugins nothing changes after 1.31, which removed the in-tree Ceph plugins (vSphere's in 1.30)", m, featuregate.MaxMinor))
		}
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
