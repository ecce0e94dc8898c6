package rewrite

import "strings"

// The kinds of the objects csimigrate replaces, as an ObjectRef names them.
const (
	KindPV           = "PersistentVolume"
	KindStorageClass = "StorageClass"
)

// ObjectRef names an object csimigrate changes or reports on: its kind
// ("PersistentVolume", "StorageClass"), namespace ("" for a cluster-scoped
// object) and name. It is comparable: a key of maps and queues.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// PVRef names the PersistentVolume of that name.
func PVRef(name string) ObjectRef { return ObjectRef{Kind: KindPV, Name: name} }

// ClassRef names the StorageClass of that name.
func ClassRef(name string) ObjectRef { return ObjectRef{Kind: KindStorageClass, Name: name} }

// String is "Kind name" or "Kind namespace/name".
func (r ObjectRef) String() string { return r.Kind + " " + nsName(r.Namespace, r.Name) }

// Resource is the reference as kubectl's TYPE/NAME argument writes it:
// "pv/NAME", "storageclass/NAME", and for other kinds the kind in lower
// case (the namespace is kubectl's -n, not part of it).
func (r ObjectRef) Resource() string {
	switch r.Kind {
	case KindPV:
		return "pv/" + r.Name
	case "":
		return r.Name
	}
	return strings.ToLower(r.Kind) + "/" + r.Name
}

// The annotations by which a writer's saved state (a ConfigMap labelled
// app.kubernetes.io/managed-by: csimigrate in the state namespace) names
// the object whose run it holds: a PV's (AnnRunOf) or a StorageClass's
// (AnnRunOfClass). A state outlives a run that was interrupted; the plan
// reads them to name what such a run left half-done.
const (
	AnnRunOf      = "csimigrate.io/rewrite-of"
	AnnRunOfClass = "csimigrate.io/rewrite-of-storageclass"
)

// WriterLease is the name of the Lease, in the writers' state namespace,
// that keeps csimigrate's writers to one at a time.
const WriterLease = "csimigrate-writer"
