package vcenter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/cns"
	cnstypes "github.com/vmware/govmomi/cns/types"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/pbm"
	pbmtypes "github.com/vmware/govmomi/pbm/types"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vslm"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
	"github.com/csimigrate/csimigrate/volumeid"
)

// ErrLogin is wrapped by Dial's error when vCenter refuses the login.
var ErrLogin = errors.New("vCenter refused the login")

// CallTimeout bounds each read of vCenter.
const CallTimeout = time.Minute

// Client reads vCenter for the plan (it implements plan.VCenter) and
// registers disks for the writer's adoption of vSphere volumes (it
// implements apply.VSphere). Its calls are serialised.
type Client struct {
	mu        sync.Mutex
	server    Server
	clusterID string
	vim       *vim25.Client
	ctx       context.Context
	logger    klog.Logger
	dcs       []*object.Datacenter
	// datastores by name (nil: none of that name), and each one's First
	// Class Disks by path within it, read once.
	datastores map[string]*object.Datastore
	fcds       map[string]map[string]string
	// policies are the storage policies' IDs by name, read once.
	policies    map[string]string
	policyIDs   map[string]bool
	cns         *cns.Client
	cnsOnce     sync.Once
	cnsErr      error
	closeLogout func()
}

var _ plan.VCenter = (*Client)(nil)

// UserAgent is the User-Agent of csimigrate's requests to vCenter: its
// sessions and logs name it.
const UserAgent = "csimigrate"

// Dial logs in to the configuration's vCenter (Config.Server) as its user
// and finds its datacenters (all of vCenter's when the configuration names
// none). Its errors never hold the password. ctx bounds the client's later
// calls without a context of their own as well; Close logs out.
func Dial(ctx context.Context, cfg *Config, logger klog.Logger) (*Client, error) {
	s, err := cfg.Server()
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(s.Host, s.Port), Path: "/sdk"}
	sc := soap.NewClient(u, s.Insecure)
	// vCenter's sessions and logs name csimigrate (and its CNS, PBM and
	// FCD clients, which copy it).
	sc.UserAgent = UserAgent
	if s.CAFile != "" {
		if err := sc.SetRootCAs(s.CAFile); err != nil {
			return nil, fmt.Errorf("%s: ca-file %s: %w", s, s.CAFile, err)
		}
	}
	if s.Thumbprint != "" {
		sc.SetThumbprint(u.Host, s.Thumbprint)
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	vim, err := vim25.NewClient(cctx, sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, redact(err, s.Password))
	}
	// A controller keeps its session for days: it is kept alive while
	// idle, until Close logs out.
	vim.RoundTripper = keepalive.NewHandlerSOAP(vim.RoundTripper, 5*time.Minute, nil)
	sm := session.NewManager(vim)
	if err := sm.Login(cctx, url.UserPassword(s.User, s.Password)); err != nil {
		if soap.IsSoapFault(err) {
			return nil, fmt.Errorf("%s: %w: %w", s, ErrLogin, redact(err, s.Password))
		}
		return nil, fmt.Errorf("%s: %w", s, redact(err, s.Password))
	}
	c := &Client{server: s, clusterID: cfg.ClusterID, vim: vim, ctx: ctx, logger: logger, datastores: map[string]*object.Datastore{}, fcds: map[string]map[string]string{},
		closeLogout: func() {
			lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = sm.Logout(lctx)
		}}
	f := find.NewFinder(vim)
	if len(s.Datacenters) == 0 {
		if c.dcs, err = f.DatacenterList(cctx, "*"); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: listing datacenters: %w", s, err)
		}
	}
	for _, name := range s.Datacenters {
		dc, err := f.Datacenter(cctx, name)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: datacenter %q of the configuration: %w", s, name, err)
		}
		c.dcs = append(c.dcs, dc)
	}
	logger.V(2).Info("Logged in to vCenter", "host", s.Host, "user", s.User, "version", vim.ServiceContent.About.Version, "datacenters", len(c.dcs))
	return c, nil
}

// Close logs out.
func (c *Client) Close() { c.closeLogout() }

// redact replaces the password in an error's text.
func redact(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "<password>"))
}

func (c *Client) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, CallTimeout)
}

// Environment reads vCenter's version, its ESXi hosts' versions and the
// hardware versions of the virtual machines of uuids (BIOS UUIDs).
func (c *Client) Environment(uuids []string) (plan.VSphereEnvironment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := c.call()
	defer cancel()
	about := c.vim.ServiceContent.About
	env := plan.VSphereEnvironment{Version: about.Version, APIVersion: about.ApiVersion, Build: about.Build, VMs: map[string]envcheck.VM{}}
	m := view.NewManager(c.vim)
	v, err := m.CreateContainerView(ctx, c.vim.ServiceContent.RootFolder, []string{"HostSystem", "VirtualMachine"}, true)
	if err != nil {
		return env, err
	}
	defer func() { _ = v.Destroy(ctx) }()
	var hosts []mo.HostSystem
	if err := v.Retrieve(ctx, []string{"HostSystem"}, []string{"name", "config.product"}, &hosts); err != nil {
		return env, fmt.Errorf("reading the ESXi hosts: %w", err)
	}
	for _, h := range hosts {
		version := ""
		if h.Config != nil {
			version = h.Config.Product.Version
		}
		env.Hosts = append(env.Hosts, envcheck.Host{Name: h.Name, Version: version})
	}
	if len(uuids) == 0 {
		return env, nil
	}
	want := map[string]bool{}
	for _, u := range uuids {
		want[strings.ToLower(u)] = true
	}
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "config.uuid", "config.version"}, &vms); err != nil {
		return env, fmt.Errorf("reading the virtual machines: %w", err)
	}
	for _, vm := range vms {
		if vm.Config == nil || !want[strings.ToLower(vm.Config.Uuid)] {
			continue
		}
		env.VMs[strings.ToLower(vm.Config.Uuid)] = envcheck.VM{Name: vm.Name, HardwareVersion: vm.Config.Version}
	}
	return env, nil
}

// datastore finds a datastore by name in the configured datacenters (nil
// when none has it).
func (c *Client) datastore(ctx context.Context, name string) (*object.Datastore, error) {
	if ds, ok := c.datastores[name]; ok {
		return ds, nil
	}
	for _, dc := range c.dcs {
		f := find.NewFinder(c.vim)
		f.SetDatacenter(dc)
		ds, err := f.Datastore(ctx, name)
		if _, notFound := err.(*find.NotFoundError); notFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("datastore %q: %w", name, err)
		}
		c.datastores[name] = ds
		return ds, nil
	}
	c.datastores[name] = nil
	return nil, nil
}

// Datastore reports whether a datastore of the name exists in the
// configured datacenters.
func (c *Client) Datastore(name string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := c.call()
	defer cancel()
	ds, err := c.datastore(ctx, name)
	return ds != nil, err
}

// Disk reads a volume path's datastore, its VMDK, and whether it is a
// First Class Disk and a CNS volume.
func (c *Client) Disk(path string) (plan.VSphereDisk, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := c.call()
	defer cancel()
	d, _, err := c.disk(ctx, path)
	return d, err
}

// FirstClassDisk reads the disk of a datastore path: its First Class Disk
// ID ("" when it is not one) and whether CNS has a volume of it; an error
// when its datastore or file does not exist.
func (c *Client) FirstClassDisk(ctx context.Context, path string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, _, err := c.disk(ctx, path)
	switch {
	case err != nil:
		return "", false, err
	case !d.Datastore:
		return "", false, fmt.Errorf("the datastore of %s is not in vCenter", path)
	case !d.File:
		return "", false, fmt.Errorf("disk %s does not exist", path)
	}
	return d.FCD, d.CNS, nil
}

// disk reads a volume path's datastore, VMDK and registration, and returns
// the datastore (nil when it does not exist).
func (c *Client) disk(ctx context.Context, path string) (plan.VSphereDisk, *object.Datastore, error) {
	var d plan.VSphereDisk
	parsed, err := volumeid.ParseVSpherePath(path)
	if err != nil {
		return d, nil, err
	}
	name, rel := parsed.DatastoreName(), parsed.Path
	ds, err := c.datastore(ctx, name)
	if err != nil || ds == nil {
		return d, nil, err
	}
	d.Datastore = true
	if _, err := ds.Stat(ctx, rel); err != nil {
		if _, missing := err.(object.DatastoreNoSuchFileError); missing {
			return d, ds, nil
		}
		if _, missing := err.(object.DatastoreNoSuchDirectoryError); missing {
			return d, ds, nil
		}
		return d, ds, fmt.Errorf("%s: %w", path, err)
	}
	d.File = true
	fcds, err := c.firstClassDisks(ctx, ds)
	if err != nil {
		return d, ds, err
	}
	d.FCD = fcds[rel]
	if d.FCD == "" {
		return d, ds, nil
	}
	d.CNS, err = c.cnsVolume(ctx, d.FCD)
	return d, ds, err
}

// firstClassDisks are a datastore's First Class Disks by their path within
// it, read once.
func (c *Client) firstClassDisks(ctx context.Context, ds *object.Datastore) (map[string]string, error) {
	key := ds.Reference().Value
	if m, ok := c.fcds[key]; ok {
		return m, nil
	}
	om := vslm.NewObjectManager(c.vim)
	ids, err := om.List(ctx, ds)
	if err != nil {
		return nil, fmt.Errorf("listing the First Class Disks of datastore %s: %w", ds.Name(), err)
	}
	m := map[string]string{}
	for _, id := range ids {
		obj, err := om.Retrieve(ctx, ds, id.Id)
		if err != nil {
			return nil, fmt.Errorf("reading First Class Disk %s: %w", id.Id, err)
		}
		if b, ok := obj.Config.Backing.(*types.BaseConfigInfoDiskFileBackingInfo); ok {
			if p, err := volumeid.ParseVSpherePath(b.FilePath); err == nil {
				m[p.Path] = id.Id
			}
		}
	}
	c.fcds[key] = m
	return m, nil
}

// cnsVolume reports whether CNS has a volume of the ID.
func (c *Client) cnsVolume(ctx context.Context, id string) (bool, error) {
	c.cnsOnce.Do(func() { c.cns, c.cnsErr = cns.NewClient(ctx, c.vim) })
	if c.cnsErr != nil {
		return false, fmt.Errorf("CNS: %w", c.cnsErr)
	}
	res, err := c.cns.QueryVolume(ctx, &cnstypes.CnsQueryFilter{VolumeIds: []cnstypes.CnsVolumeId{{Id: id}}})
	if err != nil {
		return false, fmt.Errorf("CNS volume %s: %w", id, err)
	}
	return len(res.Volumes) > 0, nil
}

// StoragePolicy reports whether a storage policy exists, by name as the
// driver looks names up (storage requirement profiles), or by ID.
func (c *Client) StoragePolicy(nameOrID string, byID bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := c.call()
	defer cancel()
	if err := c.readPolicies(ctx); err != nil {
		return false, err
	}
	if byID {
		return c.policyIDs[nameOrID], nil
	}
	_, ok := c.policies[nameOrID]
	return ok, nil
}

// readPolicies reads the storage requirement profiles once.
func (c *Client) readPolicies(ctx context.Context) error {
	if c.policies == nil {
		pc, err := pbm.NewClient(ctx, c.vim)
		if err != nil {
			return fmt.Errorf("storage policies: %w", err)
		}
		ids, err := pc.QueryProfile(ctx, pbmtypes.PbmProfileResourceType{ResourceType: string(pbmtypes.PbmProfileResourceTypeEnumSTORAGE)},
			string(pbmtypes.PbmProfileCategoryEnumREQUIREMENT))
		if err != nil {
			return fmt.Errorf("storage policies: %w", err)
		}
		profiles, err := pc.RetrieveContent(ctx, ids)
		if err != nil {
			return fmt.Errorf("storage policies: %w", err)
		}
		c.policies, c.policyIDs = map[string]string{}, map[string]bool{}
		for _, p := range profiles {
			pp := p.GetPbmProfile()
			c.policies[pp.Name] = pp.ProfileId.UniqueId
			c.policyIDs[pp.ProfileId.UniqueId] = true
		}
	}
	return nil
}

// keepAfterDeleteVMFrom is the vCenter version from which a First Class
// Disk outlives a VM it is attached to without the keepAfterDeleteVm
// control flag (the driver's syncer sets the flag below it).
var keepAfterDeleteVMFrom = envcheck.Version{Major: 8, Minor: 0, Patch: 3}

// RegisterDisk registers the disk of a datastore path as the vSphere CSI
// driver's syncer registers a migrated disk (pkg/apis/migration of v3.7.0):
// the storage policy looked up by name (policy "" none), the VMDK
// registered as a First Class Disk by its datastore URL where it is not
// one, the disk kept when a VM it is attached to is deleted (below vCenter
// 8.0 Update 3, where that needs a flag), and its CNS volume created with
// the cluster's metadata where CNS has none. It returns the ID. (From 7.0
// Update 1 the syncer registers by the disk's URL in one CNS call; this is
// the sequence it uses before, which vCenter serves in every version.)
func (c *Client) RegisterDisk(ctx context.Context, path, name, policy string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ds, err := c.disk(ctx, path)
	switch {
	case err != nil:
		return "", err
	case !d.Datastore || !d.File:
		return "", fmt.Errorf("disk %s does not exist", path)
	case d.FCD != "" && d.CNS:
		return d.FCD, nil
	}
	var profiles []types.BaseVirtualMachineProfileSpec
	if policy != "" {
		if err := c.readPolicies(ctx); err != nil {
			return "", err
		}
		id, ok := c.policies[policy]
		if !ok {
			return "", fmt.Errorf("storage policy %q is not in vCenter", policy)
		}
		profiles = append(profiles, &types.VirtualMachineDefinedProfileSpec{ProfileId: id})
	}
	id := d.FCD
	if id == "" {
		dcPath, err := c.datacenterOf(ctx, ds)
		if err != nil {
			return "", err
		}
		parsed, _ := volumeid.ParseVSpherePath(path)
		u := url.URL{Scheme: "https", Host: net.JoinHostPort(c.server.Host, c.server.Port), Path: "/folder/" + parsed.Path,
			RawQuery: "dcPath=" + url.PathEscape(dcPath) + "&dsName=" + url.PathEscape(parsed.DatastoreName())}
		obj, err := vslm.NewObjectManager(c.vim).RegisterDisk(ctx, u.String(), name)
		if err != nil {
			return "", fmt.Errorf("registering %s as a First Class Disk: %w", path, err)
		}
		id = obj.Config.Id.Id
		c.fcds[ds.Reference().Value][parsed.Path] = id
		c.logger.V(2).Info("Registered a First Class Disk", "path", path, "id", id)
		if v, err := envcheck.ParseVersion(c.vim.ServiceContent.About.Version); err == nil && !v.AtLeast(keepAfterDeleteVMFrom) {
			req := types.SetVStorageObjectControlFlags{This: *c.vim.ServiceContent.VStorageObjectManager, Id: types.ID{Id: id}, Datastore: ds.Reference(),
				ControlFlags: []string{string(types.VslmVStorageObjectControlFlagKeepAfterDeleteVm)}}
			if _, err := methods.SetVStorageObjectControlFlags(ctx, c.vim, &req); err != nil {
				return "", fmt.Errorf("keeping First Class Disk %s when a VM is deleted: %w", id, err)
			}
		}
	}
	if err := c.createCNSVolume(ctx, ds, id, name, profiles); err != nil {
		return "", err
	}
	return id, nil
}

// createCNSVolume creates the CNS volume of a First Class Disk, with the
// cluster's metadata as the driver writes it.
func (c *Client) createCNSVolume(ctx context.Context, ds *object.Datastore, id, name string, profiles []types.BaseVirtualMachineProfileSpec) error {
	c.cnsOnce.Do(func() { c.cns, c.cnsErr = cns.NewClient(ctx, c.vim) })
	if c.cnsErr != nil {
		return fmt.Errorf("CNS: %w", c.cnsErr)
	}
	cluster := cnstypes.CnsContainerCluster{ClusterType: string(cnstypes.CnsClusterTypeKubernetes), ClusterId: c.clusterID, VSphereUser: c.server.User,
		ClusterFlavor: string(cnstypes.CnsClusterFlavorVanilla)}
	task, err := c.cns.CreateVolume(ctx, []cnstypes.CnsVolumeCreateSpec{{Name: name, VolumeType: string(cnstypes.CnsVolumeTypeBlock),
		Datastores: []types.ManagedObjectReference{ds.Reference()}, Profile: profiles,
		Metadata:             cnstypes.CnsVolumeMetadata{ContainerCluster: cluster, ContainerClusterArray: []cnstypes.CnsContainerCluster{cluster}},
		BackingObjectDetails: &cnstypes.CnsBlockBackingDetails{BackingDiskId: id}}})
	if err != nil {
		return fmt.Errorf("the CNS volume of First Class Disk %s: %w", id, err)
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return fmt.Errorf("the CNS volume of First Class Disk %s: %w", id, err)
	}
	res, err := cns.GetTaskResult(ctx, info)
	if err != nil {
		return fmt.Errorf("the CNS volume of First Class Disk %s: %w", id, err)
	}
	if f := res.GetCnsVolumeOperationResult().Fault; f != nil {
		return fmt.Errorf("the CNS volume of First Class Disk %s: %s", id, f.LocalizedMessage)
	}
	return nil
}

// datacenterOf is the inventory path of the configured datacenter that has
// the datastore.
func (c *Client) datacenterOf(ctx context.Context, ds *object.Datastore) (string, error) {
	for _, dc := range c.dcs {
		f := find.NewFinder(c.vim)
		f.SetDatacenter(dc)
		found, err := f.Datastore(ctx, ds.Name())
		if err == nil && found.Reference() == ds.Reference() {
			return dc.InventoryPath, nil
		}
	}
	return "", fmt.Errorf("no configured datacenter has datastore %s", ds.Name())
}
