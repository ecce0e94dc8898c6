package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/csimigrate/csimigrate/featuregate"
	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/plugins/ceph"
	"github.com/csimigrate/csimigrate/plugins/cephfs"
	"github.com/csimigrate/csimigrate/plugins/rbd"
	"github.com/csimigrate/csimigrate/plugins/vsphere"
	"github.com/csimigrate/csimigrate/secrets"
	"github.com/csimigrate/csimigrate/translate"
)

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var pl *planner
	c, code, ok := setup("plan", "Reports, per volume, whether it can be migrated and why not; the Ceph CSI config map to create;\n"+
		"the Secrets to add or derive (names and fields, never values); the StorageClasses to recreate; hazards;\n"+
		"and the feature-gate steps for the cluster's version. Exits 1 when something blocks the migration.",
		args, stdin, stderr, "table|json|yaml", func(c *common, tr *translate.Translator) Sink {
			topo, _ := c.vsphereTopology()
			pl = newPlanner(tr, c.logger(stderr), nil, topo.ZoneKey, topo.RegionKey)
			return pl
		})
	if !ok {
		return code
	}
	steps, err := gateSteps(c.k8sVersion)
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: -kubernetes-version: %v\n", err)
		return exitUsage
	}
	plan := pl.finish()
	plan.FeatureGates = steps
	for _, w := range c.cephWarnings {
		plan.Hazards = append(plan.Hazards, plugins.Finding{Code: "CephConfigEntry", Severity: plugins.SeverityWarning, Field: "-ceph-config " + c.cephConfig,
			Message: w, Remedy: "fix or remove the entry in Ceph CSI's config map; volumes of other clusterIDs are not affected"})
	}
	cm := cephConfigMap(plan.CephClusters, c.cephCSINamespace)
	switch c.output {
	case "json":
		err = writeJSON(stdout, struct {
			*Plan
			ConfigMap any `json:"cephCSIConfigMap,omitempty"`
		}{plan, cm})
	case "yaml":
		err = writeYAML(stdout, struct {
			*Plan
			ConfigMap any `json:"cephCSIConfigMap,omitempty"`
		}{plan, cm})
	default:
		err = writePlanTable(stdout, plan, cm)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csimigrate plan: writing the output: %v\n", err)
		return exitOutput
	}
	if plan.Blocked {
		return exitBlocked
	}
	return exitOK
}

// Plan is the report of `csimigrate plan`.
type Plan struct {
	// Hazards concern the cluster rather than one volume.
	Hazards        []plugins.Finding   `json:"hazards,omitempty"`
	Volumes        []VolumePlan        `json:"volumes"`
	InlineVolumes  []InlinePlan        `json:"inlineVolumes,omitempty"`
	StorageClasses []StorageClassPlan  `json:"storageClasses,omitempty"`
	CephClusters   []ceph.ClusterEntry `json:"cephClusters,omitempty"`
	Secrets        []SecretPlan        `json:"secrets,omitempty"`
	FeatureGates   []string            `json:"featureGateSteps,omitempty"`
	Blocked        bool                `json:"blocked"`
}

// VolumePlan is the plan for one in-tree PV.
type VolumePlan struct {
	Name       string            `json:"name"`
	Plugin     string            `json:"plugin"`
	Driver     string            `json:"driver,omitempty"`
	Migratable bool              `json:"migratable"`
	Reason     string            `json:"reason,omitempty"`
	Claim      string            `json:"claim,omitempty"`
	InUseBy    []string          `json:"inUseBy,omitempty"`
	Findings   []plugins.Finding `json:"findings,omitempty"`
	Handle     string            `json:"volumeHandle,omitempty"`
}

// InlinePlan is the plan for one inline in-tree volume of a pod.
type InlinePlan struct {
	Pod        string `json:"pod"`
	Volume     string `json:"volume"`
	Plugin     string `json:"plugin"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
}

// StorageClassPlan says how to recreate an in-tree StorageClass.
type StorageClassPlan struct {
	Name       string `json:"name"`
	From       string `json:"from"`
	To         string `json:"to,omitempty"`
	Migratable bool   `json:"migratable"`
	Reason     string `json:"reason,omitempty"`
}

// SecretPlan is a Secret to create or change. Values are never included.
type SecretPlan struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Action    string   `json:"action"`
	Fields    []string `json:"fields"`
	From      string   `json:"from,omitempty"`
	Reason    string   `json:"reason"`
}

func claimKey(ns, name string) string { return ns + "/" + name }

// planner builds a Plan from objects as they arrive, so that a dump of any
// size is planned in memory proportional to the report: a PV is translated,
// checked and dropped; what depends on objects that may come later (pods
// using a claim, the secrets a volume needs) is kept as a small record and
// settled in finish. Secret values are never kept: only whether "key" is set
// and the adminId.
type planner struct {
	tr          *translate.Translator
	logger      klog.Logger
	plan        *Plan
	podsByClaim map[string][]string
	secrets     map[string]*v1.Secret // slim: no values
	clusters    map[string]ceph.ClusterEntry
	rbdSecrets  []rbdSecretNeed
	fsSecrets   map[string]SecretPlan // by namespace/name: many volumes share one derived secret
	userFinding map[int]int           // volume index -> finding index of RBDSecretNeedsAdminId
	// vsphereKeys are the translation\'s CSI topology keys; mismatches
	// collects the nodes whose vSphere driver reports other keys.
	vsphereKeys []string
	mismatches  []string
}

type rbdSecretNeed struct {
	ns, name, user string
	volume         int // index in plan.Volumes, -1 for inline volumes
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func newPlanner(tr *translate.Translator, logger klog.Logger, steps []string, vsphereKeys ...string) *planner {
	return &planner{vsphereKeys: vsphereKeys, tr: tr, logger: logger, plan: &Plan{FeatureGates: steps}, podsByClaim: map[string][]string{},
		secrets: map[string]*v1.Secret{}, clusters: map[string]ceph.ClusterEntry{}, userFinding: map[int]int{}, fsSecrets: map[string]SecretPlan{}}
}

// Add implements Sink.
func (p *planner) Add(obj any) {
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		p.addPV(o)
	case *v1.Pod:
		p.addPod(o)
	case *storagev1.StorageClass:
		p.addStorageClass(o)
	case *storagev1.CSINode:
		for _, d := range o.Spec.Drivers {
			if d.Name != vsphere.DriverName {
				continue
			}
			for _, k := range p.vsphereKeys {
				if !slices.Contains(d.TopologyKeys, k) {
					p.mismatches = append(p.mismatches, fmt.Sprintf("%s reports %v", o.Name, d.TopologyKeys))
					break
				}
			}
		}
	case *v1.Secret:
		slim := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}, Data: map[string][]byte{}}
		data := secrets.SecretStringData(o)
		if data[secrets.CephInTreeKey] != "" {
			slim.Data[secrets.CephInTreeKey] = []byte("set")
		}
		if id, ok := data[secrets.CephMigrationUserKey]; ok {
			slim.Data[secrets.CephMigrationUserKey] = []byte(id)
		}
		p.secrets[claimKey(o.Namespace, o.Name)] = slim
	}
}

func (p *planner) addPV(pv *v1.PersistentVolume) {
	name := plugins.InTreeNameOfPV(pv)
	if name == "" {
		return
	}
	vp := VolumePlan{Name: pv.Name, Plugin: name}
	if pv.Spec.ClaimRef != nil {
		vp.Claim = claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
	idx := len(p.plan.Volumes)
	if !p.tr.IsPVMigratable(pv) {
		vp.Reason = "no migration plugin registered for " + name
		p.plan.Volumes = append(p.plan.Volumes, vp)
		p.plan.Blocked = true
		return
	}
	vp.Driver, _ = p.tr.GetCSINameFromInTreeName(name)
	for _, f := range p.tr.CheckPV(pv) {
		if f.Code == rbd.FindingNonAdminUser {
			p.userFinding[idx] = len(vp.Findings)
		}
		vp.Findings = append(vp.Findings, f)
	}
	out, err := p.tr.TranslateInTreePVToCSI(p.logger, pv)
	if err != nil {
		vp.Reason = err.Error()
	} else {
		vp.Migratable = true
		vp.Handle = out.Spec.CSI.VolumeHandle
	}
	for _, f := range vp.Findings {
		if f.Severity == plugins.SeverityBlocker {
			vp.Migratable = false
			if vp.Reason == "" {
				vp.Reason = f.Message
			}
		}
	}
	if !vp.Migratable {
		p.plan.Blocked = true
	}
	switch {
	case pv.Spec.RBD != nil:
		p.addCluster(pv.Spec.RBD.CephMonitors)
		if ref := pv.Spec.RBD.SecretRef; ref != nil {
			p.rbdSecrets = append(p.rbdSecrets, rbdSecretNeed{ns: ref.Namespace, name: ref.Name, user: pv.Spec.RBD.RadosUser, volume: idx})
		}
	case pv.Spec.CephFS != nil:
		p.addCluster(pv.Spec.CephFS.Monitors)
		if err == nil && out.Spec.CSI.NodeStageSecretRef != nil && pv.Spec.CephFS.SecretRef != nil && pv.Annotations[cephfs.AnnNodeStageSecret] == "" {
			ref := out.Spec.CSI.NodeStageSecretRef
			p.fsSecrets[claimKey(ref.Namespace, ref.Name)] = (SecretPlan{Namespace: ref.Namespace, Name: ref.Name, Action: "create",
				From: claimKey(ref.Namespace, pv.Spec.CephFS.SecretRef.Name), Fields: []string{secrets.CephUserID, secrets.CephUserKey},
				Reason: "Ceph CSI stages static CephFS volumes with userID/userKey; the in-tree secret stays as it is"})
		}
	}
	p.plan.Volumes = append(p.plan.Volumes, vp)
}

func (p *planner) addCluster(mons []string) {
	e := ceph.EntryFor(mons)
	p.clusters[e.ClusterID] = e
}

func (p *planner) addPod(pod *v1.Pod) {
	running := pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil && running {
			k := claimKey(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
			p.podsByClaim[k] = append(p.podsByClaim[k], pod.Namespace+"/"+pod.Name)
		}
		name := plugins.InTreeNameOfVolume(vol)
		if name == "" {
			continue
		}
		ip := InlinePlan{Pod: pod.Namespace + "/" + pod.Name, Volume: vol.Name, Plugin: name}
		if _, err := p.tr.TranslateInTreeInlineVolumeToCSI(p.logger, vol, pod.Namespace); err != nil {
			ip.Reason = err.Error()
		} else {
			ip.Migratable = true
			if vol.RBD != nil {
				p.addCluster(vol.RBD.CephMonitors)
				if vol.RBD.SecretRef != nil {
					p.rbdSecrets = append(p.rbdSecrets, rbdSecretNeed{ns: pod.Namespace, name: vol.RBD.SecretRef.Name, user: vol.RBD.RadosUser, volume: -1})
				}
			}
			if vol.VsphereVolume != nil {
				ip.Migratable = false
				ip.Reason = "the vSphere CSI driver does not support inline volumes after migration: move it to a PV and PVC"
			}
		}
		if !ip.Migratable {
			p.plan.Blocked = true
		}
		p.plan.InlineVolumes = append(p.plan.InlineVolumes, ip)
	}
}

func (p *planner) addStorageClass(sc *storagev1.StorageClass) {
	if !p.tr.IsMigratableIntreePluginByName(sc.Provisioner) {
		return
	}
	sp := StorageClassPlan{Name: sc.Name, From: sc.Provisioner}
	out, err := p.tr.TranslateInTreeStorageClassToCSI(p.logger, sc.Provisioner, sc)
	if err != nil {
		sp.Reason = err.Error()
		p.plan.Blocked = true
	} else {
		sp.Migratable, sp.To = true, out.Provisioner
		if d := out.Annotations[rbd.AnnDroppedParameters]; d != "" {
			sp.Reason = "parameters without a Ceph CSI counterpart are dropped: " + d
		}
		if mons := out.Parameters["monitors"]; mons != "" && sc.Provisioner == rbd.PluginName {
			e := ceph.ClusterEntry{ClusterID: out.Parameters["clusterID"], Monitors: strings.Split(mons, ",")}
			p.clusters[e.ClusterID] = e
		}
	}
	p.plan.StorageClasses = append(p.plan.StorageClasses, sp)
}

// finish settles what depended on later objects and returns the plan.
func (p *planner) finish() *Plan {
	plan := p.plan
	if len(p.mismatches) > 0 {
		plan.Hazards = append(plan.Hazards, plugins.Finding{Code: vsphere.FindingTopologyKeyUnused, Severity: plugins.SeverityBlocker,
			Field:   "CSINode.spec.drivers[csi.vsphere.vmware.com].topologyKeys",
			Message: fmt.Sprintf("translation writes topology keys %v, but the vSphere CSI driver on %d node(s) reports other keys (%s): migrated PVs would not schedule", p.vsphereKeys, len(p.mismatches), strings.Join(first(p.mismatches, 3), "; ")),
			Remedy:  "run csimigrate with -vsphere-topology-categories matching the driver's [Labels] topology-categories (or -vsphere-legacy-topology)"})
		plan.Blocked = true
	}
	for i := range plan.Volumes {
		if c := plan.Volumes[i].Claim; c != "" {
			plan.Volumes[i].InUseBy = p.podsByClaim[c]
		}
	}
	secretPlans := map[string]*SecretPlan{}
	add := func(sp SecretPlan) {
		k := sp.Namespace + "/" + sp.Name + "/" + sp.Action
		if old, ok := secretPlans[k]; ok {
			old.Fields = slices.Compact(slices.Sorted(slices.Values(append(old.Fields, sp.Fields...))))
			return
		}
		secretPlans[k] = &sp
	}
	drop := map[int]bool{}
	for _, need := range p.rbdSecrets {
		s, ok := p.secrets[claimKey(need.ns, need.name)]
		if ok && need.volume >= 0 {
			if fixes, err := secrets.CephMigrationSecretFixes(s, need.user); err == nil && len(fixes) == 0 {
				drop[need.volume] = true // the secret already names the user
			}
		}
		planRBDSecret(need.ns, need.name, need.user, p.secrets, add)
	}
	for vi, fi := range p.userFinding {
		if drop[vi] {
			f := plan.Volumes[vi].Findings
			plan.Volumes[vi].Findings = append(f[:fi:fi], f[fi+1:]...)
			if len(plan.Volumes[vi].Findings) == 0 {
				plan.Volumes[vi].Findings = nil
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.fsSecrets)) {
		sp := p.fsSecrets[k]
		if _, ok := p.secrets[sp.From]; !ok {
			sp.Reason += " (source secret not in the input)"
		}
		add(sp)
	}
	for _, id := range slices.Sorted(maps.Keys(p.clusters)) {
		plan.CephClusters = append(plan.CephClusters, p.clusters[id])
	}
	for _, k := range slices.Sorted(maps.Keys(secretPlans)) {
		plan.Secrets = append(plan.Secrets, *secretPlans[k])
	}
	return plan
}

func planRBDSecret(ns, name, user string, have map[string]*v1.Secret, add func(SecretPlan)) {
	s, ok := have[claimKey(ns, name)]
	if !ok {
		if user != "" && user != secrets.CephDefaultUser {
			add(SecretPlan{Namespace: ns, Name: name, Action: "check", Fields: []string{secrets.CephInTreeKey, secrets.CephMigrationUserKey},
				Reason: fmt.Sprintf("not in the input: it must hold \"key\" and adminId=%s for Ceph CSI to connect as %s", user, user)})
		}
		return
	}
	fixes, err := secrets.CephMigrationSecretFixes(s, user)
	if errors.Is(err, secrets.ErrCephNoKey) {
		add(SecretPlan{Namespace: ns, Name: name, Action: "fix", Fields: []string{secrets.CephInTreeKey}, Reason: err.Error()})
		return
	}
	for _, f := range fixes {
		add(SecretPlan{Namespace: ns, Name: name, Action: "add", Fields: []string{f.Field + "=" + f.Value}, Reason: f.Reason})
	}
}

func cephConfigMap(clusters []ceph.ClusterEntry, ns string) *v1.ConfigMap {
	if len(clusters) == 0 {
		return nil
	}
	b, err := jsonString(clusters)
	if err != nil {
		return nil
	}
	return &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "ceph-csi-config", Namespace: ns},
		Data:       map[string]string{"config.json": b},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func writePlanTable(w io.Writer, p *Plan, cm *v1.ConfigMap) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSISTENT VOLUMES")
	fmt.Fprintln(tw, "NAME\tPLUGIN\tDRIVER\tMIGRATABLE\tCLAIM\tIN USE BY\tREASON")
	for _, v := range p.Volumes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Plugin, v.Driver, yesNo(v.Migratable), dash(v.Claim), dash(strings.Join(v.InUseBy, ",")), dash(v.Reason))
	}
	tw.Flush()
	if len(p.InlineVolumes) > 0 {
		fmt.Fprintln(tw, "\nINLINE VOLUMES")
		fmt.Fprintln(tw, "POD\tVOLUME\tPLUGIN\tMIGRATABLE\tREASON")
		for _, v := range p.InlineVolumes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Pod, v.Volume, v.Plugin, yesNo(v.Migratable), dash(v.Reason))
		}
		tw.Flush()
	}
	var hazards []string
	for _, f := range p.Hazards {
		hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", "cluster", f.Severity, f.Code, f.Message, f.Remedy))
	}
	for _, v := range p.Volumes {
		for _, f := range v.Findings {
			hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, f.Severity, f.Code, f.Message, f.Remedy))
		}
		if len(v.InUseBy) > 0 {
			hazards = append(hazards, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Name, plugins.SeverityWarning, "VolumeInUse",
				"in use by "+strings.Join(v.InUseBy, ", "),
				"stop the pods (scale their workloads to zero) before the rewrite deletes and recreates the PV object; data is kept"))
		}
	}
	if len(hazards) > 0 {
		fmt.Fprintln(tw, "\nHAZARDS")
		fmt.Fprintln(tw, "OBJECT\tSEVERITY\tCODE\tMESSAGE\tREMEDY")
		for _, h := range hazards {
			fmt.Fprintln(tw, h)
		}
		tw.Flush()
	}
	if len(p.StorageClasses) > 0 {
		fmt.Fprintln(tw, "\nSTORAGE CLASSES (immutable: delete and recreate with the same name)")
		fmt.Fprintln(tw, "NAME\tFROM\tTO\tMIGRATABLE\tNOTE")
		for _, s := range p.StorageClasses {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.From, dash(s.To), yesNo(s.Migratable), dash(s.Reason))
		}
		tw.Flush()
	}
	if len(p.Secrets) > 0 {
		fmt.Fprintln(tw, "\nSECRETS (values are never shown)")
		fmt.Fprintln(tw, "SECRET\tACTION\tFIELDS\tFROM\tWHY")
		for _, s := range p.Secrets {
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\n", s.Namespace, s.Name, s.Action, strings.Join(s.Fields, ","), dash(s.From), s.Reason)
		}
		tw.Flush()
	}
	if cm != nil {
		fmt.Fprintln(w, "\nCEPH CSI CONFIG MAP (create before enabling migration)")
		if err := writeYAML(w, cm); err != nil {
			return err
		}
	}
	if len(p.FeatureGates) > 0 {
		fmt.Fprintln(w, "\nFEATURE GATES")
		for i, s := range p.FeatureGates {
			fmt.Fprintf(w, "%d. %s\n", i+1, s)
		}
	}
	if p.Blocked {
		fmt.Fprintln(w, "\nRESULT: BLOCKED: resolve the items marked NO before migrating")
	} else {
		fmt.Fprintln(w, "\nRESULT: ready to migrate")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// gateSteps returns the feature-gate steps for the cluster's version.
func gateSteps(v string) ([]string, error) {
	minor, err := featuregate.ParseMinor(v)
	if err != nil {
		return nil, err
	}
	if minor < featuregate.MinMinor || minor > featuregate.MaxMinor {
		return nil, fmt.Errorf("kubernetes 1.%d: want 1.%d to 1.%d", minor, featuregate.MinMinor, featuregate.MaxMinor)
	}
	var out []string
	for _, p := range featuregate.Plugins {
		out = append(out, featuregate.UpgradeSteps(minor, p)...)
	}
	return out, nil
}
