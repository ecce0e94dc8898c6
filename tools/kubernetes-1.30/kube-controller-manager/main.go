// Command kube-controller-manager is Kubernetes' own controller manager,
// v1.30.14, for the test of rewrite -apply -online on RBD.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
