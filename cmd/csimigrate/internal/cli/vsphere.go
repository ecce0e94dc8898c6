package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/apply/vcenter"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
)

// VSphereFlags say whether and how plan reads vCenter: connected as the
// vSphere CSI driver is, by its csi-vsphere.conf (a file, or with -live the
// driver's Secret).
type VSphereFlags struct {
	ReadVCenter bool
	conf        string
	secret      string
	// given says which of the flags were given (complete).
	given map[string]bool
}

// defaultVSphereSecret is where the vSphere CSI driver's installation keeps
// csi-vsphere.conf.
const defaultVSphereSecret = "vmware-system-csi/vsphere-config-secret"

// Register registers plan's flags (withRead) or rewrite's (-vsphere-conf
// and -vsphere-secret, with -adopt).
func (v *VSphereFlags) Register(fs *flag.FlagSet, withRead bool) {
	if !withRead {
		fs.StringVar(&v.conf, "vsphere-conf", "", "with -adopt: the vSphere CSI driver's csi-vsphere.conf, to adopt each in-tree vSphere PV's disk: registered as a First Class Disk and CNS volume (as the driver's syncer does) where it is not one, the PV given its First Class Disk ID as handle (snapshots work); the password is never printed")
		fs.StringVar(&v.secret, "vsphere-secret", defaultVSphereSecret, "with -adopt: namespace/name of the Secret holding csi-vsphere.conf, read when given instead of -vsphere-conf")
		return
	}
	fs.BoolVar(&v.ReadVCenter, "read-vsphere", false, "read vCenter (as the vSphere CSI driver's configuration says: -vsphere-conf, or with -live -vsphere-secret) to judge the vSphere environment, each in-tree vSphere volume's datastore, disk, storage policy and registration, and each vSphere class's datastore and policy")
	fs.StringVar(&v.conf, "vsphere-conf", "", "with -read-vsphere: the vSphere CSI driver's csi-vsphere.conf (its [VirtualCenter] section's host, user, password, port, datacenters; the password is never printed)")
	fs.StringVar(&v.secret, "vsphere-secret", defaultVSphereSecret, "with -read-vsphere -live and no -vsphere-conf: namespace/name of the Secret holding csi-vsphere.conf")
}

// Complete records which of the flags were given.
func (v *VSphereFlags) Complete(fs *flag.FlagSet) {
	v.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { v.given[f.Name] = true })
}

// Wanted: rewrite reaches vCenter (-vsphere-conf or -vsphere-secret given).
func (v *VSphereFlags) Wanted() bool { return v.given["vsphere-conf"] || v.given["vsphere-secret"] }

// Validate refuses the vCenter flags without -read-vsphere, and
// -read-vsphere without a csi-vsphere.conf to read (a file, or with live
// the driver's Secret).
func (v *VSphereFlags) Validate(live bool) error {
	if !v.ReadVCenter && (v.given["vsphere-conf"] || v.given["vsphere-secret"]) {
		return errors.New("-vsphere-conf and -vsphere-secret only with -read-vsphere")
	}
	if v.ReadVCenter && v.conf == "" && !live {
		return errors.New("-read-vsphere needs -vsphere-conf FILE (the driver's csi-vsphere.conf), or -live to read the driver's Secret")
	}
	if _, err := SecretRef(v.secret); err != nil {
		return fmt.Errorf("-vsphere-secret %q: %w", v.secret, err)
	}
	return nil
}

// config reads csi-vsphere.conf from the file or, with a client, the
// driver's Secret.
func (v *VSphereFlags) config(ctx context.Context, client kubernetes.Interface) (*vcenter.Config, error) {
	var data []byte
	if v.conf != "" {
		b, err := os.ReadFile(v.conf)
		if err != nil {
			return nil, fmt.Errorf("-vsphere-conf: %w", err)
		}
		data = b
	} else {
		ref, err := SecretRef(v.secret)
		if err != nil {
			return nil, fmt.Errorf("-vsphere-secret %q: %w", v.secret, err)
		}
		if client == nil {
			return nil, errors.New("reading the driver's Secret needs the cluster")
		}
		s, err := client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("the vSphere CSI driver's Secret %s/%s: %w (give -vsphere-conf or -vsphere-secret)", ref.Namespace, ref.Name, err)
		}
		if data = s.Data[vcenter.ConfigKey]; len(data) == 0 {
			return nil, fmt.Errorf("the vSphere CSI driver's Secret %s/%s has no %s", ref.Namespace, ref.Name, vcenter.ConfigKey)
		}
	}
	cfg, err := vcenter.ParseConfig(data)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Open connects to the configuration's vCenter, and with a client reads the
// driver's migration mappings (nil without).
func (v *VSphereFlags) Open(ctx context.Context, client kubernetes.Interface, logger klog.Logger) (*vcenter.Client, map[string]string, error) {
	cfg, err := v.config(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	vc, err := vcenter.Dial(ctx, cfg, logger)
	if err != nil {
		if errors.Is(err, vcenter.ErrLogin) {
			return nil, nil, fmt.Errorf("%w (check the user and password of the driver's configuration)", err)
		}
		return nil, nil, err
	}
	if client == nil || !v.ReadVCenter {
		return vc, nil, nil
	}
	mappings, err := MigrationMappings(ctx, client)
	if err != nil {
		vc.Close()
		return nil, nil, err
	}
	return vc, mappings, nil
}

// MigrationMappings lists the vSphere CSI driver's CnsVSphereVolumeMigration
// objects: volume path to volume ID (empty where the driver never ran and
// its resource does not exist).
func MigrationMappings(ctx context.Context, client kubernetes.Interface) (map[string]string, error) {
	out := map[string]string{}
	cont := ""
	for {
		req := client.CoreV1().RESTClient().Get().AbsPath("/apis/cns.vmware.com/v1alpha1/cnsvspherevolumemigrations").Param("limit", "500")
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.SetHeader("Accept", runtime.ContentTypeJSON).DoRaw(ctx)
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing the vSphere CSI driver's CnsVSphereVolumeMigration objects: %w", err)
		}
		var list struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					VolumePath string `json:"volumepath"`
					VolumeID   string `json:"volumeid"`
				} `json:"spec"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("the CnsVSphereVolumeMigration list: %w", err)
		}
		for _, it := range list.Items {
			id := it.Spec.VolumeID
			if id == "" {
				id = it.Metadata.Name
			}
			out[vsphere.CanonicalVolumePath(it.Spec.VolumePath)] = id
		}
		if cont = list.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
}
