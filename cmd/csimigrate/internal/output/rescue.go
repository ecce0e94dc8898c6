package output

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/csimigrate/csimigrate/plan"
)

// WriteRescue writes, first, what is broken now on a release past the
// plugins' removal (plan.Plan.Broken: each in-tree PV that cannot mount,
// with its pods and what their status shows), then the rescue in its
// order, each step with the command that does it.
func WriteRescue(w io.Writer, p *plan.Plan, wide bool) {
	if len(p.Broken) == 0 {
		return
	}
	broken := table{title: fmt.Sprintf("BROKEN NOW (Kubernetes 1.%d has neither the in-tree plugin nor its translation: these PVs cannot mount until rewritten)", p.KubernetesMinor),
		columns: []string{"PV", "PLUGIN", "CLAIM", "POD", "STATUS", "WORKLOAD"}}
	for _, b := range p.Broken {
		if len(b.Pods) == 0 {
			broken.add([]string{b.PV, b.Plugin, dash(b.Claim), "-", "-", "-"})
		}
		for _, pod := range b.Pods {
			status := pod.Stuck
			switch {
			case status != "":
			case pod.Phase == "Running":
				status = "running (stops at its next restart)"
			case pod.Phase != "":
				status = pod.Phase + " (cannot start)"
			default:
				status = "-"
			}
			broken.add([]string{b.PV, b.Plugin, dash(b.Claim), pod.Pod, status, dash(pod.Workload)})
		}
	}
	broken.write(w, wide)
	fmt.Fprintln(w, "\nRESCUE (in this order; docs/rescue.md)")
	for i, s := range p.Rescue {
		step := fmt.Sprintf("%d. %s: %s", i+1, s.Text, strings.Join(s.Objects, ", "))
		if wide {
			fmt.Fprintln(w, step)
		} else {
			fmt.Fprint(w, Wrap(step, TextWidth, "   "))
		}
		for _, c := range rescueCommands(s) {
			fmt.Fprintln(w, "     "+c)
		}
	}
	fmt.Fprintln(w)
}

// rescueCommands are the commands of a rescue step, as an admin types
// them.
func rescueCommands(s plan.RescueStep) []string {
	var out []string
	switch s.Step {
	case plan.RescueDriver, plan.RescueEntries:
		out = append(out, programName()+" plan -o ceph-csi | kubectl apply -f -    # the objects CEPH CSI CONFIG gives")
	case plan.RescueStop, plan.RescueStart:
		for i, obj := range s.Objects {
			kind, ref, _ := strings.Cut(obj, " ")
			ns, name, _ := strings.Cut(ref, "/")
			replicas := ""
			if i < len(s.Replicas) {
				replicas = s.Replicas[i]
			}
			if s.Step == plan.RescueStop && replicas != "" {
				replicas = "0"
			}
			switch {
			case kind == "Pod" && s.Step == plan.RescueStop:
				out = append(out, fmt.Sprintf("kubectl delete pod %s -n %s", name, ns))
			case kind == "Pod":
				out = append(out, fmt.Sprintf("kubectl apply -f <the manifest of pod %s/%s>", ns, name))
			case replicas == "":
				out = append(out, fmt.Sprintf("# %s has no replicas to scale: stop its pods another way (a DaemonSet's node selector, a Job's completion)", obj))
			default:
				out = append(out, fmt.Sprintf("kubectl scale %s %s -n %s --replicas=%s", strings.ToLower(kind), name, ns, replicas))
			}
		}
		for _, pod := range s.Delete {
			ns, name, _ := strings.Cut(pod, "/")
			out = append(out, fmt.Sprintf("kubectl delete pod %s -n %s    # stuck: the StatefulSet's scale-down waits on it", name, ns))
		}
	case plan.RescueRewrite:
		targets := strings.Join(s.Objects, " ")
		out = append(out, programName()+" rewrite "+targets+" > review.sh    # review: the steps, or what is refused and why",
			programName()+" rewrite -apply -review review.sh "+targets+"    # what was reviewed, or nothing")
	}
	return out
}

// programName is how the admin runs the command: "kubectl csimigrate" for
// the kubectl plugin (kubectl-csimigrate), else "csimigrate".
func programName() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl csimigrate"
	}
	return "csimigrate"
}
