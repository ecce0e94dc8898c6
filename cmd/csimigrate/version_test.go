package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// version prints the build's version, commit and Go version; a release
// build's -X values take the place of the build info's.
func TestVersion(t *testing.T) {
	out, _, code := runCmd(t, "", "version")
	if code != exitOK || !strings.HasPrefix(out, "csimigrate ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("exit %d: %q", code, out)
	}
	version, commit = "v1.2.3", "0123abc"
	t.Cleanup(func() { version, commit = "", "" })
	if out, _, _ := runCmd(t, "", "version"); !strings.HasPrefix(out, "csimigrate v1.2.3 (commit 0123abc,") {
		t.Errorf("release build: %q", out)
	}
	if _, _, code := runCmd(t, "", "version", "extra"); code != exitUsage {
		t.Errorf("an argument: exit %d", code)
	}
}

// The controller exports its build as csimigrate_build_info.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := registerBuildInfo(reg, klog.Background().V(100)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "csimigrate_build_info" || mfs[0].Metric[0].GetGauge().GetValue() != 1 {
		t.Fatalf("metrics %v", mfs)
	}
	labels := map[string]string{}
	for _, l := range mfs[0].Metric[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["commit"] == "" {
		t.Errorf("labels %v", labels)
	}
}
