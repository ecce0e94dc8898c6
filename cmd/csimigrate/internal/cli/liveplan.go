package cli

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/translate"
)

// LivePlan is the plan of the live cluster, as plan -live makes it (its
// release, its Secrets), with tr and the options the run shares with the
// plan (opts: the chosen drivers, -source-changed, -online, -n), and the
// cluster entries the Ceph CSI drivers read (the RBD driver's first).
//
// withSecrets reads the Secrets too; where listing them is forbidden, the
// plan is made without them (the writer reads each Secret it needs).
func LivePlan(ctx context.Context, client kubernetes.Interface, tr *translate.Translator, opts plan.Options, withSecrets bool) (*plan.Plan, ceph.ClusterConfig, error) {
	if withSecrets {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			return nil, ceph.ClusterConfig{}, fmt.Errorf("reading the API server's version: %w", err)
		}
		if m, err := featuregate.ParseMinor(v.GitVersion); err == nil {
			opts.KubernetesMinor, opts.ServerVersion = m, v.GitVersion
		}
	}
	pl := plan.New(tr, Klog0(), opts)
	err := input.ReadLive(ctx, client, pl, withSecrets, false, func(int) {}, io.Discard)
	if withSecrets && apierrors.IsForbidden(err) {
		pl = plan.New(tr, Klog0(), opts)
		err = input.ReadLive(ctx, client, pl, false, false, func(int) {}, io.Discard)
	}
	if err != nil {
		return nil, ceph.ClusterConfig{}, err
	}
	result := pl.Finish()
	var entries []ceph.ClusterEntry
	for _, cp := range result.CephCSIConfig {
		entries = append(entries, cp.Entries...)
	}
	return result, ceph.NewClusterConfig(entries...), nil
}
