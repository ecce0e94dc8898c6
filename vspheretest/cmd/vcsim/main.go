// Command vcsim runs govmomi's vCenter simulator for the vSphere tests as a
// process of its own (vcsim's handlers race with each other under the race
// detector, which the tests run with): the VPX model with its CNS, SPBM,
// FCD and REST endpoints, reporting -version, letting in only -user with
// -password when given. It prints its URL on the
// first line of standard output and serves until it is killed.
//
// It is built by scripts/build-vcsim, with a fix of govmomi v0.56.0's
// simulator (a deadlock between ModifyListView and WaitForUpdatesEx that
// stops the vSphere CSI driver's task listener for good), and refuses to
// start when built otherwise.
package main

import (
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/vmware/govmomi/simulator"

	// vcsim's CNS, SPBM, FCD and REST (tagging) endpoints.
	_ "github.com/vmware/govmomi/cns/simulator"
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
	_ "github.com/vmware/govmomi/vslm/simulator"
)

// listViewLockOrderFixed is set by a file only scripts/build-vcsim adds to
// the build, with the simulator's patched PropertyFilter.
var listViewLockOrderFixed bool

func main() {
	version := flag.String("version", "8.0.3", "the vCenter version About reports (its API version is VERSION.0)")
	user := flag.String("user", "", "the only user vCenter lets log in (with -password; none: any user and password)")
	password := flag.String("password", "", "the password of -user")
	trace := flag.String("trace", "", "append to this file, a line each, the API calls of clients whose User-Agent starts with csimigrate: the endpoint's path and the SOAP method (or the HTTP method)")
	flag.Parse()
	if !listViewLockOrderFixed {
		fmt.Fprintln(os.Stderr, "vcsim: built without the fix of the simulator's ListView deadlock; build it with scripts/build-vcsim")
		os.Exit(1)
	}
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
	if *trace != "" {
		f, err := os.OpenFile(*trace, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vcsim:", err)
			os.Exit(1)
		}
		defer f.Close()
		// Before the first request: the server reads its handler per
		// request.
		srv.Config.Handler = traced(srv.Config.Handler, f)
	}
	u := *srv.URL
	u.User = nil
	fmt.Println(u.String())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
}

// soapMethod is the first element in a SOAP envelope's body: the method.
var soapMethod = regexp.MustCompile(`<(?:[A-Za-z0-9]+:)?Body[^>]*>\s*<(?:[A-Za-z0-9]+:)?([A-Za-z0-9_]+)`)

// traced logs to w the calls of csimigrate's clients (by User-Agent) that h
// serves: "PATH METHOD", the SOAP method where the body is SOAP.
func traced(h http.Handler, w io.Writer) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.UserAgent(), "csimigrate") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			method := r.Method
			if m := soapMethod.FindSubmatch(body); m != nil {
				method = string(m[1])
			}
			mu.Lock()
			fmt.Fprintf(w, "%s %s\n", r.URL.Path, method)
			mu.Unlock()
		}
		h.ServeHTTP(rw, r)
	})
}
