// Command kube-controller-manager is Kubernetes' own controller manager,
// built from the k8s.io/kubernetes module (v1.37.2, as kube-apiserver) for
// csimigrate's end-to-end tests: its persistentvolume-binder and protection
// controllers judge whether claims stay bound through a rewrite. Its module
// is outside the workspace, so the library's dependency graph never sees
// k8s.io/kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
