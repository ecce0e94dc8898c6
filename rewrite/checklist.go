package rewrite

import "fmt"

// Check is one rule of an in-tree PV's checklist: what must hold before
// its rewrite's first write. Each rule is written once (the functions its
// doc names); the checklist says which rules run and in what order. The
// plan (from its input) and the writer (from the API server: its review,
// its dry run and its real run) each run every check of Checklist, and
// name every reason at once, so that an object the plan blocks is the one
// the writer refuses, with the same codes.
type Check int

// The checks, in Checklist's order: what the PV is (its driver, its
// translation), the object (itself, its claim), what it becomes (its
// replacement, who keeps it), what the driver needs (Secrets, the Ceph
// entry), and who uses it (the pods, and the node plugins where they run).
const (
	// CheckDriver: a CSIDriver object registers the driver of its backend
	// (CSIDriverMissing).
	CheckDriver Check = iota
	// CheckTranslation: its plugin translates it (the plugin's blocking
	// findings, each with its own code; NotTranslatable).
	CheckTranslation
	// CheckObject: the PV object itself (ObjectRefusal: BeingDeleted,
	// UnknownFinalizer).
	CheckObject
	// CheckClaim: its claim exists and is bound to it (ClaimRefusal:
	// ClaimGone, ClaimReplaced, ClaimBeingDeleted, ClaimBoundElsewhere,
	// PreBound).
	CheckClaim
	// CheckReplacement: its replacement can be built from the translation,
	// its class and its claim (Replacement: NotTranslatable, as for a
	// class's provisioner secret it cannot name).
	CheckReplacement
	// CheckKept: no reconciler would put the old form back (KeptRefusal:
	// KeptByReconciler).
	CheckKept
	// CheckSecrets: the Secrets its migrated form makes Ceph CSI read are
	// there with what the driver reads (SecretNeeds, Judge: SecretMissing,
	// SecretNotReady).
	CheckSecrets
	// CheckCephEntry: Ceph CSI serves the cluster entry its migrated form
	// names (CephEntryNeeded: CephEntryMissing, CephCSIConfigNotFound,
	// CephEntryUnchecked).
	CheckCephEntry
	// CheckInUse: no pod that has not finished uses its claim, unless
	// the rewrite runs online where that is safe (InUse).
	CheckInUse
	// CheckNodePlugin: the nodes where pods use it run the driver's node
	// plugin (CSINodeDriverMissing).
	CheckNodePlugin
	checks // the number of checks
)

var checkNames = [checks]string{"driver", "translation", "object", "claim", "replacement", "kept", "secrets", "ceph-entry", "in-use", "node-plugin"}

// String is the check's name ("claim").
func (c Check) String() string {
	if c < 0 || c >= checks {
		return fmt.Sprintf("Check(%d)", int(c))
	}
	return checkNames[c]
}

// Checklist is every check of an in-tree PV, in the order they run and
// their refusals are named. A check whose input an earlier one could not
// give (a replacement where the translation failed) holds. The slice is
// the caller's.
func Checklist() []Check {
	out := make([]Check, checks)
	for i := range out {
		out[i] = Check(i)
	}
	return out
}
