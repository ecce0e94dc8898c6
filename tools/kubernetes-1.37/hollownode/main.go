// Command hollownode is Kubernetes' kubemark hollow kubelet (v1.37.2, from
// the k8s.io/kubernetes module kube-controller-manager is built from): the
// real kubelet (volume manager, CSI volume plugin with csi-translation-lib's
// migration, plugin registration) over kubemark's fake container runtime,
// fake mounter, stub container manager and fake cAdvisor: no containers, no
// cgroups, no real mounts. csimigrate's tests run a rewrite under a pod it
// runs.
//
// Unlike kubemark's own command it leaves volume attachment to
// kube-controller-manager's attach/detach controller, as a real node does
// (kubemark sets enableControllerAttachDetach to false), and takes the
// kubelet's feature gates.
//
//	hollownode -kubeconfig K -name NODE -port P [-feature-gates A=true,...] [-v 4]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	name := flag.String("name", "node1", "the node's name")
	port := flag.Int("port", 10250, "the kubelet's port")
	gates := flag.String("feature-gates", "", "the kubelet's feature gates")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	if err := run(*kubeconfig, *name, *port, *gates); err != nil {
		fmt.Fprintln(os.Stderr, "hollownode:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, name string, port int, gates string) error {
	if gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			return fmt.Errorf("-feature-gates: %w", err)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "hollow-kubelet"
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{NodeName: name, KubeletPort: port, MaxPods: 110})
	c.EnableControllerAttachDetach = true
	c.Address = "127.0.0.1"
	hb := *cfg
	hb.Timeout = c.NodeStatusUpdateFrequency.Duration
	hb.QPS = -1
	heartbeat, err := clientset.NewForConfig(&hb)
	if err != nil {
		return err
	}
	ctx := context.Background()
	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return err
	}
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return err
	}
	defer runtime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return err
	}
	kubemark.NewHollowKubelet(f, c, client, heartbeat, &cadvisortest.Fake{NodeName: name}, runtime.ImageService, runtimeService,
		cm.NewStubContainerManager()).Run(ctx)
	return nil
}
