package controllercmd

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
)

// Each shipped Deployment's arguments (the kustomize base and its overlays,
// as kubectl kustomize renders them) parse, complete and validate as the
// controller's, with the scope and the adoption the overlay says: the base
// writes nothing (-dry-run), the overlays set the scope explicitly.
func TestDeployArguments(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		check func(t *testing.T, o *options, ctr v1.Container, pod v1.PodSpec)
	}{
		{"deploy/base", func(t *testing.T, o *options, _ v1.Container, _ v1.PodSpec) {
			if !o.ctl.Writer.DryRun {
				t.Errorf("the base does not run with -dry-run: it would write")
			}
		}},
		{"deploy/overlays/act", func(t *testing.T, o *options, _ v1.Container, _ v1.PodSpec) {
			if o.ctl.Writer.DryRun || o.pvSelector == "" || o.classSelector == "" || o.Adopt {
				t.Errorf("act: dry run %t, PV selector %q, class selector %q, adopt %t: want it to write, on labelled objects only", o.ctl.Writer.DryRun, o.pvSelector, o.classSelector, o.Adopt)
			}
		}},
		{"deploy/overlays/adopt-ceph", func(t *testing.T, o *options, ctr v1.Container, pod v1.PodSpec) {
			mounts := map[string]string{}
			for _, m := range ctr.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			if o.ctl.Writer.DryRun || o.pvSelector == "" || !o.Adopt || o.CephFlags.Tools.Keyring != "/etc/ceph/keyring" || o.translation.CephConfig != "/etc/ceph-csi-config/config.json" ||
				mounts["ceph"] != "/etc/ceph" || mounts["ceph-csi-config"] != "/etc/ceph-csi-config" || len(pod.Volumes) != 3 {
				t.Errorf("adopt-ceph: arguments %q, mounts %v, volumes %v: want adoption with the mounted configuration, on labelled objects", ctr.Args, mounts, pod.Volumes)
			}
		}},
		{"deploy/overlays/adopt-vsphere", func(t *testing.T, o *options, ctr v1.Container, _ v1.PodSpec) {
			if o.ctl.Writer.DryRun || o.pvSelector == "" || !o.Adopt || !slices.Equal(o.ctl.Plugins, []string{"kubernetes.io/vsphere-volume"}) || !o.VSphere.Wanted() {
				t.Errorf("adopt-vsphere: arguments %q: want vSphere adoption, on labelled vSphere objects", ctr.Args)
			}
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			b, err := exec.Command("kubectl", "kustomize", filepath.Join("..", "..", tc.dir)).Output()
			if err != nil {
				msg := ""
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					msg = string(ee.Stderr)
				}
				t.Fatalf("kubectl kustomize %s (Debian's kubectl package): %v %s", tc.dir, err, msg)
			}
			var d *appsv1.Deployment
			for doc := range strings.SplitSeq(string(b), "\n---\n") {
				var obj appsv1.Deployment
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatalf("%s: %v", tc.dir, err)
				}
				if obj.Kind == "Deployment" {
					d = &obj
				}
			}
			if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
				t.Fatalf("%s renders no Deployment with a container", tc.dir)
			}
			ctr := d.Spec.Template.Spec.Containers[0]
			if len(ctr.Args) == 0 || ctr.Args[0] != "controller" {
				t.Fatalf("arguments %q: want the controller command", ctr.Args)
			}
			o := &options{}
			fs := cli.NewFlagSet("controller", "", io.Discard)
			o.Register(fs)
			if err := fs.Parse(ctr.Args[1:]); err != nil {
				t.Fatalf("arguments %q: %v", ctr.Args, err)
			}
			if err := o.Complete(fs); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, o, ctr, d.Spec.Template.Spec)
		})
	}
}
