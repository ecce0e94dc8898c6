package controller

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/rewrite"
)

// remedies word the engine's remedies in the controller's terms (its flags
// and what its operator can do); other actions keep the engine's words.
var remedies = map[plugin.Action]func(object, engine string) string{
	plugin.ActionStopPods: func(string, string) string {
		return "stop them (scale their workloads to zero); the controller rewrites it then, or at once when it runs with -online and the plugin is already migrated on their nodes"
	},
	plugin.ActionCreateSecret: func(_, engine string) string {
		return engine + " (csimigrate plan lists it under SECRETS)"
	},
	plugin.ActionAddCephEntry: func(_, engine string) string {
		return engine + " (csimigrate plan -live prints it, as the deployment keeps it); the controller rewrites the volume once the driver serves it"
	},
}

// remedyOf is a refusal's remedy in the controller's words.
func remedyOf(r *rewrite.Refusal) string {
	if word, ok := remedies[r.Action]; ok {
		return word(r.ActsOn, r.Remedy)
	}
	return r.Remedy
}

// writerEvents makes the writer's notices Events on the PV (and its claim)
// or the StorageClass, once each per process: a reclaim policy kept at
// Retain, access modes narrowed, what an adoption did. Each write and each
// refusal is reported by outcome instead.
type writerEvents struct {
	c    *Controller
	mu   sync.Mutex
	seen map[string]bool
}

func (e *writerEvents) Writing(rewrite.ObjectRef, string) {}

func (e *writerEvents) Refused(rewrite.ObjectRef, *rewrite.Refusal) {}

func (e *writerEvents) Noted(obj rewrite.ObjectRef, what string) {
	e.notice(obj, v1.EventTypeNormal, ReasonNoted, what)
}

func (e *writerEvents) KeptRetain(pv rewrite.ObjectRef, why string) {
	e.notice(pv, v1.EventTypeWarning, ReasonKeptRetain, "kept at "+why)
}

func (e *writerEvents) notice(obj rewrite.ObjectRef, eventType, reason, msg string) {
	key := obj.Resource() + "\x00" + reason + "\x00" + msg
	e.mu.Lock()
	seen := e.seen[key]
	e.seen[key] = true
	e.mu.Unlock()
	if seen {
		return
	}
	c := e.c
	switch obj.Kind {
	case rewrite.KindPV:
		pv, err := c.pvs.Get(obj.Name)
		if err != nil {
			// Between the old object's deletion and the new one's arrival
			// in the lister.
			if pv, err = c.client.CoreV1().PersistentVolumes().Get(context.Background(), obj.Name, metav1.GetOptions{}); err != nil {
				c.logger.Info("No Event for the writer's notice", "object", obj.Resource(), "reason", reason, "err", err)
				return
			}
		}
		c.event(pv, eventType, reason, msg)
	case rewrite.KindStorageClass:
		if sc, err := c.classes.Get(obj.Name); err == nil {
			c.event(sc, eventType, reason, msg)
		}
	}
}

// event records an Event on the object and, for a bound PV, on its claim.
func (c *Controller) event(obj any, eventType, reason, msg string) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		if o == nil {
			return
		}
		c.rec.Event(o, eventType, reason, msg)
		if ref := o.Spec.ClaimRef; ref != nil && ref.Name != "" {
			claim := &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
			c.rec.Event(claim, eventType, reason, rewrite.PVRef(o.Name).Resource()+": "+msg)
		}
	case *storagev1.StorageClass:
		if o == nil {
			return
		}
		c.rec.Event(o, eventType, reason, msg)
	}
}
