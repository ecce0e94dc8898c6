package controllercmd

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// The controller exports its build as csimigrate_build_info.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := registerBuildInfo(reg, klog.Background().V(100), cli.ReadBuildInfo("", "")); err != nil {
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
