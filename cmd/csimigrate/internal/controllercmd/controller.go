package controllercmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/controller"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/input"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/translate"
)

// options are the flags of csimigrate controller.
type options struct {
	// build is the binary's build (Run).
	build       cli.BuildInfo
	cluster     cli.ClusterFlags
	translation cli.TranslatorFlags
	log         cli.LogFlags
	// ctl are the controller's options, the flags bound straight into
	// them (its writer's among them: -state-namespace, -online,
	// -max-writes); complete adds the scope, runUntil the access.
	ctl           controller.Options
	plugins       string
	pvSelector    string
	classSelector string
	metricsAddr   string
	profiling     bool
	identity      string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	qps           float64
	burst         int
	// AdoptFlags: -adopt, Ceph's tools, -cephfs-secret and vCenter.
	cli.AdoptFlags
}

// Summary is what csimigrate controller does, as its help and docs/flags.md say.
const Summary = `Runs the migration in the cluster: replaces in-tree StorageClasses once their CSI driver is
registered, and rewrites each in-tree PV in scope as soon as the rewrite's checks allow it (not in use,
or -online where the nodes already migrate the plugin), including PVs created later. Blocked objects
are left untouched, with an Event naming the reason. It writes only while it holds the Lease
csimigrate-writer in -state-namespace (leader election; rewrite -apply takes the same Lease). Progress:
kubectl get csimigrations; metrics, /healthz and /readyz on -metrics-address.`

func (o *options) Register(fs *flag.FlagSet) {
	o.cluster.Register(fs)
	o.translation.Register(fs)
	o.log.Register(fs)
	cli.RegisterSourceChanged(fs, &o.ctl.Writer.SourceChanged)
	fs.StringVar(&o.ctl.Writer.StateNamespace, "state-namespace", apply.DefaultStateNamespace, "namespace of the writer's state ConfigMaps and of the Lease "+apply.LeaseName+" (rewrite -apply's default too)")
	fs.StringVar(&o.plugins, "plugins", "", "comma-separated in-tree plugins in scope, e.g. kubernetes.io/rbd (default: all)")
	fs.StringVar(&o.pvSelector, "pv-selector", "", "label selector of the PVs in scope (default: all)")
	fs.StringVar(&o.classSelector, "class-selector", "", "label selector of the StorageClasses in scope (default: all)")
	fs.BoolVar(&o.ctl.Writer.DryRun, "dry-run", false, "only report, with the checks of the real run: send each object's writes with server-side dry run and say in Events what would be done; takes the Lease "+ReportLeaseName+" instead of the writer's, so rewrite -apply and an acting controller are not held up")
	fs.BoolVar(&o.ctl.Writer.Online, "online", false, cli.OnlineUsage)
	fs.IntVar(&o.ctl.Workers, "workers", 2, "objects worked on at once, per kind")
	fs.DurationVar(&o.ctl.Recheck, "recheck", time.Minute, "how soon a blocked, in-use or waiting object is looked at again")
	fs.DurationVar(&o.ctl.StatusEvery, "status-every", 5*time.Second, "how often the status object and the gauges are brought up to date")
	fs.IntVar(&o.ctl.Writer.MaxWrites, "max-writes", 0, "stop writing after this many writes (a canary); 0: no limit")
	fs.StringVar(&o.metricsAddr, "metrics-address", ":8080", "address of /metrics, /healthz and /readyz (\"\" for none)")
	fs.BoolVar(&o.profiling, "profiling", false, "also serve Go's profiles (/debug/pprof/: heap, goroutines, CPU) on -metrics-address, as kube-controller-manager's --profiling does, to see where its memory goes on a large cluster")
	fs.StringVar(&o.identity, "identity", "", "this replica's identity in the Lease (default: host name and a random suffix)")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease lasts unrenewed before another replica takes it")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops writing")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	fs.Float64Var(&o.qps, "qps", 50, "the client's request rate limit towards the API server, per second")
	fs.IntVar(&o.burst, "burst", 100, "the client's burst above -qps")
	o.AdoptFlags.Register(fs, "", ", as rewrite -apply -adopt does; deploy/overlays/adopt-ceph shows how the Ceph configuration and keyring reach the controller")
}

// Complete fills in what the flags leave to defaults.
func (o *options) Complete(fs *flag.FlagSet) error {
	if err := cli.NoArgs(fs.Args()); err != nil {
		return err
	}
	if err := o.AdoptFlags.Complete(fs); err != nil {
		return err
	}
	var err error
	if o.ctl.PVSelector, err = labels.Parse(o.pvSelector); err != nil {
		return fmt.Errorf("-pv-selector %q: %w", o.pvSelector, err)
	}
	if o.ctl.ClassSelector, err = labels.Parse(o.classSelector); err != nil {
		return fmt.Errorf("-class-selector %q: %w", o.classSelector, err)
	}
	for p := range strings.SplitSeq(o.plugins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.ctl.Plugins = append(o.ctl.Plugins, p)
		}
	}
	if o.identity == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.identity = host + "_" + hex.EncodeToString(b)
	}
	return nil
}

// Validate refuses flags that cannot work together.
func (o *options) Validate() error {
	switch {
	case o.ctl.Workers < 1:
		return fmt.Errorf("-workers %d: give 1 or more", o.ctl.Workers)
	case o.ctl.Writer.MaxWrites < 0:
		return fmt.Errorf("-max-writes %d: give 0 (no limit) or more", o.ctl.Writer.MaxWrites)
	case o.ctl.Recheck <= 0 || o.ctl.StatusEvery <= 0:
		return errors.New("-recheck and -status-every must be positive durations")
	case o.leaseDuration <= o.renewDeadline || o.renewDeadline <= o.retryPeriod || o.retryPeriod <= 0:
		return fmt.Errorf("leader election: need -leader-elect-lease-duration (%s) > -leader-elect-renew-deadline (%s) > -leader-elect-retry-period (%s) > 0",
			o.leaseDuration, o.renewDeadline, o.retryPeriod)
	case o.ctl.Writer.StateNamespace == "":
		return errors.New("-state-namespace must not be empty")
	}
	return o.AdoptFlags.Validate()
}

// Run runs csimigrate controller with args; build is the binary's build,
// which it logs and exports as csimigrate_build_info.
func Run(args []string, stdout, stderr io.Writer, build cli.BuildInfo) int {
	return cli.RunCommand("controller", Summary, &options{build: build}, args, nil, stdout, stderr)
}

// Run runs the controller until SIGINT or SIGTERM.
func (o *options) Run(_ io.Reader, _, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if pct := setGCPercent(); pct > 0 {
		fmt.Fprintf(stderr, "csimigrate controller: the Go heap grows %d%% over what is live before a collection (GOGC overrides it)\n", pct)
	}
	if soft := setMemoryLimit(cgroupMemoryFiles); soft > 0 {
		fmt.Fprintf(stderr, "csimigrate controller: Go heap held under %d MiB, %.0f%% of the container's memory limit (GOMEMLIMIT overrides it)\n", soft>>20, memLimitShare*100)
	}
	if err := o.runUntil(ctx, stderr); err != nil {
		fmt.Fprintf(stderr, "csimigrate controller: %v\n", err)
		return cli.ExitBlocked
	}
	return cli.ExitOK
}

// runUntil runs the controller until ctx ends: it serves the health and metrics
// endpoints at once, and runs the controller while this replica leads.
func (o *options) runUntil(ctx context.Context, stderr io.Writer) error {
	// The controller logs at verbosity 4 unless -v=N says otherwise.
	level := 4
	if o.log.Verbose {
		level = o.log.Level
	}
	logger := cli.NewControllerLogger(stderr, level)
	cephCfg, err := o.translation.ClusterConfig()
	if err != nil {
		return err
	}
	client, dyn, leClient, err := o.clients()
	if err != nil {
		return err
	}
	tr, err := o.clusterTranslator(ctx, client, stderr)
	if err != nil {
		return err
	}
	if o.Adopt && o.translation.CephConfig == "" {
		cephCfg = o.servedCephConfig(ctx, client, tr, cephCfg, logger)
	}
	var vsphereAccess apply.VSphere
	if o.VSphere.Wanted() {
		vc, _, err := o.VSphere.Open(ctx, client, logger)
		if err != nil {
			return fmt.Errorf("vCenter: %w", err)
		}
		defer vc.Close()
		vsphereAccess = vc
	}
	// The Events outlive the signal by a moment (eventFlush): the last
	// ones (Migrated, the Lease given up) are sent before the broadcaster
	// shuts down.
	var flush eventFlush
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	broadcaster.StartRecordingToSink(flush.sink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}))
	defer func() {
		flush.wait(eventFlushTime)
		broadcaster.Shutdown()
	}()
	rec := flush.recorder(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "csimigrate-controller"}))
	reg := prometheus.NewRegistry()
	m, err := controller.NewMetrics(reg)
	if err != nil {
		return err
	}
	if err := registerBuildInfo(reg, logger, o.build); err != nil {
		return err
	}
	held := &leader{}
	ctl := o.ctl
	ctl.Writer.Ceph, ctl.Writer.CephConfig, ctl.Writer.CephFSSecret, ctl.Writer.VSphere = o.CephAccess(), cephCfg, o.CephFSSecret, vsphereAccess
	// The served entries' reads take the in-tree PVs from the
	// controller's cache, once it has synced.
	var ctrl *controller.Controller
	served := o.cephServed(client, tr, logger, func(ctx context.Context) ([]*v1.PersistentVolume, error) {
		select {
		case <-ctrl.Ready():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return ctrl.InTreePVs()
	})
	ctl.Writer.Lease, ctl.Writer.CephServed = held, served
	ctrl, err = controller.New(client, dyn, tr, klog.LoggerWithName(logger, "controller"), rec, m, ctl)
	if err != nil {
		return err
	}
	return o.lead(ctx, leClient, rec, reg, logger, held, func(ctx context.Context) error {
		// The first read of the served entries starts with the informers'
		// sync instead of at the first Ceph volume's check after it: on a
		// cluster of 120,000 PVs the first write waited 3 to 8 s for it.
		// Its answer is kept for the checks (cephServed).
		go func() { _, _ = served(ctx, "") }()
		return ctrl.Run(ctx)
	})
}

// servedCephConfig is the Ceph CSI cluster config that adopted volumes
// name their entries from without -ceph-config: the entries the drivers
// read, as at start. Reading them needs the rights plan -live has; without
// them it is fallback, and adopted volumes keep their migration entries.
func (o *options) servedCephConfig(ctx context.Context, client kubernetes.Interface, tr *translate.Translator, fallback ceph.ClusterConfig, logger klog.Logger) ceph.ClusterConfig {
	_, served, err := cli.LivePlan(ctx, client, tr, plan.Options{Drivers: o.translation.Drivers}, false)
	if err != nil {
		logger.Info("Not reading the Ceph CSI drivers' cluster entries: adopted volumes name their migration entries; give -ceph-config to name the drivers' own", "err", err.Error())
		return fallback
	}
	return served
}

// cephServed reads, at most once per -recheck, the cluster entries the Ceph
// CSI drivers serve, as plan -live locates them, so that each Ceph volume
// waits until the entry it names is served. When this ServiceAccount may
// not list all that plan -live reads to find them (asked with
// SelfSubjectAccessReviews, again at each -recheck), it answers with a
// refusal naming what it may not list: the volume is left as it is, never
// taken as served. Only the first answer is waited for: after it, a read
// older than -recheck is answered and read again behind the workers (on a
// cluster of 120,000 PVs a read takes seconds, which every worker waited
// for at each -recheck); a read that fails keeps the last answer and is
// tried again at the next question.
func (o *options) cephServed(client kubernetes.Interface, tr *translate.Translator, logger klog.Logger, inTreePVs func(context.Context) ([]*v1.PersistentVolume, error)) func(context.Context, string) (ceph.ClusterConfig, error) {
	var mu sync.Mutex
	var last plan.CephServed
	var lastErr error
	var at time.Time
	var said string
	var reading chan struct{} // closed when the read under way ends
	read := func(ctx context.Context) (plan.CephServed, error) {
		missing, err := liveUnreadable(ctx, client)
		if err != nil {
			return plan.CephServed{}, err
		}
		if len(missing) > 0 {
			mu.Lock()
			if m := strings.Join(missing, ","); m != said {
				said = m
				logger.Info("Not rewriting Ceph volumes: this ServiceAccount cannot list what finds the cluster entries Ceph CSI serves", "cannotList", missing)
			}
			mu.Unlock()
			return plan.CephServed{}, cephUncheckedRefusal(missing)
		}
		served, err := liveCephServed(ctx, client, tr, plan.Options{Drivers: o.translation.Drivers}, inTreePVs)
		if err != nil {
			return plan.CephServed{}, err
		}
		mu.Lock()
		said = ""
		mu.Unlock()
		return served, nil
	}
	// start reads in the background, under mu; done is closed when it
	// ends. A refusal is an answer; another error is not (kept: the last).
	start := func() chan struct{} {
		done := make(chan struct{})
		reading = done
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			served, err := read(ctx)
			mu.Lock()
			defer mu.Unlock()
			var refusal *rewrite.Refusal
			switch {
			case err == nil || errors.As(err, &refusal):
				last, lastErr, at = served, err, time.Now()
			case at.IsZero():
				lastErr = err // the first answer's waiters get it
			default:
				logger.Info("Reading the cluster entries Ceph CSI serves failed; the last answer stands", "err", err.Error())
			}
			reading = nil
			close(done)
		}()
		return done
	}
	// answer is the last read's for driver, under mu.
	answer := func(driver string) (ceph.ClusterConfig, error) {
		if lastErr != nil {
			return ceph.ClusterConfig{}, lastErr
		}
		return last.For(driver)
	}
	return func(ctx context.Context, driver string) (ceph.ClusterConfig, error) {
		mu.Lock()
		if !at.IsZero() {
			if time.Since(at) >= o.ctl.Recheck && reading == nil {
				start()
			}
			defer mu.Unlock()
			return answer(driver)
		}
		done := reading
		if done == nil {
			lastErr = nil
			done = start()
		}
		mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ceph.ClusterConfig{}, ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		if at.IsZero() {
			if lastErr == nil {
				return ceph.ClusterConfig{}, errors.New("the cluster entries Ceph CSI serves could not be read")
			}
			return ceph.ClusterConfig{}, lastErr
		}
		return answer(driver)
	}
}

// liveCephServed is what the cluster's Ceph CSI drivers serve, each its
// own config's entries, as plan -live finds them, from only what finding
// them reads: the drivers' workloads, config maps and the operator's
// objects, and the in-tree Ceph PVs (the plan reads a deployment's entries
// for the drivers the migrated volumes go to). The pods that run no Ceph
// CSI driver are listed page by page and not kept; the claims are not
// listed. The in-tree PVs are inTreePVs' (the controller's cache, which it
// may wait for) where it is given, else the PVs are listed too, and only
// the in-tree Ceph ones kept: the controller asks every -recheck, and on a
// cluster of 120,000 PVs listing the PVs and claims again took most of the
// 29 s its first Ceph write waited for.
func liveCephServed(ctx context.Context, client kubernetes.Interface, tr *translate.Translator, opts plan.Options, inTreePVs func(context.Context) ([]*v1.PersistentVolume, error)) (plan.CephServed, error) {
	pl := plan.New(tr, cli.Klog0(), opts)
	sink := cephConfigSink{next: pl, cachedPVs: inTreePVs != nil}
	if err := input.ReadLive(ctx, client, sink, false, false, func(int) {}, io.Discard); err != nil {
		return plan.CephServed{}, err
	}
	if inTreePVs != nil {
		// Last, as readLive hands them: a PV's plan reads the rest.
		pvs, err := inTreePVs(ctx)
		if err != nil {
			return plan.CephServed{}, fmt.Errorf("the in-tree PVs of the controller's cache: %w", err)
		}
		for _, pv := range pvs {
			sink.Add(pv)
		}
		pl.Listed("persistentvolumes")
	}
	return pl.Finish().CephServed(), nil
}

// cephConfigSink hands the planner what finding the served Ceph CSI
// entries reads, and nothing else.
type cephConfigSink struct {
	next interface {
		Add(obj any)
		Listed(resource string)
	}
	// cachedPVs: the in-tree PVs come from the controller's cache, so the
	// PVs are not listed (Drops).
	cachedPVs bool
}

// Add keeps an in-tree Ceph PV, a pod that runs a Ceph CSI driver, and
// every object of the other kinds; it drops the other PVs, the claims (not
// even listed: Drops) and the other pods.
func (s cephConfigSink) Add(obj any) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		if n := plugin.InTreeNameOfPV(o); n != plugin.RBDInTreePluginName && n != plugin.CephFSInTreePluginName {
			return
		}
	case *v1.PersistentVolumeClaim:
		return
	case *v1.Pod:
		if !runsCephCSI(&o.Spec) {
			return
		}
	}
	s.next.Add(obj)
}

// Drops says the claims are not listed at all (finding the served entries
// reads none, and a large cluster has as many claims as PVs), nor the PVs
// where the controller's cache gives the in-tree ones.
func (s cephConfigSink) Drops(resource string) bool {
	return resource == "persistentvolumeclaims" || s.cachedPVs && resource == "persistentvolumes"
}

// Listed passes on that a kind was listed whole.
func (s cephConfigSink) Listed(resource string) { s.next.Listed(resource) }

// runsCephCSI reports whether a pod's containers name a Ceph CSI driver
// (a -drivername argument), as the plan finds the drivers' workloads.
func runsCephCSI(spec *v1.PodSpec) bool {
	for _, ct := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, a := range slices.Concat(ct.Command, ct.Args) {
			if strings.Contains(a, "drivername") {
				return true
			}
		}
	}
	return false
}

// cephUncheckedRefusal is why a Ceph volume is left as it is when the
// controller may not list the kinds missing, which finding the cluster
// entries Ceph CSI serves needs.
func cephUncheckedRefusal(missing []string) *rewrite.Refusal {
	return &rewrite.Refusal{Code: rewrite.CodeCephEntryUnchecked,
		Reason: "the controller may not list " + strings.Join(missing, ", ") + ", which finding the cluster entries Ceph CSI serves needs: it cannot tell whether the driver would mount the migrated volume",
		Remedy: "grant the controller's ServiceAccount list on those (deploy/base's ClusterRole csimigrate-controller grants them); the controller looks again at each -recheck"}
}

// liveUnreadable names the kinds plan -live lists (without Secrets and
// Nodes) that client may not list, as the API server answers
// SelfSubjectAccessReviews.
func liveUnreadable(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	groups := map[string]string{"storageclasses": "storage.k8s.io", "csidrivers": "storage.k8s.io", "csinodes": "storage.k8s.io",
		"deployments": "apps", "statefulsets": "apps", "daemonsets": "apps", "replicasets": "apps", "jobs": "batch", "cronjobs": "batch"}
	var missing []string
	for _, l := range input.Listers(client, false, false) {
		resource, group, _ := strings.Cut(l.What, ".")
		if group == "" {
			group = groups[resource]
		}
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: group, Resource: resource}}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		if !r.Status.Allowed {
			missing = append(missing, l.What)
		}
	}
	return missing, nil
}

// leader is the writer Lease as this replica's leader election holds it:
// the apply.Holder the controller's writer checks before each write.
type leader struct {
	le atomic.Pointer[leaderelection.LeaderElector]
}

// Holding implements apply.Holder: the elector leads.
func (l *leader) Holding() bool {
	le := l.le.Load()
	return le != nil && le.IsLeader()
}

// ReportLeaseName is the Lease a controller that only reports (-dry-run)
// leads by, so that one replica reports at a time and none holds the
// writer Lease: rewrite -apply and an acting controller write meanwhile.
const ReportLeaseName = "csimigrate-report"

// leaseName is the Lease this controller leads by: the writer Lease when it
// acts, ReportLeaseName when it only reports.
func (o *options) leaseName() string {
	if o.ctl.Writer.DryRun {
		return ReportLeaseName
	}
	return apply.LeaseName
}

// lead serves the health and metrics endpoints and runs run while this
// replica holds its Lease (leaseName; held says so meanwhile); it returns
// when ctx ends, or with an error when the Lease is lost.
func (o *options) lead(ctx context.Context, leClient kubernetes.Interface, rec record.EventRecorder, reg *prometheus.Registry, logger klog.Logger, held *leader, run func(context.Context) error) error {
	name := o.leaseName()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: o.ctl.Writer.StateNamespace},
		Client:     leClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.identity, EventRecorder: rec},
	}
	health := leaderelection.NewLeaderHealthzAdaptor(2 * time.Second)
	stop, err := o.serve(reg, health, logger)
	if err != nil {
		return err
	}
	defer stop()
	logger.Info("Waiting for the Lease", "lease", o.ctl.Writer.StateNamespace+"/"+name, "identity", o.identity)
	var runErr error
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name, ReleaseOnCancel: true, WatchDog: health,
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading", "lease", name, "dryRun", o.ctl.Writer.DryRun, "identity", o.identity)
				runErr = run(ctx)
			},
			OnStoppedLeading: func() { logger.Info("Not leading: the controller stopped", "lease", name, "identity", o.identity) },
			OnNewLeader: func(id string) {
				if id != o.identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	health.SetLeaderElection(le)
	held.le.Store(le)
	le.Run(ctx)
	if ctx.Err() == nil {
		// Lost the Lease while running: stop, so that the process restarts
		// as a standby (the way client-go's controllers do).
		return fmt.Errorf("lost the Lease %s", name)
	}
	return runErr
}

// serve serves the metrics and the health checks on -metrics-address ("":
// nothing); stop shuts the server down.
// clusterTranslator translates to the drivers the cluster has, as they are
// at the start. A backend in scope whose driver is not installed yet is
// waited for, under its upstream name; one with two drivers and no -driver,
// or a -driver not installed, is a choice the controller does not make.
func (o *options) clusterTranslator(ctx context.Context, client kubernetes.Interface, stderr io.Writer) (*translate.Translator, error) {
	tr, err := o.translation.Translator()
	if err != nil {
		return nil, err
	}
	drivers, err := cli.ListDrivers(ctx, client)
	if err != nil {
		return nil, err
	}
	tr, blocked, err := cli.DriversFor(tr, drivers, o.translation.Drivers, stderr)
	if err != nil {
		return nil, err
	}
	for inTree, f := range blocked {
		inScope := len(o.ctl.Plugins) == 0 || slices.Contains(o.ctl.Plugins, inTree)
		if inScope && f.Code != plan.FindingCSIDriverMissing || inScope && o.translation.Drivers[inTree] != "" {
			return nil, errors.New(blocked.Refusal(inTree))
		}
	}
	return tr, nil
}

func (o *options) serve(reg *prometheus.Registry, health *leaderelection.HealthzAdaptor, logger klog.Logger) (stop func(), err error) {
	if o.metricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-address %s: %w", o.metricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := health.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if o.profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	// A standby replica is ready: it serves and waits for the Lease.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("Serving metrics and health", "address", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// clients are the controller's client, its dynamic client (the status
// object) and the leader election's own client, so that a busy controller
// does not starve the renewals.
func (o *options) clients() (client kubernetes.Interface, dyn dynamic.Interface, leClient kubernetes.Interface, err error) {
	cfg, err := cli.RestConfig(o.cluster.Kubeconfig, o.cluster.Context)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.UserAgent = "csimigrate-controller"
	// The API server warns on every write of an in-tree PV that its plugin
	// is deprecated: that is what the controller is for.
	cfg.WarningHandler = rest.NoWarnings{}
	if client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, nil, nil, err
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, nil, nil, err
	}
	leClient, err = kubernetes.NewForConfig(rest.CopyConfig(cfg))
	return client, dyn, leClient, err
}

// New is the controller command's options, for its flags (completion, the
// flag reference).
func New() cli.Command { return &options{} }
