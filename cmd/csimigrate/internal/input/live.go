package input

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// addAll hands every item of a page to the sink and returns how many.
func addAll[T any](sink Sink, items []T) int {
	for i := range items {
		sink.Add(any(&items[i]))
	}
	return len(items)
}

// Lister reads one page of a kind: its continue token, and what hands the
// page's objects to a sink (and says how many).
type Lister struct {
	// What is the resource listed ("persistentvolumes",
	// "drivers.csi.ceph.com").
	What string
	// Page lists one page: its continue token, and what hands the page's
	// objects to a sink (and says how many).
	Page func(ctx context.Context, o metav1.ListOptions) (cont string, add func(Sink) int, err error)
}

// List makes a Lister of a client's List call.
func List[L any, T any](what string, call func(ctx context.Context, o metav1.ListOptions) (L, error), items func(L) (string, []T)) Lister {
	return Lister{what, func(ctx context.Context, o metav1.ListOptions) (string, func(Sink) int, error) {
		l, err := call(ctx, o)
		if err != nil {
			return "", nil, err
		}
		cont, its := items(l)
		return cont, func(sink Sink) int { return addAll(sink, its) }, nil
	}}
}

// Listers are the kinds the commands read from a live cluster, in the
// order they are read: everything a PV's plan depends on first (classes,
// claims, pods and workloads, secrets), the PVs last.
func Listers(c kubernetes.Interface, withSecrets, withNodes bool) []Lister {
	core, apps, batch, storage := c.CoreV1(), c.AppsV1(), c.BatchV1(), c.StorageV1()
	out := []Lister{
		List("storageclasses", storage.StorageClasses().List, func(l *storagev1.StorageClassList) (string, []storagev1.StorageClass) { return l.Continue, l.Items }),
		List("csidrivers", storage.CSIDrivers().List, func(l *storagev1.CSIDriverList) (string, []storagev1.CSIDriver) { return l.Continue, l.Items }),
		List("csinodes", storage.CSINodes().List, func(l *storagev1.CSINodeList) (string, []storagev1.CSINode) { return l.Continue, l.Items }),
		List("configmaps", core.ConfigMaps("").List, func(l *v1.ConfigMapList) (string, []v1.ConfigMap) { return l.Continue, l.Items }),
		operatorList(c, "drivers"), operatorList(c, "clientprofiles"), operatorList(c, "cephconnections"),
		List("persistentvolumeclaims", core.PersistentVolumeClaims("").List, func(l *v1.PersistentVolumeClaimList) (string, []v1.PersistentVolumeClaim) { return l.Continue, l.Items }),
		List("pods", core.Pods("").List, func(l *v1.PodList) (string, []v1.Pod) { return l.Continue, l.Items }),
		List("deployments", apps.Deployments("").List, func(l *appsv1.DeploymentList) (string, []appsv1.Deployment) { return l.Continue, l.Items }),
		List("statefulsets", apps.StatefulSets("").List, func(l *appsv1.StatefulSetList) (string, []appsv1.StatefulSet) { return l.Continue, l.Items }),
		List("daemonsets", apps.DaemonSets("").List, func(l *appsv1.DaemonSetList) (string, []appsv1.DaemonSet) { return l.Continue, l.Items }),
		List("replicasets", apps.ReplicaSets("").List, func(l *appsv1.ReplicaSetList) (string, []appsv1.ReplicaSet) { return l.Continue, l.Items }),
		List("jobs", batch.Jobs("").List, func(l *batchv1.JobList) (string, []batchv1.Job) { return l.Continue, l.Items }),
		List("cronjobs", batch.CronJobs("").List, func(l *batchv1.CronJobList) (string, []batchv1.CronJob) { return l.Continue, l.Items }),
		List("replicationcontrollers", core.ReplicationControllers("").List, func(l *v1.ReplicationControllerList) (string, []v1.ReplicationController) { return l.Continue, l.Items }),
	}
	if withNodes {
		out = append(out, List("nodes", core.Nodes().List, func(l *v1.NodeList) (string, []v1.Node) { return l.Continue, l.Items }))
	}
	if withSecrets {
		out = append(out, List("secrets", core.Secrets("").List, func(l *v1.SecretList) (string, []v1.Secret) { return l.Continue, l.Items }))
	}
	return append(out, List("persistentvolumes", core.PersistentVolumes().List, func(l *v1.PersistentVolumeList) (string, []v1.PersistentVolume) { return l.Continue, l.Items }))
}

// operatorList lists the ceph-csi-operator's objects of a resource, as
// they are (csi.ceph.io/v1); none where the cluster has no such resource.
func operatorList(c kubernetes.Interface, resource string) Lister {
	return Lister{resource + "." + operatorGroup, func(ctx context.Context, o metav1.ListOptions) (string, func(Sink) int, error) {
		req := c.Discovery().RESTClient().Get().AbsPath("/apis/"+operatorGroup+"/v1/"+resource).Param("limit", strconv.FormatInt(o.Limit, 10))
		if o.Continue != "" {
			req = req.Param("continue", o.Continue)
		}
		b, err := req.SetHeader("Accept", runtime.ContentTypeJSON).DoRaw(ctx)
		if apierrors.IsNotFound(err) {
			return "", func(Sink) int { return 0 }, nil
		}
		if err != nil {
			return "", nil, err
		}
		var l unstructured.UnstructuredList
		if err := l.UnmarshalJSON(b); err != nil {
			return "", nil, err
		}
		for i := range l.Items {
			l.Items[i].SetManagedFields(nil)
		}
		return l.GetContinue(), func(sink Sink) int { return addAll(sink, l.Items) }, nil
	}}
}

// PageSize is the page size of the lists ReadLive and dump make.
const PageSize = 1000

// ReadLive lists the kinds of Listers into sink, page by page
// (PageSize objects a request), so memory does not grow with the
// cluster beyond what the sink keeps and a few pages in flight. The next
// pages are requested while the sink takes the last one (fetchPages).
// Secrets are only read when withSecrets is set
// (reading them needs the right to), Nodes when withNodes is. A sink that
// says it Drops every object of a kind is not handed that kind, nor told
// it was listed.
func ReadLive(ctx context.Context, c kubernetes.Interface, sink Sink, withSecrets, withNodes bool, progress func(int), stderr io.Writer) error {
	if !withSecrets {
		fmt.Fprintln(stderr, "Secrets not read: the fixes they need are not checked (csimigrate plan -live reads them)")
	}
	skips, _ := sink.(interface{ Drops(resource string) bool })
	var srcs []Lister
	for _, src := range Listers(c, withSecrets, withNodes) {
		if skips == nil || !skips.Drops(src.What) {
			srcs = append(srcs, src) // else the sink keeps none of them: not listed
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan fetched, 2)
	go fetchPages(ctx, srcs, pages)
	for p := range pages {
		src := srcs[p.src]
		switch {
		case p.err != nil && src.What == "nodes" && apierrors.IsForbidden(p.err):
			// Only the kubelets' versions (and vSphere's VMs) are not
			// checked then, which the plan says.
			fmt.Fprintf(stderr, "Nodes not read (%v): the kubelets' versions are not checked\n", p.err)
			continue
		case p.err != nil:
			return fmt.Errorf("listing %s: %w", src.What, p.err)
		}
		progress(p.add(sink))
		if p.last {
			// Listed whole: none of a kind is what the cluster has.
			if l, ok := sink.(interface{ Listed(resource string) }); ok {
				l.Listed(src.What)
			}
		}
	}
	return ctx.Err()
}

// fetched is one page of srcs[src] (last: of that kind), or the error that
// ended that kind's list.
type fetched struct {
	src  int
	add  func(Sink) int
	last bool
	err  error
}

// fetchPages lists srcs into out, page by page, and closes it; a kind
// whose list fails is sent its error and not read further (the Reader
// decides whether that ends the read). The kinds before the PVs are read in
// two streams, each kind's pages in order: the planner takes them in any
// order, as it does a file's, and on a cluster of 120,000 PVs the claims
// and the pods are most of the time before the PVs, which the API server
// serves on two cores in less time than one after the other. The PVs come
// last, after every other kind (a PV's plan reads them). It stops when ctx
// ends.
func fetchPages(ctx context.Context, srcs []Lister, out chan<- fetched) {
	defer close(out)
	pvs := -1
	if n := len(srcs); n > 0 && srcs[n-1].What == "persistentvolumes" {
		pvs = n - 1
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if !fetchKind(ctx, i, srcs[i], out) {
					return
				}
			}
		}()
	}
feed:
	for i := range srcs {
		if i == pvs {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if pvs >= 0 {
		fetchKind(ctx, pvs, srcs[pvs], out)
	}
}

// fetchKind lists srcs[i] (src) into out page by page, or sends the error
// that ended its list; false when ctx ended first.
func fetchKind(ctx context.Context, i int, src Lister, out chan<- fetched) bool {
	send := func(f fetched) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		cont, add, err := src.Page(ctx, opts)
		if err != nil {
			return send(fetched{src: i, err: err})
		}
		if !send(fetched{src: i, add: add, last: cont == ""}) {
			return false
		}
		if cont == "" {
			return true
		}
		opts.Continue = cont
	}
}
