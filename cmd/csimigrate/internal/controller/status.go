package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csimigrate/csimigrate/plugin"
)

// StatusResource is the CSIMigration resource (the CustomResourceDefinition
// in the manifests); the controller keeps the status of the one object
// named StatusName.
var StatusResource = schema.GroupVersionResource{Group: "csimigrate.io", Version: "v1alpha1", Resource: "csimigrations"}

// StatusName is the CSIMigration object the controller writes its status to.
const StatusName = "csimigrate"

// MaxBlockedListed is how many blocked objects the status names: the
// object stays small on a cluster of thousands (the count is whole).
const MaxBlockedListed = 50

// Status is what the status object says: what remains in scope, what is
// left as it is and why.
type Status struct {
	InTreePVs     int            `json:"inTreePersistentVolumes"`
	InTreeClasses int            `json:"inTreeStorageClasses"`
	Blocked       int            `json:"blocked"`
	Waiting       int            `json:"waitingForDriver"`
	Reasons       map[string]int `json:"reasons,omitempty"`
	// BlockedObjects names the objects left as they are with their code
	// ("pv/NAME: CODE"), sorted, at most MaxBlockedListed of them
	// (Blocked counts them all).
	BlockedObjects []string `json:"blockedObjects,omitempty"`
	// Conditions are Complete, Progressing and Blocked.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// count computes the status and the gauges from the informers' caches.
func (c *Controller) count() (Status, error) {
	s := Status{Reasons: map[string]int{}}
	c.m.inTreePVs.Reset()
	c.m.inTreeClasses.Reset()
	c.m.blocked.Reset()
	c.mu.Lock()
	blocked := maps.Clone(c.blocked)
	c.mu.Unlock()
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		return s, err
	}
	for _, pv := range pvs {
		if !c.pvInScope(pv) {
			continue
		}
		s.InTreePVs++
		c.m.inTreePVs.WithLabelValues(plugin.InTreeNameOfPV(pv)).Inc()
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return s, err
	}
	for _, sc := range classes {
		if c.classInScope(sc) {
			s.InTreeClasses++
			c.m.inTreeClasses.WithLabelValues(sc.Provisioner).Inc()
		}
	}
	for obj, why := range blocked {
		if why == ReasonWouldMigrate {
			continue
		}
		c.m.blocked.WithLabelValues(metricKind(obj), why).Inc()
		if why == ReasonWaitingForDriver {
			s.Waiting++
			continue
		}
		s.Blocked++
		s.Reasons[why]++
		s.BlockedObjects = append(s.BlockedObjects, obj.Resource()+": "+why)
	}
	slices.Sort(s.BlockedObjects)
	if len(s.BlockedObjects) > MaxBlockedListed {
		s.BlockedObjects = s.BlockedObjects[:MaxBlockedListed]
	}
	c.m.queueDepth.WithLabelValues("pvs").Set(float64(c.pvQueue.Len()))
	c.m.queueDepth.WithLabelValues("storageclasses").Set(float64(c.scQueue.Len()))
	return s, nil
}

// conditions are the status object's conditions for s.
func (c *Controller) conditions(s Status) []metav1.Condition {
	remaining := s.InTreePVs + s.InTreeClasses
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg}
	}
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(s.Reasons)) {
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, s.Reasons[r]))
	}
	blockedMsg := "nothing is blocked"
	if s.Blocked > 0 {
		blockedMsg = fmt.Sprintf("%d objects left as they are (%s); their Events say why and what to do", s.Blocked, strings.Join(reasons, ", "))
	}
	progressing := remaining > s.Blocked+s.Waiting
	progressMsg := fmt.Sprintf("%d in-tree PVs and %d in-tree StorageClasses remain in scope", s.InTreePVs, s.InTreeClasses)
	if c.o.Writer.DryRun {
		progressing = false
		progressMsg += " (dry run: nothing is written)"
	}
	if s.Waiting > 0 {
		progressMsg += fmt.Sprintf("; %d wait for their CSI driver to be registered", s.Waiting)
	}
	complete := remaining == 0
	return []metav1.Condition{
		cond("Complete", complete, map[bool]string{true: "NoInTreeObjects", false: "InTreeObjectsRemain"}[complete], progressMsg),
		cond("Progressing", progressing, map[bool]string{true: "Migrating", false: "Idle"}[progressing], progressMsg),
		cond("Blocked", s.Blocked > 0, map[bool]string{true: "Refused", false: "NothingBlocked"}[s.Blocked > 0], blockedMsg),
	}
}

// updateStatus brings the gauges and the status object up to date.
func (c *Controller) updateStatus(ctx context.Context) {
	s, err := c.count()
	if err != nil {
		c.logger.Error(err, "Counting for the status")
		return
	}
	if err := c.writeStatus(ctx, s); err != nil {
		c.logger.Error(err, "Writing the status", "resource", StatusResource.Resource, "name", StatusName)
	}
}

// writeStatus writes s to the status object, creating it when missing;
// its conditions are set with meta.SetStatusCondition, so that a condition
// keeps its lastTransitionTime while its status stays. Nothing is written
// when the status is unchanged.
func (c *Controller) writeStatus(ctx context.Context, s Status) error {
	res := c.dyn.Resource(StatusResource)
	cur, err := res.Get(ctx, StatusName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "csimigrate.io/v1alpha1", "kind": "CSIMigration",
			"metadata": map[string]any{"name": StatusName}, "spec": map[string]any{}}}
		cur, err = res.Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	var old Status
	if m, ok := cur.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &old); err != nil {
			return fmt.Errorf("reading the status of %s: %w", StatusName, err)
		}
	}
	next := s
	next.Conditions = slices.Clone(old.Conditions)
	for _, cd := range c.conditions(s) {
		cd.ObservedGeneration = cur.GetGeneration()
		meta.SetStatusCondition(&next.Conditions, cd)
	}
	if equality.Semantic.DeepEqual(old, next) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return err
	}
	upd := cur.DeepCopy()
	upd.Object["status"] = m
	_, err = res.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	return err
}
