package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugin"
)

// Finding codes of the kubelets' versions.
const (
	// FindingKubeletNewerThanAPIServer: a node's kubelet is of a newer
	// minor release than the API server, which Kubernetes does not
	// support.
	FindingKubeletNewerThanAPIServer = "KubeletNewerThanAPIServer"
	// FindingKubeletTooOld: a node's kubelet is more than three minor
	// releases older than the release the control plane moves to next,
	// which Kubernetes does not support.
	FindingKubeletTooOld = "KubeletTooOld"
)

// kubeletSkew is how many minor releases a kubelet may be older than the
// API server (Kubernetes' version skew policy, from 1.28).
const kubeletSkew = 3

// addKubelet records a node's kubelet version (its status), by minor
// release.
func (p *Planner) addKubelet(n *v1.Node) {
	m, err := featuregate.ParseMinor(n.Status.NodeInfo.KubeletVersion)
	if err != nil || n.Status.NodeInfo.KubeletVersion == "" {
		return
	}
	if p.kubelets == nil {
		p.kubelets = map[int][]string{}
	}
	p.kubelets[m] = append(p.kubelets[m], n.Name)
}

// kubeletWarnings are the kubelets' version skew findings: kubelets newer
// than the API server, and kubelets more than three minor releases older
// than the release the control plane moves to next (the one after the
// plan's). Nodes are named, a few of each.
func (p *Planner) kubeletWarnings() []plugin.Finding {
	server := p.opts.KubernetesMinor
	if v := p.opts.ServerVersion; v != "" {
		if m, err := featuregate.ParseMinor(v); err == nil {
			server = m
		}
	}
	if server == 0 || len(p.kubelets) == 0 {
		return nil
	}
	var newer, older []string
	oldest := server + 1 - kubeletSkew
	for _, m := range slices.Sorted(maps.Keys(p.kubelets)) {
		nodes := p.kubelets[m]
		switch {
		case m > server:
			newer = append(newer, fmt.Sprintf("1.%d on %s", m, someNodes(nodes)))
		case m < oldest:
			older = append(older, fmt.Sprintf("1.%d on %s", m, someNodes(nodes)))
		}
	}
	var out []plugin.Finding
	if len(newer) > 0 {
		out = append(out, plugin.Finding{Code: FindingKubeletNewerThanAPIServer, Severity: plugin.SeverityWarning, Field: "Node status.nodeInfo.kubeletVersion",
			Message: fmt.Sprintf("kubelets newer than the API server (1.%d): %s; Kubernetes does not support a kubelet newer than its API server, and what such a kubelet does with the volumes is not what the plan says", server, strings.Join(newer, "; ")),
			Remedy:  "upgrade the control plane to the kubelets' release first (or run those nodes' kubelets at the API server's release)"})
	}
	if len(older) > 0 {
		out = append(out, plugin.Finding{Code: FindingKubeletTooOld, Severity: plugin.SeverityWarning, Field: "Node status.nodeInfo.kubeletVersion",
			Message: fmt.Sprintf("kubelets more than %d minor releases older than 1.%d, the release the control plane moves to next: %s; Kubernetes does not support them with that API server", kubeletSkew, server+1, strings.Join(older, "; ")),
			Remedy:  fmt.Sprintf("upgrade those nodes' kubelets to 1.%d or later before the control plane moves to 1.%d", oldest, server+1)})
	}
	return out
}

// someNodes names up to three nodes, and how many more.
func someNodes(nodes []string) string {
	s := slices.Sorted(slices.Values(nodes))
	if len(s) <= 3 {
		return "node " + strings.Join(s, ", ")
	}
	return fmt.Sprintf("nodes %s and %d more", strings.Join(s[:3], ", "), len(s)-3)
}
