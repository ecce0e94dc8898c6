// Command vcsim runs govmomi's vCenter simulator for the vSphere tests as a
// process of its own (vcsim's handlers race with each other under the race
// detector, which the tests run with): the VPX model with its CNS, SPBM,
// FCD and REST endpoints, reporting -version, letting in only -user with
// -password when given. It prints its URL on the
// first line of standard output and serves until it is killed.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"

	// vcsim's CNS, SPBM, FCD and REST (tagging) endpoints.
	_ "github.com/vmware/govmomi/cns/simulator"
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
	_ "github.com/vmware/govmomi/vslm/simulator"
)

func main() {
	version := flag.String("version", "8.0.3", "the vCenter version About reports (its API version is VERSION.0)")
	user := flag.String("user", "", "the only user vCenter lets log in (with -password; none: any user and password)")
	password := flag.String("password", "", "the password of -user")
	flag.Parse()
	model := simulator.VPX()
	model.ServiceContent.About.Version = *version
	model.ServiceContent.About.ApiVersion = *version + ".0"
	if err := model.Create(); err != nil {
		fmt.Fprintln(os.Stderr, "vcsim:", err)
		os.Exit(1)
	}
	defer model.Remove()
	model.Service.TLS = new(tls.Config)
	model.Service.RegisterEndpoints = true
	if *user != "" {
		model.Service.Listen = &url.URL{User: url.UserPassword(*user, *password)}
	}
	srv := model.Service.NewServer()
	u := *srv.URL
	u.User = nil
	fmt.Println(u.String())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
}
