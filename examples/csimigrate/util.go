package main

import (
	"encoding/json"
	"slices"

	"k8s.io/klog/v2"
)

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func klog0() klog.Logger { return klog.Background().V(100) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
