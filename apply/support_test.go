package apply

import (
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/rewrite"
)

func klog0() klog.Logger { return klog.Background().V(100) }

// RunsCheck reports whether the writer's checks of an in-tree PV have a
// function for check c.
func RunsCheck(c rewrite.Check) bool { return inTreeChecks[c] != nil }
