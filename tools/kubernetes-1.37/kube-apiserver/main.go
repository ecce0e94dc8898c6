// Command kube-apiserver is Kubernetes' own API server, built from the
// k8s.io/kubernetes module (v1.37.2, the newest release the module proxy
// serves whole) for csimigrate's acceptance tests: what the translators
// output is judged by Kubernetes' validation, not by our belief. Its module
// (tools/kubernetes-1.37, with kube-controller-manager and the hollow
// kubelet) is outside the workspace, so the library's dependency graph never
// sees k8s.io/kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
