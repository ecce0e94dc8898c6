package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
	"github.com/csimigrate/csimigrate/volumeid"
)

// VCenter is what the plan reads from vCenter when Options.VCenter is set:
// the command's vCenter client (govmomi), connected as the vSphere CSI
// driver's configuration says. An implementation only reads.
type VCenter interface {
	// Environment reads vCenter's version, its ESXi hosts and the virtual
	// machines whose BIOS UUIDs (a Node's providerID vsphere://<uuid>) are
	// given; a UUID vCenter does not know is absent from VMs.
	Environment(uuids []string) (VSphereEnvironment, error)
	// Disk reads what vCenter has of a volume path "[datastore] dir/disk.vmdk"
	// (the in-tree path as the in-tree plugin resolved it).
	Disk(path string) (VSphereDisk, error)
	// Datastore reports whether a datastore of the name exists in the
	// datacenters the driver is configured with.
	Datastore(name string) (bool, error)
	// StoragePolicy reports whether a storage policy exists: by name
	// (the way the driver looks names up), or by ID when byID is set.
	StoragePolicy(nameOrID string, byID bool) (bool, error)
}

// VSphereEnvironment is what vCenter says of itself, its hosts and the
// nodes' virtual machines.
type VSphereEnvironment struct {
	// Version is vCenter's product version ("8.0.3"), APIVersion its API
	// version ("8.0.3.0"), Build its build number.
	Version    string `json:"version"`
	APIVersion string `json:"apiVersion,omitempty"`
	Build      string `json:"build,omitempty"`
	// Hosts are the ESXi hosts and their versions.
	Hosts []envcheck.Host `json:"hosts,omitempty"`
	// VMs are the virtual machines found, by lower-case BIOS UUID.
	VMs map[string]envcheck.VM `json:"-"`
}

// VSphereDisk is what vCenter has of an in-tree volume's disk.
type VSphereDisk struct {
	// Datastore: the path's datastore exists; File: the VMDK exists.
	Datastore bool
	File      bool
	// FCD is the disk's First Class Disk ID ("" when it is not one).
	FCD string
	// CNS: a CNS volume of that ID exists.
	CNS bool
}

// VCenterReport is what the plan read from vCenter.
type VCenterReport struct {
	VSphereEnvironment
	// Nodes are the cluster's nodes and their virtual machines.
	Nodes []NodeVM `json:"nodes,omitempty"`
}

// NodeVM is a node and the virtual machine its providerID names.
type NodeVM struct {
	Node string `json:"node"`
	// UUID is the providerID's BIOS UUID ("" when the node has no vSphere
	// providerID).
	UUID string `json:"uuid,omitempty"`
	// VM and HardwareVersion are the VM's name and hardware version ("" when
	// vCenter has no VM of that UUID).
	VM              string `json:"vm,omitempty"`
	HardwareVersion string `json:"hardwareVersion,omitempty"`
}

// Finding codes of the plan's vCenter checks.
const (
	// FindingVCenterRead: reading vCenter failed, so the volume or the
	// environment could not be judged.
	FindingVCenterRead = "VCenterReadFailed"
	// FindingVCenterTooOld: vCenter is older than vSphere CSI migration
	// needs (MinMigrationVersion).
	FindingVCenterTooOld = "VCenterTooOldForMigration"
	// FindingVSphereDatastoreMissing: the volume's (or the class's)
	// datastore is not in vCenter.
	FindingVSphereDatastoreMissing = "VSphereDatastoreMissing"
	// FindingVSphereDiskMissing: the volume's VMDK is not on its datastore.
	FindingVSphereDiskMissing = "VSphereDiskMissing"
	// FindingVSpherePolicyMissing: the volume's (or the class's) storage
	// policy is not in vCenter.
	FindingVSpherePolicyMissing = "VSpherePolicyMissing"
	// FindingVSphereMappingConflict: the driver's migration mapping of the
	// path names another volume than the disk's First Class Disk.
	FindingVSphereMappingConflict = "VSphereMappingConflict"
	// FindingVSphereNodeVM: a node's virtual machine is not in vCenter, or
	// the node names none.
	FindingVSphereNodeVM = "VSphereNodeVM"
	// FindingVSphereDriverMissing: no node runs the vSphere CSI driver.
	FindingVSphereDriverMissing = "VSphereDriverMissing"
)

// MinMigrationVersion is the vCenter version vSphere CSI migration needs:
// 7.0 Update 1 (the driver's syncer registers in-tree disks with CNS from
// it on).
var MinMigrationVersion = envcheck.Version{Major: 7, Minor: 0, Patch: 1}

// addNode records a node's vSphere virtual machine (its providerID).
func (p *Planner) addNode(n *v1.Node) {
	if p.opts.VCenter == nil {
		return
	}
	uuid, ok := strings.CutPrefix(n.Spec.ProviderID, "vsphere://")
	if !ok {
		uuid = ""
	}
	p.vsphere.nodes = append(p.vsphere.nodes, NodeVM{Node: n.Name, UUID: strings.ToLower(strings.TrimSpace(uuid))})
}

// vcenterFailed is the blocker of a failed vCenter read.
func vcenterFailed(field, what string, err error) plugin.Finding {
	return plugin.Finding{Code: FindingVCenterRead, Severity: plugin.SeverityBlocker, Field: field,
		Message: fmt.Sprintf("reading %s from vCenter failed: %v", what, err),
		Remedy:  "make vCenter reachable with the vSphere CSI driver's credentials, then plan again"}
}

// vsphereDisk judges an in-tree vSphere volume by what vCenter has of it
// (with Options.VCenter): what the driver would fail on blocks, the rest
// is said in why.
func (p *Planner) vsphereDisk(field string, src *v1.VsphereVirtualDiskVolumeSource) (blockers []plugin.Finding, why []string) {
	vc := p.opts.VCenter
	path := vsphere.CanonicalVolumePath(src.VolumePath)
	block := func(code, msg, remedy string) {
		blockers = append(blockers, plugin.Finding{Code: code, Severity: plugin.SeverityBlocker, Field: field, Message: msg, Remedy: remedy})
	}
	parsed, err := volumeid.ParseVSpherePath(path)
	if err != nil {
		block(FindingVSphereDatastoreMissing, fmt.Sprintf("volume path %q names no datastore: want \"[datastore] dir/disk.vmdk\"", src.VolumePath),
			"none in place: the volume source is immutable; copy the data to a new volume")
		return blockers, nil
	}
	ds := parsed.DatastoreName()
	d, err := vc.Disk(path)
	if err != nil {
		return append(blockers, vcenterFailed(field, "disk "+path, err)), nil
	}
	switch {
	case !d.Datastore:
		block(FindingVSphereDatastoreMissing, fmt.Sprintf("datastore %q of %s is not in vCenter (in the driver's datacenters): the driver cannot register or attach the disk", ds, path),
			"restore the datastore under that name (renaming a datastore breaks its vSphere volumes), or, if the data is gone, delete the PV")
	case !d.File:
		block(FindingVSphereDiskMissing, fmt.Sprintf("disk %s does not exist: the driver's syncer cannot register it, and nothing would mount", path),
			"if the data is gone, delete the PV; if the disk was moved, copy it back to that path")
	}
	mapped, read := "", p.opts.VSphereMappings != nil
	if read {
		mapped = p.opts.VSphereMappings[path]
	}
	// The syncer looks the policy up by name when it registers the path,
	// which it does until the path is mapped.
	if name := src.StoragePolicyName; name != "" && mapped == "" {
		if found, err := vc.StoragePolicy(name, false); err != nil {
			blockers = append(blockers, vcenterFailed(field, "storage policy "+name, err))
		} else if !found {
			block(FindingVSpherePolicyMissing, fmt.Sprintf("storage policy %q is not in vCenter: the driver's syncer looks it up by name to register the disk and fails", name),
				"create the storage policy under that name in vCenter (renaming a policy breaks its vSphere volumes)")
		}
	} else if id := src.StoragePolicyID; id != "" && name == "" {
		if found, err := vc.StoragePolicy(id, true); err != nil {
			blockers = append(blockers, vcenterFailed(field, "storage policy "+id, err))
		} else if !found {
			why = append(why, fmt.Sprintf("storage policy ID %s is not in vCenter (the driver does not read it: the disk keeps its own policy)", id))
		}
	}
	if len(blockers) > 0 {
		return blockers, nil
	}
	switch {
	case d.FCD == "":
		why = append(why, "vCenter: not yet a First Class Disk; the driver's syncer registers it (as a First Class Disk and CNS volume) and maps its path when the migrated PV appears")
	case !d.CNS:
		why = append(why, fmt.Sprintf("vCenter: First Class Disk %s, not yet a CNS volume; the driver's syncer registers it when the migrated PV appears", d.FCD))
	default:
		why = append(why, fmt.Sprintf("vCenter: First Class Disk and CNS volume %s", d.FCD))
	}
	switch {
	case !read:
	case mapped == "":
		why = append(why, "the driver has no migration mapping (CnsVSphereVolumeMigration) of the path yet")
	case d.FCD != "" && mapped != d.FCD:
		block(FindingVSphereMappingConflict, fmt.Sprintf("the driver's migration mapping (CnsVSphereVolumeMigration) of %s names volume %s, but the disk is First Class Disk %s: the driver would serve another volume", path, mapped, d.FCD),
			"delete the CnsVSphereVolumeMigration object "+mapped+" (the driver's syncer maps the path again), then plan again")
	default:
		why = append(why, "mapped by the driver (CnsVSphereVolumeMigration "+mapped+")")
	}
	return blockers, why
}

// vsphereClass judges an in-tree vSphere class's datastore and storage
// policy by what vCenter has (with Options.VCenter): the driver provisions
// with them.
func (p *Planner) vsphereClass(sc *storagev1.StorageClass) {
	vc := p.opts.VCenter
	var problems, codes []string
	for k, v := range sc.Parameters {
		var found bool
		var err error
		var what, missing string
		switch strings.ToLower(k) {
		case "datastore":
			what, missing = fmt.Sprintf("datastore %q", v), FindingVSphereDatastoreMissing
			found, err = vc.Datastore(v)
		case "storagepolicyname":
			what, missing = fmt.Sprintf("storage policy %q", v), FindingVSpherePolicyMissing
			found, err = vc.StoragePolicy(v, false)
		default:
			continue
		}
		switch {
		case err != nil:
			problems, codes = append(problems, fmt.Sprintf("reading %s from vCenter failed: %v", what, err)), append(codes, FindingVCenterRead)
		case !found:
			problems, codes = append(problems, what+" is not in vCenter: the driver would fail to provision with the class"), append(codes, missing)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		slices.Sort(codes)
		p.classBlocked(sc.Name, codes[0], strings.Join(problems, "; ")+"; create it in vCenter under that name, or recreate the class with one that exists")
	}
}

// settleVCenter judges the environment vCenter reports against what the
// driver and migration need (the OpenShift vSphere CSI driver operator's
// checks, and vCenter 7.0 Update 1 for migration), for the plugins' sake
// only when the input has vSphere volumes or classes.
func (p *Planner) settleVCenter(plan *Plan) {
	vc := p.opts.VCenter
	if vc == nil || !p.plugins[vsphere.PluginName] {
		return
	}
	hazard := func(f plugin.Finding) {
		plan.Hazards = append(plan.Hazards, f)
		if f.Severity == plugin.SeverityBlocker {
			plan.Blocked = true
		}
	}
	uuids := map[string]bool{}
	for _, n := range p.vsphere.nodes {
		if n.UUID != "" {
			uuids[n.UUID] = true
		}
	}
	env, err := vc.Environment(slices.Sorted(maps.Keys(uuids)))
	if err != nil {
		hazard(vcenterFailed("vCenter", "the vCenter environment", err))
		return
	}
	report := &VCenterReport{VSphereEnvironment: env}
	check := envcheck.Environment{VCenterVersion: env.APIVersion, Hosts: env.Hosts, Install: true}
	if check.VCenterVersion == "" {
		check.VCenterVersion = env.Version
	}
	if v, err := envcheck.ParseVersion(env.Version); err == nil && !v.AtLeast(MinMigrationVersion) {
		hazard(plugin.Finding{Code: FindingVCenterTooOld, Severity: plugin.SeverityBlocker, Object: "vCenter",
			Message: fmt.Sprintf("vCenter %s is older than %s (7.0 Update 1), which vSphere CSI migration needs", env.Version, MinMigrationVersion),
			Remedy:  "upgrade vCenter to 7.0 Update 1 or later before migrating"})
	}
	for _, n := range p.vsphere.nodes {
		if n.UUID == "" {
			hazard(plugin.Finding{Code: FindingVSphereNodeVM, Severity: plugin.SeverityWarning, Object: "node/" + n.Node,
				Message: "node " + n.Node + " has no vsphere:// providerID: its virtual machine is not checked, and the driver cannot attach volumes to it",
				Remedy:  "run the vSphere cloud provider (it sets the providerID) on the node, or keep vSphere volumes off it"})
			report.Nodes = append(report.Nodes, n)
			continue
		}
		vm, ok := env.VMs[n.UUID]
		if !ok {
			hazard(plugin.Finding{Code: FindingVSphereNodeVM, Severity: plugin.SeverityBlocker, Object: "node/" + n.Node,
				Message: fmt.Sprintf("node %s's virtual machine (BIOS UUID %s) is not in vCenter: the driver cannot attach volumes to it", n.Node, n.UUID),
				Remedy:  "check the node's providerID and the driver's vCenter and datacenters"})
			report.Nodes = append(report.Nodes, n)
			continue
		}
		n.VM, n.HardwareVersion = vm.Name, vm.HardwareVersion
		report.Nodes = append(report.Nodes, n)
		check.VMs = append(check.VMs, vm)
	}
	for _, f := range envcheck.Check(check) {
		f.Remedy = envRemedy[f.Code]
		hazard(f)
	}
	if p.vsphere.sawCSINodes && !p.vsphere.driverRuns {
		hazard(plugin.Finding{Code: FindingVSphereDriverMissing, Severity: plugin.SeverityBlocker, Field: "CSINode",
			Message: "no node runs the vSphere CSI driver (" + vsphere.DriverName + "): nothing would serve the migrated volumes",
			Remedy:  "install the vSphere CSI driver (controller and node DaemonSet) with this vCenter's configuration before migrating"})
	}
	plan.VCenter = report
}

// envRemedy are the remedies of the environment checks' findings.
var envRemedy = map[string]string{
	envcheck.StatusHardwareVersion:   "power the VM off and upgrade its hardware version (compatibility) to vmx-15 or later",
	envcheck.StatusVCenterVersion:    "upgrade vCenter",
	envcheck.StatusESXiVersion:       "upgrade the ESXi host",
	envcheck.StatusUnparsableVersion: "check the version vCenter reports",
	envcheck.StatusVCenterAPIError:   "make vCenter reachable with the vSphere CSI driver's credentials, then plan again",
}
