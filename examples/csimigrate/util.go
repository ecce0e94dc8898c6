package main

import (
	"encoding/json"

	"k8s.io/klog/v2"
)

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func klog0() klog.Logger { return klog.Background().V(100) }
