package plan

import (
	"fmt"
	"slices"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// CephServed is what each Ceph CSI driver serves as a plan read it: the
// cluster entries of the config the driver reads, or why the plan could
// not tell where it reads them. The writer's check of a Ceph volume's
// entry (apply.Options.CephServed) asks it, so that the writer refuses
// exactly the volumes the plan blocks, with the same code.
type CephServed struct {
	byDriver map[string]servedBy
}

type servedBy struct {
	config ceph.ClusterConfig
	// unknown is the finding where the driver's config was not located.
	unknown *plugin.Finding
}

// CephServed is what the plan's Ceph CSI drivers serve (its CephCSIConfig).
func (p *Plan) CephServed() CephServed {
	s := CephServed{byDriver: map[string]servedBy{}}
	if p == nil {
		return s
	}
	for _, cp := range p.CephCSIConfig {
		// Only the entries Ceph CSI can use (cephConfigInput.served).
		var entries []ceph.ClusterEntry
		for _, e := range cp.Entries {
			if len(e.Monitors) > 0 && !slices.Contains(e.Monitors, "") {
				entries = append(entries, e)
			}
		}
		config := ceph.NewClusterConfig(entries...)
		for _, d := range cp.Drivers {
			by := servedBy{config: config}
			if cp.Reason != "" {
				by = servedBy{unknown: configNotFound(d, cp.Reason, "")}
			}
			s.byDriver[d] = by
		}
	}
	return s
}

// For is the cluster config Ceph CSI driver driver reads. Where the plan
// could not tell where it reads it, or read no volume or class of that
// driver, the error is a *rewrite.Refusal that says so (the code of the
// plan's finding: CephCSIConfigNotFound, or CephEntryUnchecked).
func (s CephServed) For(driver string) (ceph.ClusterConfig, error) {
	by, ok := s.byDriver[driver]
	switch {
	case !ok:
		return ceph.ClusterConfig{}, &rewrite.Refusal{Code: rewrite.CodeCephEntryUnchecked,
			Reason: "the plan of the cluster read no in-tree volume or class of " + driver + ", so where the driver reads its cluster entries was not looked for",
			Remedy: "run again: the cluster is read anew"}
	case by.unknown != nil:
		return ceph.ClusterConfig{}, rewrite.FindingRefusal(*by.unknown)
	}
	return by.config, nil
}

// configNotFound is the finding of a volume or class whose driver's config
// the input does not locate (reason says why); id is the clusterID it
// needs ("" when not told).
func configNotFound(driver, reason, id string) *plugin.Finding {
	what := "the migrated volume's cluster entry"
	if id != "" {
		what = "clusterID " + id
	}
	return &plugin.Finding{Code: FindingCephCSIConfigNotFound, Severity: plugin.SeverityBlocker, Field: "Ceph CSI config " + driver,
		Message: fmt.Sprintf("where %s reads its cluster entries is not known (%s): whether it serves %s is not checked", driver, reason, what),
		Remedy:  "give the driver's DaemonSet and its config map too (kubectl get ds,cm -n <the driver's namespace> -o yaml; with the ceph-csi-operator, its drivers, clientprofiles and cephconnections)",
		Action:  plugin.ActionGiveInput, ActsOn: "CephCSIConfig"}
}
