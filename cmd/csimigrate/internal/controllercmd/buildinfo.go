package controllercmd

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// registerBuildInfo logs the controller's build b and exports it as the
// metric csimigrate_build_info (always 1, the build in its labels).
func registerBuildInfo(reg prometheus.Registerer, logger klog.Logger, b cli.BuildInfo) error {
	logger.Info("csimigrate controller", "version", b.Version, "commit", b.Commit, "modified", b.Modified, "goVersion", b.GoVersion)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "csimigrate_build_info", Help: "The csimigrate build: version, commit and Go version (always 1)."},
		[]string{"version", "commit", "goversion"})
	if err := reg.Register(g); err != nil {
		return err
	}
	g.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
	return nil
}
