package main

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/csimigrate/csimigrate/apply/testenv"
)

// startWithControllerManager starts kube-apiserver and kube-controller-
// manager's volume controllers (the test fails if they cannot start) and
// returns the server, a client and the path of a kubeconfig.
func startWithControllerManager(t *testing.T) (*testenv.Server, kubernetes.Interface, string) {
	t.Helper()
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := s.StartControllerManager(os.Stderr, testenv.VolumeControllers...); err != nil {
		t.Fatalf("cannot start kube-controller-manager: %v", err)
	}
	kc, err := s.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Client, kc
}
