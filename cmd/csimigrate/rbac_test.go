package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// commandRBAC is the manifest of the rights the command needs.
const commandRBAC = "deploy/command-rbac.yaml"

// The command run with exactly the rights deploy/command-rbac.yaml grants
// (a ServiceAccount bound to its roles; the manifest's own bindings, to a
// group, are created as they are): plan -live, dump, the review, rewrite
// -apply and the undo each do their whole job with no request refused, and
// the roles grant nothing these did not use.
func TestCommandRBAC(t *testing.T) {
	s, err := testenv.Start(os.Stderr)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	c := s.Client
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(commandRBAC)
	if err != nil {
		t.Fatal(err)
	}
	docs := yamlDocs(t, commandRBAC, b)
	createDocs(t, dyn, commandRBAC, docs)

	// The ServiceAccount the command runs as, bound to the manifest's roles.
	const ns, sa = "default", "csimigrate-admin"
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
	roles := 0
	for _, u := range docs {
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: u.GetKind(), Name: u.GetName()}
		meta := metav1.ObjectMeta{Name: "test-" + u.GetName(), Namespace: u.GetNamespace()}
		switch u.GetKind() {
		case "ClusterRole":
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
		case "Role":
			_, err = c.RbacV1().RoleBindings(u.GetNamespace()).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		roles++
	}
	if roles != 3 {
		t.Fatalf("%s: %d roles, want csimigrate-plan, csimigrate-rewrite and the state namespace's Role", commandRBAC, roles)
	}
	kc := serviceAccountKubeconfig(t, s, ns, sa)

	names := testenv.Seed(t, c, "rbac")
	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := runCmd(t, "", append([]string{args[0], "-kubeconfig", kc}, args[1:]...)...)
		if code != cli.ExitOK && code != cli.ExitBlocked {
			t.Fatalf("%s: exit %d: %s\n%s", strings.Join(args, " "), code, stderr, out)
		}
		if strings.Contains(stderr, "forbidden") || strings.Contains(out, "forbidden") {
			t.Fatalf("%s: a request was refused: %s\n%s", strings.Join(args, " "), stderr, out)
		}
		return out
	}
	if out := run("plan", "-live", "-o", "json"); !strings.Contains(out, `"name": "`+names[0]+`"`) {
		t.Errorf("plan -live does not list %s:\n%s", names[0], out)
	}
	if out := run("dump"); !strings.Contains(out, names[0]) {
		t.Errorf("dump does not hold %s", names[0])
	}
	run("rewrite", "-live", "-o", "yaml")
	if out := run(append([]string{"rewrite", "-apply"}, append(slices.Clone(names), "storageclass/rbd-rbac")...)...); !strings.Contains(out, "pv/rbac-vsphere") {
		t.Errorf("rewrite -apply:\n%s", out)
	}
	if pv := getPV(t, c, "rbac-vsphere"); pv.Spec.CSI == nil {
		t.Fatalf("rbac-vsphere not rewritten: %+v", pv.Spec.PersistentVolumeSource)
	}
	run("rewrite", "-undo", "-apply", "rbac-vsphere")
	if pv := getPV(t, c, "rbac-vsphere"); pv.Spec.VsphereVolume == nil {
		t.Fatalf("rbac-vsphere not undone: %+v", pv.Spec.PersistentVolumeSource)
	}
	checkRBACOf(t, s, "system:serviceaccount:"+ns+":"+sa, docs, map[string]string{
		"storage.k8s.io/csinodes get":           "rewrite -online reads the CSINode of each node that runs a pod of the volume (apply's online tests, with kubelets, take that path)",
		"storage.k8s.io/volumeattachments list": "rewrite -online reads the volume's attachments (apply's online tests)",
	})
}
