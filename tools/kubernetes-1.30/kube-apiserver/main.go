// Command kube-apiserver is Kubernetes' own API server, v1.30.14 (the last
// release with the in-tree RBD plugin and its CSI migration), for the test
// of rewrite -apply -online on RBD.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
