package nodetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// CSICall is one Node service call the kubelet made to a NodePlugin.
type CSICall struct {
	Method, VolumeID, Staging, Target string
}

// String is the call in words.
func (c CSICall) String() string {
	return fmt.Sprintf("%s(%s, staging %s, target %s)", c.Method, c.VolumeID, c.Staging, c.Target)
}

// NodePlugin is a CSI driver's Identity and Node services that record
// every Node call and do nothing else, registered with a (hollow) kubelet
// through its plugin registration socket (no node-driver-registrar): the
// driver's node plugin as the kubelet sees it, where the real one cannot
// mount here (no kernel RBD client). Its Node service has
// STAGE_UNSTAGE_VOLUME, as the vSphere and Ceph drivers have.
type NodePlugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer
	registerapi.UnimplementedRegistrationServer
	name, node, endpoint string

	mu         sync.Mutex
	calls      []CSICall
	registered chan struct{}
	once       sync.Once
}

// StartNodePlugin serves a driver named name for node on a socket of its
// own and registers it in the kubelet's plugins_registry under root (what
// StartHollowNode returns); the test's cleanup stops it.
func StartNodePlugin(t testing.TB, root, name, node string) *NodePlugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "csim-driver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &NodePlugin{name: name, node: node, endpoint: filepath.Join(dir, "csi.sock"), registered: make(chan struct{})}
	serve := func(path string, register func(*grpc.Server)) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		register(srv)
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(srv.Stop)
	}
	serve(d.endpoint, func(s *grpc.Server) {
		csi.RegisterIdentityServer(s, d)
		csi.RegisterNodeServer(s, d)
	})
	serve(filepath.Join(root, "plugins_registry", name+"-reg.sock"), func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, d) })
	select {
	case <-d.registered:
	case <-time.After(60 * time.Second):
		t.Fatalf("the kubelet did not register driver %s within 60 s", name)
	}
	return d
}

// GetInfo implements the kubelet's plugin registration.
func (d *NodePlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: d.name, Endpoint: d.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus implements the kubelet's plugin registration.
func (d *NodePlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		d.once.Do(func() { close(d.registered) })
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// GetPluginInfo implements the CSI Identity service.
func (d *NodePlugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "1.0.0"}, nil
}

// GetPluginCapabilities implements the CSI Identity service.
func (d *NodePlugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe implements the CSI Identity service.
func (d *NodePlugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// NodeGetInfo implements the CSI Node service.
func (d *NodePlugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.node}, nil
}

// NodeGetCapabilities implements the CSI Node service.
func (d *NodePlugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}}, nil
}

func (d *NodePlugin) record(c CSICall) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, c)
}

// NodeStageVolume implements the CSI Node service.
func (d *NodePlugin) NodeStageVolume(_ context.Context, r *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	d.record(CSICall{"NodeStageVolume", r.VolumeId, r.StagingTargetPath, ""})
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume implements the CSI Node service.
func (d *NodePlugin) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	d.record(CSICall{"NodeUnstageVolume", r.VolumeId, r.StagingTargetPath, ""})
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume implements the CSI Node service.
func (d *NodePlugin) NodePublishVolume(_ context.Context, r *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	d.record(CSICall{"NodePublishVolume", r.VolumeId, r.StagingTargetPath, r.TargetPath})
	if err := os.MkdirAll(r.TargetPath, 0o750); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume implements the CSI Node service.
func (d *NodePlugin) NodeUnpublishVolume(_ context.Context, r *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	d.record(CSICall{"NodeUnpublishVolume", r.VolumeId, "", r.TargetPath})
	if err := os.RemoveAll(r.TargetPath); err != nil {
		return nil, err
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// Since returns the calls from index i on.
func (d *NodePlugin) Since(i int) []CSICall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]CSICall(nil), d.calls[min(i, len(d.calls)):]...)
}

// Count is the number of calls so far.
func (d *NodePlugin) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.calls)
}

// WaitCalls waits until the calls from index i on include every method of
// want, and returns those calls.
func (d *NodePlugin) WaitCalls(t testing.TB, i int, timeout time.Duration, want ...string) []CSICall {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := d.Since(i)
		missing := 0
		for _, m := range want {
			found := false
			for _, c := range got {
				found = found || c.Method == m
			}
			if !found {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver did not receive %s within %s; calls: %v", strings.Join(want, ", "), timeout, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
