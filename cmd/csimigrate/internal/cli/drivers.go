package cli

import (
	"context"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/output"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/translate"
)

// DriverSet are the CSIDrivers of the input or the cluster.
type DriverSet struct {
	names []string
	// read: CSIDrivers were read (from a cluster, even none; from files,
	// at least one).
	read bool
}

// Add takes obj's name where it is a CSIDriver (DriverSet is a Sink of
// the input).
func (d *DriverSet) Add(obj any) {
	if o, ok := obj.(*storagev1.CSIDriver); ok {
		d.read = true
		d.names = append(d.names, o.Name)
	}
}

// Listed takes a list of resource as read: of "csidrivers", the set is the
// cluster's, even without any (an input reader's Sink is told what it
// listed whole).
func (d *DriverSet) Listed(resource string) {
	if resource == "csidrivers" {
		d.read = true
	}
}

// ListDrivers reads the cluster's CSIDrivers.
func ListDrivers(ctx context.Context, c kubernetes.Interface) (DriverSet, error) {
	l, err := c.StorageV1().CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return DriverSet{}, fmt.Errorf("listing csidrivers: %w", err)
	}
	d := DriverSet{read: true}
	for i := range l.Items {
		d.Add(&l.Items[i])
	}
	return d, nil
}

// BlockedDrivers are the backends whose volumes must not be rewritten on
// the cluster, by in-tree plugin name, with why.
type BlockedDrivers map[string]*plugin.Finding

// Refusal is why a PV or class of in-tree plugin inTree is not rewritten,
// "" when it may be.
func (b BlockedDrivers) Refusal(inTree string) string {
	f := b[inTree]
	if f == nil {
		return ""
	}
	return f.Message + "; " + output.CommandRemedy(f.Action, f.ActsOn, f.Remedy)
}

// DriversFor is tr translating to the drivers of set (chosen: -driver),
// and the backends whose driver is missing or not chosen. Without
// CSIDrivers the upstream names are used and stderr says so.
func DriversFor(tr *translate.Translator, set DriverSet, chosen map[string]string, stderr io.Writer) (*translate.Translator, BlockedDrivers, error) {
	choices := plan.ChooseDrivers(set.names, set.read, chosen)
	if !set.read {
		var names []string
		for _, c := range choices {
			names = append(names, c.Driver)
		}
		fmt.Fprintf(stderr, "the input has no CSIDrivers: the PVs name %v; give kubectl get csidrivers -o yaml too to use the names the cluster's drivers have\n", names)
	}
	blocked := BlockedDrivers{}
	for _, c := range choices {
		if c.Blocker != nil {
			blocked[c.InTree] = c.Blocker
		}
	}
	out, err := tr.WithDriverNames(plan.DriverNames(choices))
	if err != nil {
		return nil, nil, fmt.Errorf("-driver: %w", err)
	}
	return out, blocked, nil
}

// PVBackend is the in-tree plugin of a PV: its in-tree source's, or its
// CSI driver's.
func PVBackend(pv *v1.PersistentVolume) string {
	if n := plugin.InTreeNameOfPV(pv); n != "" || pv == nil || pv.Spec.CSI == nil {
		return n
	}
	return plugin.InTreeNameOfDriver(pv.Spec.CSI.Driver)
}

// ClassBackend is the in-tree plugin of a StorageClass's provisioner.
func ClassBackend(sc *storagev1.StorageClass) string {
	if n := plugin.InTreeNameOfProvisioner(sc.Provisioner); n != "" {
		return n
	}
	return plugin.InTreeNameOfDriver(sc.Provisioner)
}
