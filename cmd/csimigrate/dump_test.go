package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csimigrate/csimigrate/apply/testenv"
	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// csimigrate dump on a real cluster: the plan of the dump is the plan of
// the live cluster, and nothing secret leaves it: no Secret value but the
// user names Ceph CSI's checks compare (in data, stringData or kubectl's
// last-applied annotation), no container's literal env value, no config
// map but Ceph CSI's.
func TestDumpPlansAsLive(t *testing.T) {
	c, kc := startServer(t)
	ctx := context.Background()
	testenv.Seed(t, c, "full")
	const (
		cephKey  = "AQD9o0Fd6hQRChAAt7fMaSZXduT3NWEqylNpmg=="
		envValue = "token-from-a-literal-env-value"
		cmValue  = "password-in-an-application-config-map"
	)
	applied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"applied","namespace":"default"},"stringData":{"key":"` + cephKey + `"}}`
	for _, s := range []*v1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "rbd-tenant", Namespace: "default"}, Type: "kubernetes.io/rbd",
			StringData: map[string]string{"key": cephKey, "adminId": "tenant"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "applied", Namespace: "default", Annotations: map[string]string{v1.LastAppliedConfigAnnotation: applied}},
			StringData: map[string]string{"key": cephKey}},
	} {
		if _, err := c.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Data: map[string]string{"settings": cmValue}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "web", Env: []v1.EnvVar{{Name: "TOKEN", Value: envValue}}}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dump, stderr, code := runCmd(t, "", "dump", "-kubeconfig", kc)
	if code != cli.ExitOK {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	// Every Secret value of the cluster but the user names.
	secrets, err := c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaks := []string{envValue, cmValue}
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if len(v) > 0 && k != "adminId" && k != "adminID" && k != "userID" {
				leaks = append(leaks, string(v), base64.StdEncoding.EncodeToString(v))
			}
		}
	}
	for _, l := range leaks {
		if strings.Contains(dump, l) {
			t.Errorf("the dump holds %q", l)
		}
	}
	var list struct {
		Items []struct {
			Kind     string
			Metadata metav1.ObjectMeta
			Data     map[string]string
		}
	}
	if err := json.Unmarshal([]byte(dump), &list); err != nil {
		t.Fatalf("the dump is no JSON List: %v", err)
	}
	kinds := map[string]int{}
	for _, it := range list.Items {
		kinds[it.Kind]++
		if it.Kind == "Secret" && it.Metadata.Name == "rbd-tenant" && it.Data["adminId"] != "dGVuYW50" { // base64 "tenant"
			t.Errorf("rbd-tenant's adminId %q, want the user name kept", it.Data["adminId"])
		}
		if it.Kind == "ConfigMap" && it.Metadata.Name == "app" {
			t.Errorf("the dump holds config map %s/%s, which no reader needs", it.Metadata.Namespace, it.Metadata.Name)
		}
	}
	for _, k := range []string{"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "Secret", "CSIDriver", "ConfigMap", "Deployment"} {
		if kinds[k] == 0 {
			t.Errorf("the dump has no %s (%v)", k, kinds)
		}
	}

	// The plan of the dump is the plan of the live cluster.
	file := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	fromDump, stderr, code := runCmd(t, "", "plan", "-f", file, "-o", "json")
	if code != cli.ExitOK && code != cli.ExitBlocked {
		t.Fatalf("plan -f dump: exit %d: %s", code, stderr)
	}
	live, stderr, liveCode := runCmd(t, "", "plan", "-live", "-kubeconfig", kc, "-o", "json")
	if liveCode != code {
		t.Fatalf("plan -live: exit %d, plan of the dump %d: %s", liveCode, code, stderr)
	}
	if diff := cmp.Diff(live, fromDump); diff != "" {
		t.Errorf("the plan of the dump differs from plan -live (-live +dump):\n%s", diff)
	}
}
