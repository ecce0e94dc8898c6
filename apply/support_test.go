package apply

import "k8s.io/klog/v2"

func klog0() klog.Logger { return klog.Background().V(100) }
