package cli

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ClientFor builds a client as kubectl does from a kubeconfig path,
// $KUBECONFIG, ~/.kube/config or the in-cluster configuration, and a context
// of it ("" for the current one), with a client-side rate limit of qps
// requests a second and bursts of burst (client-go's defaults, 5 and 10,
// when 0).
func ClientFor(kubeconfig, context string, qps float32, burst int) (kubernetes.Interface, error) {
	cfg, err := RestConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	return kubernetes.NewForConfig(cfg)
}

// PreferProtobuf has a typed client speak protobuf to the API server, as
// kube-controller-manager does (--kube-api-content-type): the API server
// encodes a page of 2,000 PVs several times faster, and the client decodes
// it with far less garbage, than JSON. JSON stays accepted, and the dynamic
// client (the status object, the operators' resources) sets JSON itself.
func PreferProtobuf(cfg *rest.Config) {
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
}

// Klog0 is a logger that logs nothing (verbosity 100), for the engine's
// calls whose log the command does not show.
func Klog0() klog.Logger { return klog.Background().V(100) }
