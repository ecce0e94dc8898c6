package vspheretest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/types"
)

// The vSphere CSI driver learns that a vCenter task ended through a
// ListView of its tasks: a property collector waits on the view
// (WaitForUpdatesEx) while each CSI call adds its task to the view
// (ModifyListView) and removes it when done. govmomi v0.56.0's simulator
// takes the view's and the filter's locks in opposite orders on those two
// paths, so now and then both stop for good: every later call of the driver
// that starts a task never returns (seen in CI as ControllerPublishVolume
// timing out four times in a row). cmd/vcsim is built with the fix
// (scripts/build-vcsim). Here the driver's pattern runs as fast as it can,
// with the driver's own filter, from four goroutines at once: every call
// must return (a deadlocked one is ended by its timeout and reported).
func TestVCenterListViewUnderWaitForUpdates(t *testing.T) {
	vc := StartVCenter(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := vc.Client.Client
	lv, err := view.NewManager(c).CreateListView(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The driver's filter (listview.go's getListViewWaitFilter): the
	// tasks' info, by the view's "view" property.
	filter := new(property.WaitFilter)
	filter.Add(lv.Reference(), "Task", []string{"info"}, &types.TraversalSpec{Type: "ListView", Path: "view", Skip: types.NewBool(false)})
	pc, err := property.DefaultCollector(c).Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() {
		waitErr <- property.WaitForUpdatesEx(ctx, pc, filter, func([]types.ObjectUpdate) bool { return false })
	}()
	// Objects to add and remove: the simulator's VMs and hosts (the view
	// takes any reference; the filter's traversal is what matters).
	var refs []types.ManagedObjectReference
	for _, kind := range []string{"VirtualMachine", "HostSystem"} {
		m := view.NewManager(c)
		cv, err := m.CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{kind}, true)
		if err != nil {
			t.Fatal(err)
		}
		found, err := cv.Find(ctx, []string{kind}, nil)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, found...)
	}
	if len(refs) == 0 {
		t.Fatal("the simulator has no VMs or hosts")
	}
	const workers, rounds = 4, 150
	var wg sync.WaitGroup
	hung := make(chan string, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				ref := refs[(w*rounds+i)%len(refs)]
				for _, op := range []string{"add", "remove"} {
					cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
					var err error
					if op == "add" {
						_, err = lv.Add(cctx, []types.ManagedObjectReference{ref})
					} else {
						_, err = lv.Remove(cctx, []types.ManagedObjectReference{ref})
					}
					ccancel()
					if err != nil {
						hung <- op + " " + ref.String() + ": " + err.Error()
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(hung)
	for h := range hung {
		t.Errorf("ModifyListView (%s) while a property collector waits on the view", h)
	}
	select {
	case err := <-waitErr:
		t.Errorf("WaitForUpdatesEx ended: %v", err)
	default:
	}
}
