package main

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// clientFor builds a client as kubectl does from a kubeconfig path,
// $KUBECONFIG, ~/.kube/config or the in-cluster configuration, and a context
// of it ("" for the current one), with a client-side rate limit of qps
// requests a second and bursts of burst (client-go's defaults, 5 and 10,
// when 0).
func clientFor(kubeconfig, context string, qps float32, burst int) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	return kubernetes.NewForConfig(cfg)
}

func klog0() klog.Logger { return klog.Background().V(100) }
