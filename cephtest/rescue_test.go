package cephtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/nodetest"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/rewrite"
)

// The rescue's objects (namespace default, as the journey's).
const (
	rClass  = "rescue-rbd"    // in-tree RBD class (Delete)
	rOrders = "rescue-orders" // dynamic RBD PV of the class, claim orders-db, StatefulSet orders
	rStatic = "rescue-static" // static RBD PV (Retain, no class), claim static-data, pod static-app
	rFS     = "rescue-fs"     // static CephFS PV, claim fs-data, pod fs-app
	rFSUser = "rescue"
	rFSDir  = "volumes/rescue"
)

// rescue is TestCephRescue137's cluster and the commands it ran, as
// docs/rescue.md words them.
type rescue struct {
	*journey
	rescueRan map[string]bool
	// reviewFile is where the review was saved (review.sh).
	reviewFile string
}

// TestCephRescue137 is docs/rescue.md on the cluster it is written for: a
// Kubernetes 1.37.2 control plane (never upgraded: created past the
// removal) and a hollow kubelet, with in-tree RBD PVs (a dynamic one with
// Delete, of an in-tree class, under a StatefulSet, and a static one under
// a pod) and a static CephFS PV under a pod, each bound, their pods stuck,
// and no Ceph CSI installed (no CSIDriver, no config map). It checks the
// symptoms the page quotes, then follows the page: the plan names what is
// broken and the stuck pods with their workload, and gives the rescue in
// order; the ceph-csi-operator (the real one) is given the objects of
// `plan -o ceph-csi`, deploys the drivers' CSIDrivers and renders the
// entry, which the running Ceph CSI drivers read; the plan's Secrets are
// created; the workloads are stopped; the review and the apply take the
// rescue's targets; the workloads start. Afterwards the pods run, the
// plan finds nothing to migrate, the kubelet stages the RBD volume through
// its CSI driver with the PV's handle, Ceph CSI expands that handle's
// image, Ceph CSI stages the CephFS volume and its file written before is
// there, a claim on the replaced class provisions, and the Delete PV's
// claim, deleted, deletes its image. Every `kubectl csimigrate` command of
// the page is one the test ran.
func TestCephRescue137(t *testing.T) {
	c, d := cephEnv(t)
	opDir, err := operatorDir()
	if err != nil {
		t.Fatal(err)
	}
	r := &rescue{journey: &journey{t: t, c: c, d: d, pool: "kube.rescue", ctx: context.Background(), ran: map[string]bool{}}, rescueRan: map[string]bool{}}
	j := r.journey
	createPool(t, c, j.pool)
	ordersImage, staticImage := "kubernetes-dynamic-pvc-"+NewUUID(), "static-"+NewUUID()
	for _, img := range []string{ordersImage, staticImage} {
		if _, err := c.RBD(callCtx(t), "create", "--size", "64M", "--image-feature", "layering", j.pool+"/"+img); err != nil {
			t.Fatal(err)
		}
	}
	fsKey := r.cephFSDir()

	// Kubernetes 1.37, no Ceph CSI: kube-controller-manager with the
	// volume, attach/detach and StatefulSet controllers, a hollow kubelet,
	// external-provisioner and the attacher's part waiting for the driver.
	srv := j.startServer(testenv.V1_37)
	// No Ceph CSI: neither its CSIDrivers nor its config map.
	if err := srv.RemoveCSIDrivers(plugin.RBDDriverName, plugin.CephFSDriverName); err != nil {
		t.Fatal(err)
	}
	if err := j.cs.CoreV1().ConfigMaps("ceph-csi").Delete(j.ctx, "ceph-csi-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllers := append(slices.Clone(testenv.VolumeControllers), "persistentvolume-attach-detach-controller", "statefulset-controller")
	if err := srv.StartControllerManagerFlags(&j.logs, []string{"--attach-detach-reconcile-sync-period=10s"}, controllers...); err != nil {
		t.Fatal(err)
	}
	root, err := srv.StartHollowNode(&j.logs, jNode1, "")
	if err != nil {
		t.Fatal(err)
	}
	j.startProvisioner()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// external-attacher's part for both drivers: the operator's CSIDriver
	// says whether a driver's volumes attach.
	testenv.PlayAttacher(ctx, t, j.cs, plugin.RBDDriverName)
	testenv.PlayAttacher(ctx, t, j.cs, plugin.CephFSDriverName)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-controller-manager:\n%s\nhollow-node-%s:\n%s", srv.Logs("kube-controller-manager"), jNode1, srv.Logs("hollow-node-"+jNode1))
		}
	})
	r.create(map[string]string{rOrders: ordersImage, rStatic: staticImage}, fsKey)
	for _, pod := range []string{"orders-0", "static-app", "fs-app"} {
		r.waitStuck(pod)
	}
	r.symptoms("orders-0", rOrders)

	// 1. The plan of the cluster, with no input named: what is broken, the
	// stuck pods, and the rescue in order.
	text := r.run(1, "plan", "-kubeconfig", j.kc)
	for _, want := range []string{"KUBERNETES: the API server runs " + testenv.V1_37.Version + "; the plan is for 1.37", "BROKEN NOW", "RESCUE",
		"default/orders-0", "StatefulSet default/orders", "default/static-app", "default/fs-app", "ContainerCreating"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
	// No step names a gate 1.37 lacks.
	if strings.Contains(text, "CSIMigrationRBD") || strings.Contains(text, "CSIMigrationCephFS") {
		t.Errorf("the plan on 1.37 names a feature gate 1.37 does not have:\n%s", text)
	}
	p := r.plan()
	var broken []string
	for _, b := range p.Broken {
		broken = append(broken, b.PV)
	}
	slices.Sort(broken)
	if want := []string{rFS, rOrders, rStatic}; !slices.Equal(broken, want) {
		t.Errorf("the plan's broken PVs %v, want %v", broken, want)
	}
	if got, want := rescueSteps(p), []string{plan.RescueDriver, plan.RescueSecrets, plan.RescueStop, plan.RescueRewrite, plan.RescueStart}; !slices.Equal(got, want) {
		t.Errorf("the rescue's steps %v, want %v: %+v", got, want, p.Rescue)
	}

	// 2. The driver: the ceph-csi-operator installed (its CRDs and its
	// deployment), then given what plan -o ceph-csi prints.
	r.installOperator(opDir)
	// The drivers' node plugins register on the node (what the
	// operator's DaemonSets run, which no kubelet runs here).
	plugins := map[string]*nodetest.NodePlugin{}
	for _, drv := range []string{plugin.RBDDriverName, plugin.CephFSDriverName} {
		plugins[drv] = nodetest.StartNodePlugin(t, root, drv, jNode1)
	}

	// 3. The Secrets the plan lists.
	p = r.plan()
	j.createSecrets(p.Secrets)

	// 4. The workloads stopped, the review and the rewrite of the
	// rescue's targets, the workloads started.
	p = r.plan()
	var targets []string
	for _, s := range p.Rescue {
		if s.Step == plan.RescueRewrite {
			targets = s.Objects
		}
	}
	if want := []string{rOrders, rStatic, rFS, "storageclass/" + rClass}; !sameSet(targets, want) {
		t.Fatalf("the rescue rewrites %v, want %v", targets, want)
	}
	// The rescue's stop step as it says: the StatefulSet scaled to zero,
	// its stuck pod deleted (the scale-down waits on it), the pods of
	// their own deleted; then waited for (a stuck pod goes once the
	// kubelet's wait for its volumes ends).
	stop := p.Rescue[slices.IndexFunc(p.Rescue, func(s plan.RescueStep) bool { return s.Step == plan.RescueStop })]
	if !slices.Equal(stop.Delete, []string{jNS + "/orders-0"}) {
		t.Errorf("the stop step deletes %v, want the StatefulSet's stuck pod", stop.Delete)
	}
	var pods []string
	for _, obj := range stop.Objects {
		switch kind, ref, _ := strings.Cut(obj, " "); kind {
		case "StatefulSet":
			r.scale(strings.TrimPrefix(ref, jNS+"/"), 0, false)
		case "Pod":
			pods = append(pods, ref)
		default:
			t.Errorf("the stop step names %s", obj)
		}
	}
	for _, ref := range append(pods, stop.Delete...) {
		if err := j.cs.CoreV1().Pods(jNS).Delete(j.ctx, strings.TrimPrefix(ref, jNS+"/"), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitGone()
	review := r.run(0, append([]string{"rewrite", "-kubeconfig", j.kc}, targets...)...)
	for _, pv := range []string{rOrders, rStatic, rFS} {
		if !strings.Contains(review, "rewrite_pv "+pv+" ") {
			t.Errorf("the review has no step of %s:\n%s", pv, review)
		}
	}
	r.reviewFile = filepath.Join(t.TempDir(), "review.sh")
	if err := os.WriteFile(r.reviewFile, []byte(review), 0o600); err != nil {
		t.Fatal(err)
	}
	out := r.run(0, append([]string{"rewrite", "-apply", "-review", r.reviewFile, "-kubeconfig", j.kc}, targets...)...)
	if !strings.Contains(out, "the run is the one reviewed in") {
		t.Errorf("rewrite -apply -review did not check the review:\n%s", out)
	}
	t.Logf("rewrite -apply:\n%s", out)
	r.scale("orders", 1, false)
	testenv.WaitPodRunning(t, j.cs, jNS, "orders-0", 120*time.Second)
	j.runPod("static-app", jNode1, "static-data")
	j.runPod("fs-app", jNode1, "fs-data")

	// 5. The check.
	if after := r.run(0, "plan", "-kubeconfig", j.kc); !strings.Contains(after, "RESULT: nothing to migrate") {
		t.Errorf("the plan after the rescue:\n%s", after)
	}
	for claim, pv := range map[string]string{"orders-db": rOrders, "static-data": rStatic, "fs-data": rFS} {
		waitBound(t, j.cs, jNS, claim, pv)
	}
	orders := j.pv(rOrders)
	if orders.Spec.CSI == nil || orders.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Fatalf("%s after the rescue: %+v", rOrders, orders.Spec)
	}
	// The kubelet staged the RBD volume through its driver, with the
	// handle Ceph CSI resolves to the volume's own image (its expansion
	// grows that image).
	staged := false
	for _, call := range plugins[plugin.RBDDriverName].Since(0) {
		staged = staged || call.Method == "NodeStageVolume" && call.VolumeID == orders.Spec.CSI.VolumeHandle
	}
	if !staged {
		t.Errorf("the kubelet did not stage %s's handle %s through %s: %+v", rOrders, orders.Spec.CSI.VolumeHandle, plugin.RBDDriverName, plugins[plugin.RBDDriverName].Since(0))
	}
	j.expand(orders, ordersImage)
	j.stageCephFS(j.pv(rFS))
	j.provision(rClass, orders.Spec.Capacity)
	r.scale("orders", 0, true)
	j.deleteClaim("orders-db", rOrders, ordersImage)
	r.pageRan()
}

// cephFSDir makes the CephFS volume's directory with the journey's file,
// authorizes its user there, and returns the user's key.
func (r *rescue) cephFSDir() string {
	t, c := r.t, r.c
	mnt := adminMount(t, c)
	if err := os.MkdirAll(filepath.Join(mnt, rFSDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, rFSDir, jCephFSFile), []byte(jFSContent), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := callCtx(t)
	if _, err := c.Ceph(ctx, "fs", "authorize", FSName, "client."+rFSUser, "/"+rFSDir, "rw"); err != nil {
		t.Fatal(err)
	}
	key, err := c.Ceph(ctx, "auth", "get-key", "client."+rFSUser)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(key)
}

// create makes the rescue's in-tree objects on 1.37: the class and its
// admin secret, the PVs bound to their claims, the StatefulSet orders
// and the pods static-app and fs-app.
func (r *rescue) create(images map[string]string, fsKey string) {
	t, j := r.t, r.journey
	admin := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ceph-admin", Namespace: jNS}, Type: "kubernetes.io/rbd", Data: map[string][]byte{"key": []byte(j.c.AdminKey)}}
	fsSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cephfs-rescue", Namespace: "apps"}, Data: map[string][]byte{"key": []byte(fsKey)}}
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().Namespaces().Create(j.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().ServiceAccounts(jNS).Create(j.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		return err
	})
	for _, s := range []*v1.Secret{admin, fsSecret} {
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().Secrets(s.Namespace).Create(j.ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	sc := inTreeRBDClass(rClass, j.pool, admin.Name)
	mustCreate(t, func() error {
		_, err := j.cs.StorageV1().StorageClasses().Create(j.ctx, sc, metav1.CreateOptions{})
		return err
	})
	rbd := func(name string) *v1.PersistentVolume {
		return inTreeRBDPV(name, rbdCase{Monitors: []string{MonitorV1}, Pool: j.pool, Image: images[name]}, "admin", admin.Name)
	}
	static := rbd(rStatic)
	static.Annotations, static.Spec.PersistentVolumeReclaimPolicy = nil, v1.PersistentVolumeReclaimRetain
	for _, v := range []struct {
		pv           *v1.PersistentVolume
		claim, class string
	}{{rbd(rOrders), "orders-db", rClass}, {static, "static-data", ""}, {inTreeCephFSPV(rFS, "/"+rFSDir, rFSUser, fsSecret.Name), "fs-data", ""}} {
		v.pv.Spec.StorageClassName = v.class
		v.pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: jNS, Name: v.claim}
		claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: v.claim, Namespace: jNS},
			Spec: v1.PersistentVolumeClaimSpec{AccessModes: v.pv.Spec.AccessModes, StorageClassName: &v.class, VolumeName: v.pv.Name,
				Resources: v1.VolumeResourceRequirements{Requests: v.pv.Spec.Capacity}}}
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().PersistentVolumes().Create(j.ctx, v.pv, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().PersistentVolumeClaims(jNS).Create(j.ctx, claim, metav1.CreateOptions{})
			return err
		})
		waitBound(t, j.cs, jNS, v.claim, v.pv.Name)
	}
	// The StatefulSet's pod runs on the hollow node (no scheduler runs).
	pod := testenv.PodOn(jNS, "", jNode1, "orders-db")
	one := int32(1)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: jNS},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, ServiceName: "orders", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "orders"}}, Spec: pod.Spec}}}
	mustCreate(t, func() error {
		_, err := j.cs.AppsV1().StatefulSets(jNS).Create(j.ctx, sts, metav1.CreateOptions{})
		return err
	})
	for name, claim := range map[string]string{"static-app": "static-data", "fs-app": "fs-data"} {
		mustCreate(t, func() error {
			_, err := j.cs.CoreV1().Pods(jNS).Create(j.ctx, testenv.PodOn(jNS, name, jNode1, claim), metav1.CreateOptions{})
			return err
		})
	}
}

// waitStuck waits until the pod exists and its status shows that it
// cannot start (rewrite.PodStuck), as the plan reads it.
func (r *rescue) waitStuck(name string) {
	poll(r.t, 120*time.Second, "pod "+name+" stuck", func() (bool, string) {
		p, err := r.cs.CoreV1().Pods(jNS).Get(r.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rewrite.PodStuck(p) != "", fmt.Sprintf("%s %+v %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
}

// symptoms checks what docs/rescue.md quotes of a stuck pod (its status
// is waitStuck's): the kubelet's mount error, which its FailedMount Event
// carries (the hollow kubelet records no Events, its log has the error),
// and its log naming the PV with "no volume plugin matched".
func (r *rescue) symptoms(pod, pv string) {
	t := r.t
	log := r.srv.LogPath("hollow-node-" + jNode1)
	poll(t, 150*time.Second, "the kubelet's mount error of "+pod, func() (bool, string) {
		b, err := os.ReadFile(log)
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "unmounted volumes=[data]") && strings.Contains(line, pod) {
				return true, ""
			}
		}
		return false, "no line of " + pod + " with unmounted volumes=[data]"
	})
	testenv.LogHas(t, log, "no volume plugin matched", pv)
}

// installOperator installs the ceph-csi-operator (its CRDs, its
// namespace, the operator), gives it the objects plan -o ceph-csi prints
// (kubectl apply -f -: created, as none exists), waits until it has
// created the CSIDrivers and rendered the cluster entry, and has the
// running Ceph CSI drivers read what it rendered.
func (r *rescue) installOperator(dir string) {
	t, j := r.t, r.journey
	dyn, err := dynamic.NewForConfig(j.srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	createCRDs(t, dyn, filepath.Join(dir, "crd"), 5)
	poll(t, 30*time.Second, "the operator's API", func() (bool, string) {
		_, err := dyn.Resource(driverGVR).Namespace("default").List(j.ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	const ns = "ceph-csi-operator-system"
	mustCreate(t, func() error {
		_, err := j.cs.CoreV1().Namespaces().Create(j.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	})
	if err := j.srv.SpawnEnv("ceph-csi-operator", []string{"OPERATOR_NAMESPACE=" + ns, "KUBECONFIG=" + j.kc}, filepath.Join(dir, "ceph-csi-operator"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false"); err != nil {
		t.Fatalf("cannot start the ceph-csi-operator: %v", err)
	}
	objects := r.run(1, "plan", "-o", "ceph-csi", "-kubeconfig", j.kc)
	gvrOf := map[string]schema.GroupVersionResource{"Driver": driverGVR, "CephConnection": cephConnectionGVR, "ClientProfile": clientProfileGVR}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(objects), 4096)
	var kinds []string
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("plan -o ceph-csi: %v\n%s", err, objects)
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
		if _, err := dyn.Resource(gvrOf[u.GetKind()]).Namespace(u.GetNamespace()).Create(j.ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refuses %s of plan -o ceph-csi: %v", u.GetKind(), err)
		}
	}
	id := ceph.EntryFor([]string{MonitorV1}).ClusterID
	if want := []string{"Driver/" + plugin.RBDDriverName, "Driver/" + plugin.CephFSDriverName, "CephConnection/" + id, "ClientProfile/" + id}; !sameSet(kinds, want) {
		t.Errorf("plan -o ceph-csi printed %v, want %v", kinds, want)
	}
	var rendered string
	poll(t, 90*time.Second, "the operator to create the CSIDrivers and render the entry", func() (bool, string) {
		for _, drv := range []string{plugin.RBDDriverName, plugin.CephFSDriverName} {
			if _, err := j.cs.StorageV1().CSIDrivers().Get(j.ctx, drv, metav1.GetOptions{}); err != nil {
				return false, "CSIDriver " + drv + ": " + err.Error() + "\n" + j.srv.Logs("ceph-csi-operator")
			}
		}
		var ok bool
		rendered, ok = entryRendered(j.ctx, j.srv, ns, id)
		return ok, rendered
	})
	if err := j.d.SetConfig([]byte(rendered)); err != nil {
		t.Fatal(err)
	}
	for _, drv := range []string{plugin.RBDDriverName, plugin.CephFSDriverName} {
		if d, err := j.cs.StorageV1().CSIDrivers().Get(j.ctx, drv, metav1.GetOptions{}); err == nil && d.Spec.AttachRequired != nil {
			t.Logf("the operator's CSIDriver %s: attachRequired %v", drv, *d.Spec.AttachRequired)
		}
	}
}

// scale sets a StatefulSet's replicas, as kubectl scale does; with wait,
// until it has that many pods.
func (r *rescue) scale(name string, replicas int32, wait bool) {
	t := r.t
	if _, err := r.cs.AppsV1().StatefulSets(jNS).UpdateScale(r.ctx, name, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: jNS},
		Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !wait {
		return
	}
	poll(t, 120*time.Second, fmt.Sprintf("StatefulSet %s at %d pods", name, replicas), func() (bool, string) {
		pods, err := r.cs.CoreV1().Pods(jNS).List(r.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == int(replicas), fmt.Sprint(len(pods.Items))
	})
}

// waitGone waits until no pod is left in the namespace (a stuck pod goes
// once the kubelet's wait for its volumes ends, about two minutes).
func (r *rescue) waitGone() {
	poll(r.t, 240*time.Second, "the stopped pods to go", func() (bool, string) {
		pods, err := r.cs.CoreV1().Pods(jNS).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s deleted at %v: %s", p.Name, p.DeletionTimestamp, rewrite.PodStuck(&p)))
		}
		return len(pods.Items) == 0, strings.Join(states, "; ")
	})
}

// plan is `csimigrate plan -o json` of the live cluster.
func (r *rescue) plan() *plan.Plan {
	r.t.Helper()
	return r.journey.plan("-kubeconfig", r.kc)
}

// rescueSteps are the steps of the plan's rescue, in order.
func rescueSteps(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Rescue {
		out = append(out, s.Step)
	}
	return out
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// run runs the command, which must exit with code, and returns its
// standard output; it notes the command as docs/rescue.md words it:
// without -kubeconfig, the rescue's PVs as "PV...", its class as
// storageclass/CLASS.
func (r *rescue) run(code int, args ...string) string {
	r.t.Helper()
	words := []string{"csimigrate"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-kubeconfig":
			i++
			continue
		case "storageclass/" + rClass:
			a = "storageclass/CLASS"
		case r.reviewFile:
			a = "review.sh"
		case rOrders, rStatic, rFS:
			if words[len(words)-1] == "PV..." {
				continue
			}
			a = "PV..."
		}
		words = append(words, a)
	}
	r.rescueRan[strings.Join(words, " ")] = true
	return r.journey.csimigrate(code, args...)
}

// pageRan fails the test for each `kubectl csimigrate` command of
// docs/rescue.md's code blocks that the test did not run.
func (r *rescue) pageRan() {
	testenv.PageRan(r.t, "../docs/rescue.md", "", "", r.rescueRan, 4)
}
