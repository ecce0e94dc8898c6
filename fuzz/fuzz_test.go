package fuzz

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	storage "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/adopt"
	"github.com/csimigrate/csimigrate/internal/annot"
	"github.com/csimigrate/csimigrate/internal/overrides"
	"github.com/csimigrate/csimigrate/plan"
	"github.com/csimigrate/csimigrate/plugin"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/plugins/vsphere/envcheck"
	"github.com/csimigrate/csimigrate/rewrite"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
	"github.com/csimigrate/csimigrate/volumeid"
)

var logger = klog.Background().V(100)

func FuzzParseRBDHandle(f *testing.F) {
	f.Add("mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c")
	f.Add("mig_mons-_image-_")
	f.Add("0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := volumeid.ParseRBDHandle(s)
		c, cerr := volumeid.CephCSIReadRBDHandle(s)
		if err != nil {
			if !errors.Is(err, volumeid.ErrInvalid) {
				t.Fatalf("error kind: %v", err)
			}
			return
		}
		if h.String() != s {
			t.Fatalf("String() = %q, input %q", h.String(), s)
		}
		if cerr != nil || c != h {
			t.Fatalf("strict %+v, Ceph CSI %+v %v", h, c, cerr)
		}
		b, err := h.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText = %q, %v", b, err)
		}
	})
}

func FuzzParseCephCSIVolumeID(f *testing.F) {
	f.Add("0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003")
	f.Add("0001-0024-7635de36-ab1f-4a70-98a2-a1bd80ba77c4-0000000000000006-6e696bba-064f-11ec-a251-0242ac110002")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := volumeid.ParseCephCSIVolumeID(s)
		if err != nil {
			if !errors.Is(err, volumeid.ErrInvalid) {
				t.Fatalf("error kind: %v", err)
			}
			return
		}
		if id.String() != s {
			t.Fatalf("String() = %q, input %q", id.String(), s)
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("parsed ID does not validate: %v", err)
		}
	})
}

func FuzzParseVSpherePath(f *testing.F) {
	f.Add("[vsanDatastore] kubevols/pvc-1.vmdk")
	f.Add("[DatastoreCluster/ds 1] kubevols/a b.vmdk")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := volumeid.ParseVSpherePath(s)
		_ = volumeid.LooksLikeVSpherePath(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("String() = %q, input %q", p.String(), s)
		}
		_, _ = p.Cluster(), p.DatastoreName()
		// The path as in-tree resolved it: .vmdk once, the rest kept;
		// canonical paths are left alone.
		c := vsphere.CanonicalVolumePath(s)
		if !strings.HasSuffix(c, ".vmdk") || !strings.HasPrefix(c, s) || vsphere.CanonicalVolumePath(c) != c {
			t.Fatalf("CanonicalVolumePath(%q) = %q", s, c)
		}
	})
}

func FuzzCephFSHandle(f *testing.F) {
	f.Add("10.0.0.1:6789", "myfs", "/volumes/a_b c/ü", "mig_cephfs_b7f67366bb43f32e07d8a261a7840da9_"+strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, mons, fs, path, s string) {
		h := volumeid.NewCephFSHandle(strings.Split(mons, ","), fs, path)
		str := h.String()
		if len(str) > 128 {
			t.Fatalf("handle of %d bytes", len(str))
		}
		p, err := volumeid.ParseCephFSHandle(str)
		if err != nil || p != h {
			t.Fatalf("round trip: %+v %v", p, err)
		}
		if q, err := volumeid.ParseCephFSHandle(s); err == nil && q.String() != s {
			t.Fatalf("String() = %q, input %q", q.String(), s)
		}
		// AppendTo writes String's text after whatever the buffer holds.
		if got := string(h.AppendTo([]byte(s))); got != s+str {
			t.Fatalf("AppendTo = %q, want %q", got, s+str)
		}
		rh, _ := volumeid.NewRBDHandle(strings.Split(mons, ","), fs, path)
		if got := string(rh.AppendTo([]byte(s))); got != s+rh.String() {
			t.Fatalf("RBDHandle.AppendTo = %q, want %q", got, s+rh.String())
		}
	})
}

func FuzzEncodeList(f *testing.F) {
	f.Add("a:1\x00b:2")
	f.Add("[x\x00,")
	f.Add("")
	f.Add("<&>\x00\u2028\x00\\\"")
	f.Fuzz(func(t *testing.T, joined string) {
		// Not a plain list, the encoding is encoding/json's, byte for byte,
		// whatever the bytes: annotations written before stay readable.
		if split := strings.Split(joined, "\x00"); strings.HasPrefix(annot.EncodeList(split), "[") {
			want, _ := json.Marshal(split)
			if got := annot.EncodeList(split); got != string(want) {
				t.Fatalf("EncodeList = %q, encoding/json %q", got, want)
			}
		}
		if !utf8.ValidString(joined) {
			// Outside EncodeList's contract: API objects are valid UTF-8.
			// It must still not panic.
			_, _ = annot.DecodeList(annot.EncodeList(strings.Split(joined, "\x00")))
			return
		}
		var list []string
		if joined != "" {
			list = strings.Split(joined, "\x00")
		}
		got, err := annot.DecodeList(annot.EncodeList(list))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(list, got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})
}

// FuzzApplyOverrides: applying the overrides annotation never panics; it
// either applies and removes it, or fails with an error that names it and
// changes nothing in the PV's spec.
func FuzzApplyOverrides(f *testing.F) {
	f.Add(`{"volumeHandle":"0001-0020-x","volumeAttributes":{"adminId":"admin","monitors":"a:1,b:2","tryOtherMounters":null}}`)
	f.Add(`{"readOnly":true,"fsType":"xfs","secretRefs":{"nodeExpand":{"name":"n","namespace":"ns"},"nodeStage":null},"accessModes":[]}`)
	f.Add(`{"secretRefs":{"x":{}}}`)
	f.Add(`{"volumeAttributes":{"a":"\u003c","a":null}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		pv := func(ann string) *v1.PersistentVolume {
			return &v1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pv", Annotations: map[string]string{plugin.AnnCSIOverrides: ann}},
				Spec: v1.PersistentVolumeSpec{
					AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
						Driver: "d", VolumeHandle: "h", VolumeAttributes: map[string]string{"a": "1"},
						NodeStageSecretRef: &v1.SecretReference{Name: "s", Namespace: "ns"},
					}},
				},
			}
		}
		got := pv(raw)
		err := overrides.Apply(got)
		if _, left := got.Annotations[plugin.AnnCSIOverrides]; left {
			t.Fatalf("%q: annotation left in place (err %v)", raw, err)
		}
		if err == nil {
			return
		}
		if !errors.Is(err, plugin.ErrInvalid) || !strings.Contains(err.Error(), plugin.AnnCSIOverrides) {
			t.Fatalf("%q: error %v does not name the annotation", raw, err)
		}
		if diff := cmp.Diff(pv(raw).Spec, got.Spec); diff != "" {
			t.Fatalf("%q: spec changed before the error %v:\n%s", raw, err, diff)
		}
	})
}

func FuzzCephFSCSISecretName(f *testing.F) {
	f.Add("ceph-secret", "kube")
	f.Add("", "")
	f.Add("Ceph_Secret", "user with spaces")
	f.Add(strings.Repeat("a", 250), "admin")
	f.Fuzz(func(t *testing.T, name, user string) {
		n := secrets.CephFSCSISecretName(name, user)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Fatalf("CephFSCSISecretName(%q, %q) = %q: %v", name, user, n, errs)
		}
	})
}

func FuzzCephCSICredentials(f *testing.F) {
	f.Add(`{"key":"AQD==","adminId":"kube"}`)
	f.Add(`{"userID":"u","userKey":"k"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, data string) {
		var m map[string]string
		if json.Unmarshal([]byte(data), &m) != nil {
			return
		}
		c, err := secrets.CephCSICredentials(m)
		if err != nil {
			for _, v := range m {
				if len(v) > 3 && strings.Contains(err.Error(), v) {
					t.Fatalf("error %q contains a secret value", err)
				}
			}
			return
		}
		if c.Key.Reveal() == "" || c.ID == "" {
			t.Fatalf("empty credentials accepted: %+v", c)
		}
		if s := c.Key.String(); s != secrets.Redacted {
			t.Fatalf("key prints as %q", s)
		}
	})
}

func FuzzParseClusterConfig(f *testing.F) {
	f.Add(`[{"clusterID":"c","monitors":["a:1"]}]`)
	f.Fuzz(func(t *testing.T, data string) {
		c, err := ceph.ParseClusterConfig([]byte(data))
		if err != nil {
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := ceph.ParseClusterConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.Entries(), c2.Entries()); diff != "" {
			t.Fatal(diff)
		}
	})
}

// newTranslators returns the translators the fuzz targets drive: the
// default one, and one with a Ceph cluster config and without the
// node-expand secret.
func newTranslators(f *testing.F) []*translate.Translator {
	cfg := ceph.NewClusterConfig(ceph.ClusterEntry{ClusterID: "b7f67366bb43f32e07d8a261a7840da9", Monitors: []string{"10.70.53.126:6789"}})
	t1, err1 := translate.New()
	t2, err2 := translate.New(translate.WithCephClusterConfig(cfg), translate.WithNodeExpandSecret(false))
	if err := errors.Join(err1, err2); err != nil {
		f.Fatal(err)
	}
	return []*translate.Translator{t1, t2}
}

// Arbitrary JSON-decoded PVs through every PV entry point: no panic, no
// mutation, documented error kinds, and forward then reverse gives the
// input back whenever both succeed on a PV that carried no csimigrate
// annotations.
func FuzzTranslatePV(f *testing.F) {
	translators := newTranslators(f)
	f.Add(`{"metadata":{"name":"a"},"spec":{"rbd":{"monitors":["10.70.53.126:6789"],"image":"kubernetes-dynamic-pvc-1","pool":"rbd","secretRef":{"name":"s","namespace":"n"}}}}`)
	f.Add(`{"spec":{"cephfs":{"monitors":["m:1"],"path":"a","secretRef":{"name":"s"}},"claimRef":{"namespace":"x"},"mountOptions":["fs=a"]}}`)
	f.Add(`{"spec":{"vsphereVolume":{"volumePath":"[ds] a.vmdk"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["z"]}]}]}}}}`)
	f.Add(`{"spec":{"csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"h","volumeAttributes":{"clusterID":"b7f67366bb43f32e07d8a261a7840da9","imageName":"i"}}}}`)
	f.Add(`{"metadata":{"annotations":{"csimigrate.io/csi-overrides":"{\"secretRefs\":{\"bogus\":null}}"}},"spec":{"rbd":{"monitors":["m"],"image":"i"}}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var pv v1.PersistentVolume
		if json.Unmarshal([]byte(data), &pv) != nil {
			return
		}
		orig := pv.DeepCopy()
		for _, tr := range translators {
			kind := func(what string, err error) {
				if err != nil && !errors.Is(err, translate.ErrNoPlugin) && !errors.Is(err, translate.ErrInvalid) &&
					!errors.Is(err, translate.ErrMissingInformation) && !errors.Is(err, translate.ErrUnsupported) {
					t.Fatalf("%s: error of no documented kind: %v", what, err)
				}
			}
			out, err := tr.TranslateInTreePVToCSI(logger, &pv)
			kind("forward", err)
			_, rerr := tr.TranslateCSIPVToInTree(&pv)
			kind("reverse", rerr)
			findings := tr.CheckPV(&pv)
			name, _ := tr.GetInTreePluginNameFromSpec(&pv, nil)
			// One lookup gives what the three calls give.
			one, oneFindings, oneName, oneErr := tr.TranslateAndCheckPV(logger, &pv)
			if (oneErr == nil) != (err == nil) || (err == nil && (!cmp.Equal(one, out) || !cmp.Equal(oneFindings, findings) || oneName != name)) {
				t.Fatalf("TranslateAndCheckPV differs from its parts: %v %q %v, want %v %q %v", oneErr, oneName, oneFindings, err, name, findings)
			}
			if err == nil && !hasOwnAnnotations(orig) {
				back, err := tr.TranslateCSIPVToInTree(out)
				kind("reverse of forward", err)
				if err == nil {
					// An empty map and no map are the same object on the
					// wire (the JSON encoding omits empty maps), so the
					// API server never hands out a non-nil empty map.
					if diff := cmp.Diff(orig, back, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("forward then reverse (-in +out):\n%s", diff)
					}
				}
			}
			if diff := cmp.Diff(orig, &pv); diff != "" {
				t.Fatalf("input modified:\n%s", diff)
			}
		}
	})
}

func hasOwnAnnotations(pv *v1.PersistentVolume) bool {
	for k := range pv.Annotations {
		if strings.Contains(k, "csimigrate.io/") || k == "rbd.csi.ceph.com/volume-handle" {
			return true
		}
	}
	return false
}

func FuzzTranslateInline(f *testing.F) {
	translators := newTranslators(f)
	f.Add(`{"name":"v","rbd":{"monitors":["m:1"],"image":"i","secretRef":{"name":"s"}}}`, "ns")
	f.Add(`{"name":"v","cephfs":{"monitors":["m:1"],"secretRef":{"name":"s"}}}`, "")
	f.Add(`{"name":"v","vsphereVolume":{"volumePath":"[ds] a.vmdk","storagePolicyName":"gold"}}`, "ns")
	f.Fuzz(func(t *testing.T, data, ns string) {
		var vol v1.Volume
		if json.Unmarshal([]byte(data), &vol) != nil {
			return
		}
		orig := vol.DeepCopy()
		for _, tr := range translators {
			_, _ = tr.TranslateInTreeInlineVolumeToCSI(logger, &vol, ns)
			if diff := cmp.Diff(orig, &vol); diff != "" {
				t.Fatalf("input modified:\n%s", diff)
			}
		}
	})
}

func FuzzTranslateStorageClass(f *testing.F) {
	translators := newTranslators(f)
	f.Add(`{"parameters":{"monitors":"a:1,b:2","adminSecretName":"s","userId":"u"}}`, "kubernetes.io/rbd")
	f.Add(`{"parameters":{"diskformat":"thin","Datastore":"ds"},"allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["z"]}]}]}`, "kubernetes.io/vsphere-volume")
	f.Fuzz(func(t *testing.T, data, plugin string) {
		var sc storage.StorageClass
		if json.Unmarshal([]byte(data), &sc) != nil {
			return
		}
		orig := sc.DeepCopy()
		for _, tr := range translators {
			out, err := tr.TranslateInTreeStorageClassToCSI(logger, plugin, &sc)
			if err == nil && out.Provisioner == "" {
				t.Fatal("no provisioner")
			}
			if diff := cmp.Diff(orig, &sc); diff != "" {
				t.Fatalf("input modified:\n%s", diff)
			}
		}
	})
}

func FuzzVSphereVersions(f *testing.F) {
	for _, s := range []string{"7.0.3", "8.0.2.00300", "6.7.0 build 1234", "7.0 U3", "7.0U3c", "vmx-08", "v7.0.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := envcheck.ParseVersion(s); err == nil {
			w, err := envcheck.ParseVersion(v.String())
			if err != nil {
				t.Fatalf("%q parsed to %v, which does not parse: %v", s, v, err)
			}
			w.Build = v.Build
			if w != v {
				t.Fatalf("%q: %+v, reparsed %+v", s, v, w)
			}
		}
		_, _ = envcheck.ParseHardwareVersion(s)
	})
}

// Arbitrary secret templates: no panic, and whatever resolves is a valid
// PV secret reference.
func FuzzSecretTemplates(f *testing.F) {
	f.Add("${pvc.name}-${pvc.annotations['team']}", "${pvc.namespace}", "pv-1", "data", "shop", "pay")
	f.Add("$pv.name", "${}", "", "", "", "")
	f.Add(`${pvc.annotations["x"]}`, "ns", "p", "c", "n", "v")
	f.Fuzz(func(t *testing.T, nameT, nsT, pv, pvc, ns, ann string) {
		keys := secrets.KeysOf(secrets.NodeExpand)
		c := secrets.Claim{PVName: pv, PVC: &v1.PersistentVolumeClaim{}}
		c.PVC.Name, c.PVC.Namespace, c.PVC.Annotations = pvc, ns, map[string]string{"team": ann}
		ref, err := secrets.Resolve(secrets.NodeExpand, map[string]string{keys.Name: nameT, keys.Namespace: nsT}, c)
		if err != nil {
			var re *secrets.ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("error of no documented kind: %v", err)
			}
			return
		}
		if len(validation.IsDNS1123Subdomain(ref.Name)) > 0 || len(validation.IsDNS1123Label(ref.Namespace)) > 0 {
			t.Fatalf("invalid reference %+v", ref)
		}
	})
}

// FuzzRewriteRules: the rewrite rules on any PV and its translation never
// panic, never modify the in-tree PV, and name every secret the translation
// makes a Ceph driver read.
func FuzzRewriteRules(f *testing.F) {
	translators := newTranslators(f)
	f.Add(`{"metadata":{"name":"a"},"spec":{"accessModes":["ReadWriteMany"],"volumeMode":"Block","rbd":{"monitors":["10.70.53.126:6789"],"image":"kubernetes-dynamic-pvc-1","pool":"rbd","user":"kube","secretRef":{"name":"s","namespace":"n"}}}}`)
	f.Add(`{"metadata":{"annotations":{"cephfs.csimigrate.io/node-stage-secret":"n/x"}},"spec":{"cephfs":{"monitors":["m:1"],"path":"a","secretRef":{"name":"s","namespace":"n"}}}}`)
	f.Add(`{"spec":{"accessModes":["ReadWriteOnce","ReadOnlyMany"],"cephfs":{"monitors":["m:1"],"secretRef":{"name":"s","namespace":"n"}}}}`)
	f.Add(`{"metadata":{"name":"k","labels":{"app.kubernetes.io/instance":"a"},"annotations":{"argocd.argoproj.io/sync-options":"Replace=true"},"ownerReferences":[{"kind":"X","name":"y","controller":true}],"managedFields":[{"manager":"helm"}]},"spec":{"claimRef":{"name":"c","uid":"u"}}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var pv v1.PersistentVolume
		if json.Unmarshal([]byte(data), &pv) != nil {
			return
		}
		orig := pv.DeepCopy()
		for _, tr := range translators {
			out, err := tr.TranslateInTreePVToCSI(logger, &pv)
			if err != nil {
				out = nil
			}
			_, _ = rewrite.KindOf(tr, &pv)
			_, _ = rewrite.UndoReplacement(tr, &pv)
			_, _ = rewrite.Rewrite(tr, logger, &pv, nil, nil)
			_, _ = rewrite.RewriteAdopted(tr, logger, &pv, nil, nil)
			_, _ = rewrite.VolumeKey(&pv)
			_, _ = rewrite.CephEntryNeeded(&pv, out)
			needs := rewrite.SecretNeeds(&pv, out)
			_ = rewrite.AccessModeChange(&pv, out)
			_ = rewrite.KeepersOf(&pv)
			_ = rewrite.KeptRefusal("PersistentVolume", &pv, false)
			_ = rewrite.SourcePV(&pv)
			if out != nil {
				if r, err := rewrite.Replacement(tr, logger, &pv, out, tr.CheckPV(&pv), nil, nil); err == nil && r.CSI.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
					t.Fatalf("a replacement created with %s", r.CSI.Spec.PersistentVolumeReclaimPolicy)
				}
				rewrite.KeepServedModes(&pv, out)
			}
			for _, n := range needs {
				if n.Name == "" || len(n.Uses) == 0 {
					t.Fatalf("need %+v", n)
				}
				_, _, _ = rewrite.Judge(n, &v1.Secret{Data: map[string][]byte{"key": []byte(data)}})
				_, _ = n.Fields("fix")
			}
			if diff := cmp.Diff(orig, &pv); diff != "" {
				t.Fatalf("input modified:\n%s", diff)
			}
		}
	})
}

// FuzzPlan: the planner on any PV and any Secret never panics, gives the PV
// one row when it is in-tree, and never puts a Secret's value in its report.
func FuzzPlan(f *testing.F) {
	translators := newTranslators(f)
	f.Add(`{"metadata":{"name":"a"},"spec":{"rbd":{"monitors":["10.70.53.126:6789"],"image":"kubernetes-dynamic-pvc-1","pool":"rbd","user":"kube","secretRef":{"name":"s","namespace":"n"}}}}`, "s3cr3tKeyValue", "adminId")
	f.Add(`{"spec":{"cephfs":{"monitors":["m:1"],"path":"/a","secretRef":{"name":"s","namespace":"n"}},"persistentVolumeReclaimPolicy":"Delete"}}`, "s3cr3tKeyValue", "userKey")
	f.Fuzz(func(t *testing.T, data, value, field string) {
		var pv v1.PersistentVolume
		if json.Unmarshal([]byte(data), &pv) != nil {
			return
		}
		for _, tr := range translators {
			p := plan.New(tr, logger, plan.Options{KubernetesMinor: 30, CephConfigWarnings: []string{"entry x: no monitors"}})
			p.Add(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "s"}, Data: map[string][]byte{"key": []byte(value), field: []byte(value)}})
			p.Add(&pv)
			r := p.Finish()
			if want := plugin.InTreeNameOfPV(&pv) != ""; (len(r.Volumes) == 1) != want {
				t.Fatalf("%d rows for a PV of plugin %q", len(r.Volumes), plugin.InTreeNameOfPV(&pv))
			}
			if len(value) < 8 || field == "adminId" || field == "userID" {
				continue // a user name is not secret; a short value matches by chance
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), value) && !strings.Contains(data, value) {
				t.Fatalf("the report holds the secret value %q:\n%s", value, b)
			}
		}
	})
}

// FuzzAdopt: the adoption's rules on any PV and any image facts never panic
// and never modify the PV; a native adoption gives the PV back through
// Unadopted, its volume ID parses, and its journal entry matches itself.
func FuzzAdopt(f *testing.F) {
	f.Add(`{"metadata":{"name":"pv"},"spec":{"csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"mig_mons-cbda9496ca7d608f331a30a56c8592ac_image-e4111eb6-4088-11ec-b823-0242ac110003_7265706c696361706f6f6c","volumeAttributes":{"imageName":"kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003","pool":"replicapool","clusterID":"cbda9496ca7d608f331a30a56c8592ac","migration":"true"}}}}`, "id1", int64(3), 2, "layering", "ns")
	f.Add(`{"metadata":{"name":"pv","annotations":{"csimigrate.io/adopted-from-handle":"x","csimigrate.io/journal":"{}"}},"spec":{"csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"0001"}}}`, "", int64(-1), 1, "", "")
	f.Fuzz(func(t *testing.T, data, id string, poolID int64, format int, features, radosNS string) {
		var pv v1.PersistentVolume
		if json.Unmarshal([]byte(data), &pv) != nil {
			return
		}
		orig := pv.DeepCopy()
		var im *adopt.Image
		if pv.Spec.CSI != nil && id != "" {
			a := pv.Spec.CSI.VolumeAttributes
			pool := a["pool"]
			if pool == "" {
				pool = "rbd"
			}
			im = &adopt.Image{Pool: pool, PoolID: poolID, Name: a["imageName"], ID: id, Format: format, Features: strings.Split(features, ",")}
		}
		d, err := adopt.RBD(adopt.RBDInput{PV: &pv, Image: im, RadosNamespace: radosNS, UUID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"})
		if diff := cmp.Diff(orig, &pv); diff != "" {
			t.Fatalf("input modified:\n%s", diff)
		}
		_, _, _, _ = adopt.Unadopted(&pv)
		_, _, _ = adopt.JournalOf(&pv)
		if err != nil || d.PV == nil {
			return
		}
		if _, err := volumeid.ParseCephCSIVolumeID(d.PV.Spec.CSI.VolumeHandle); err != nil {
			t.Fatalf("native volume ID %q: %v", d.PV.Spec.CSI.VolumeHandle, err)
		}
		back, j, ok, err := adopt.Unadopted(d.PV)
		if err != nil || !ok || !cmp.Equal(back, &pv, cmpopts.EquateEmpty()) {
			t.Fatalf("Unadopted: %v %t\n%s", err, ok, cmp.Diff(&pv, back, cmpopts.EquateEmpty()))
		}
		if why := j.Matches(j.Keys(), map[string]string{j.DirectoryKey(): j.UUID}); why != "" {
			t.Fatalf("the journal entry does not match itself: %s", why)
		}
	})
}

// FuzzAdoptCephFS: the CephFS adoption's rules on any PV and any subvolume
// facts never panic and never modify the PV; a native adoption gives the PV
// back through Unadopted, and its volume ID parses.
func FuzzAdoptCephFS(f *testing.F) {
	f.Add(`{"metadata":{"name":"pv","annotations":{"pv.kubernetes.io/provisioned-by":"ceph.com/cephfs"}},"spec":{"csi":{"driver":"cephfs.csi.ceph.com","volumeHandle":"h","nodeStageSecretRef":{"name":"s","namespace":"ns"},"volumeAttributes":{"rootPath":"/volumes/kubernetes/kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003","clusterID":"c","staticVolume":"true","fsName":"myfs"}}}}`,
		"/volumes/kubernetes/kubernetes-dynamic-pvc-e4111eb6-4088-11ec-b823-0242ac110003", int64(1), "snapshot-clone", "c-kubernetes", "", true)
	f.Add(`{"metadata":{"name":"pv"},"spec":{"csi":{"driver":"cephfs.csi.ceph.com","volumeAttributes":{"rootPath":"/volumes/g/reports"}}}}`, "/volumes/g/reports", int64(-1), "", "", "Error ENODATA", false)
	f.Fuzz(func(t *testing.T, data, path string, fscid int64, features, clusterID, notServed string, secret bool) {
		var pv v1.PersistentVolume
		if json.Unmarshal([]byte(data), &pv) != nil {
			return
		}
		orig := pv.DeepCopy()
		in := adopt.CephFSInput{PV: &pv, ClusterID: clusterID, NotSubvolume: notServed, UUID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
		if secret {
			in.Secret = &v1.SecretReference{Namespace: "ceph-csi", Name: "csi-cephfs-secret"}
		}
		if pv.Spec.CSI != nil && notServed == "" {
			if g, n, ok := adopt.SubvolumeOf(pv.Spec.CSI.VolumeAttributes["rootPath"]); ok {
				in.Subvolume = &adopt.Subvolume{FS: "fs", FSCID: fscid, MetadataPool: "meta", Group: g, Name: n, Path: path, Features: strings.Split(features, ",")}
			}
		}
		d, err := adopt.CephFS(in)
		if diff := cmp.Diff(orig, &pv); diff != "" {
			t.Fatalf("input modified:\n%s", diff)
		}
		if err != nil || d.PV == nil {
			return
		}
		if _, err := volumeid.ParseCephCSIVolumeID(d.PV.Spec.CSI.VolumeHandle); err != nil {
			t.Fatalf("native volume ID %q: %v", d.PV.Spec.CSI.VolumeHandle, err)
		}
		back, _, ok, err := adopt.Unadopted(d.PV)
		if err != nil || !ok || !cmp.Equal(back, &pv, cmpopts.EquateEmpty()) {
			t.Fatalf("Unadopted: %v %t\n%s", err, ok, cmp.Diff(&pv, back, cmpopts.EquateEmpty()))
		}
	})
}
