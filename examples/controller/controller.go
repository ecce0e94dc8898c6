// Package controller is an example of the engine for a program that
// migrates a cluster's in-tree PVs itself: it reads the cluster into a plan
// (package plan), takes the PVs the plan finds migratable, and drives each
// with the writer (package apply), one write per step, while it holds the
// writer Lease that keeps every other csimigrate writer (rewrite -apply, the
// csimigrate controller, another program like this one) out.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// Result is what MigrateAll did: the PVs now served by their CSI drivers,
// and those left as they were, with why (the plan's reason, or the writer's
// refusal: a *rewrite.Refusal, whose Remedy says what an admin can do).
type Result struct {
	Migrated []string
	Left     map[string]error
}

// MigrateAll migrates every in-tree PV of the cluster that the plan finds
// migratable, holding the writer Lease in stateNS, waiting up to wait for
// it. A run that is interrupted resumes where it stopped when it is run
// again: the writer keeps each PV's progress in stateNS.
func MigrateAll(ctx context.Context, client kubernetes.Interface, logger klog.Logger, stateNS string, wait time.Duration) (Result, error) {
	tr, err := translate.New()
	if err != nil {
		return Result{}, err
	}
	p, err := readPlan(ctx, client, tr, logger)
	if err != nil {
		return Result{}, err
	}
	// One writer at a time: the Writer writes only while the Lease holds,
	// and ctx ends if it is lost.
	ctx, lease, err := apply.HoldLease(ctx, client, stateNS, wait)
	if err != nil {
		return Result{}, err
	}
	defer lease.Release(context.Background())
	w, err := apply.New(client, tr, logger, apply.NoEvents{}, apply.Options{StateNamespace: stateNS, Lease: lease})
	if err != nil {
		return Result{}, err
	}
	res := Result{Left: map[string]error{}}
	for _, v := range p.Volumes {
		if !v.Migratable {
			res.Left[v.Name] = errors.New(v.Reason)
			continue
		}
		switch err := migrate(ctx, w, v.Name); {
		case errors.As(err, new(*rewrite.Refusal)):
			res.Left[v.Name] = err
		case err != nil:
			return res, fmt.Errorf("pv/%s: %w", v.Name, err)
		default:
			res.Migrated = append(res.Migrated, v.Name)
		}
	}
	return res, nil
}

// migrate takes the writer's steps of one PV until it is done, coming back
// when each step says to.
func migrate(ctx context.Context, w *apply.Writer, name string) error {
	run := w.PV(apply.Target{Name: name})
	for {
		p, err := run.Step(ctx)
		if err != nil || p.Done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.RequeueAfter):
		}
	}
}

// readPlan is the plan of the cluster's PVs, with what it judges them by:
// their claims and classes, the pods using them, the Secrets their CSI form
// needs, the CSI drivers the cluster has and the nodes they run on, and
// where the Ceph CSI drivers read their cluster entries.
func readPlan(ctx context.Context, client kubernetes.Interface, tr *translate.Translator, logger klog.Logger) (*plan.Plan, error) {
	pl := plan.New(tr, logger, plan.Options{})
	core, storage := client.CoreV1(), client.StorageV1()
	o := metav1.ListOptions{}
	// What a PV's plan depends on first, the PVs last.
	for _, list := range []func() (runtime.Object, error){
		func() (runtime.Object, error) { return storage.StorageClasses().List(ctx, o) },
		func() (runtime.Object, error) { return storage.CSIDrivers().List(ctx, o) },
		func() (runtime.Object, error) { return storage.CSINodes().List(ctx, o) },
		func() (runtime.Object, error) { return core.ConfigMaps("").List(ctx, o) },
		func() (runtime.Object, error) { return core.PersistentVolumeClaims("").List(ctx, o) },
		func() (runtime.Object, error) { return core.Pods("").List(ctx, o) },
		func() (runtime.Object, error) { return core.Secrets("").List(ctx, o) },
		func() (runtime.Object, error) { return core.PersistentVolumes().List(ctx, o) },
	} {
		l, err := list()
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			pl.Add(item)
		}
	}
	return pl.Finish(), nil
}
