// Package ceph holds what the RBD and CephFS translators share: the Ceph CSI
// cluster configuration (the config.json of Ceph CSI's config map), which
// maps a clusterID to its monitors, and the rules for finding the monitors of
// a CSI volume when translating it back to an in-tree source.
package ceph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/csimigrate/csimigrate/plugins"
	"github.com/csimigrate/csimigrate/volumeid"
)

// ClusterEntry is one element of Ceph CSI's config.json.
type ClusterEntry struct {
	// ClusterID is the key volumes refer to.
	ClusterID string `json:"clusterID"`
	// Monitors are the cluster's monitor addresses, "host:port".
	Monitors []string `json:"monitors"`
}

// ClusterConfig maps Ceph CSI clusterIDs to monitors. The zero value is empty
// and usable.
type ClusterConfig struct {
	entries []ClusterEntry
	byID    map[string]int
}

// ParseClusterConfig parses the content of Ceph CSI's config.json: a JSON
// list of objects with "clusterID" and "monitors" (other members, such as
// "cephFS" or "rbd" settings, are ignored). Duplicate or empty clusterIDs
// and entries without monitors are errors.
func ParseClusterConfig(data []byte) (ClusterConfig, error) {
	var entries []ClusterEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return ClusterConfig{}, fmt.Errorf("ceph-csi config.json: want a JSON list of {\"clusterID\": ..., \"monitors\": [...]}: %w", err)
	}
	return NewClusterConfig(entries...)
}

// NewClusterConfig builds a ClusterConfig from entries, checked as
// ParseClusterConfig checks them.
func NewClusterConfig(entries ...ClusterEntry) (ClusterConfig, error) {
	c := ClusterConfig{byID: make(map[string]int, len(entries))}
	for i, e := range entries {
		switch {
		case e.ClusterID == "":
			return ClusterConfig{}, fmt.Errorf("ceph-csi config.json: entry %d: clusterID is empty", i)
		case len(e.Monitors) == 0:
			return ClusterConfig{}, fmt.Errorf("ceph-csi config.json: entry %d (clusterID %q): monitors is empty", i, e.ClusterID)
		}
		if _, dup := c.byID[e.ClusterID]; dup {
			return ClusterConfig{}, fmt.Errorf("ceph-csi config.json: clusterID %q appears twice", e.ClusterID)
		}
		c.byID[e.ClusterID] = len(c.entries)
		c.entries = append(c.entries, ClusterEntry{ClusterID: e.ClusterID, Monitors: slices.Clone(e.Monitors)})
	}
	return c, nil
}

// EntryFor returns the entry migration needs for a monitor list: the clusterID
// is [volumeid.ClusterIDFromList] of the list. Ceph CSI must keep this entry
// as long as volumes migrated from these monitors exist, even after the
// monitors change, because their handles embed the clusterID.
func EntryFor(monitors []string) ClusterEntry {
	return ClusterEntry{ClusterID: volumeid.ClusterIDFromList(monitors), Monitors: slices.Clone(monitors)}
}

// Monitors returns a copy of the monitors of clusterID.
func (c ClusterConfig) Monitors(clusterID string) ([]string, bool) {
	i, ok := c.byID[clusterID]
	if !ok {
		return nil, false
	}
	return slices.Clone(c.entries[i].Monitors), true
}

// Entries returns a copy of the entries in their original order.
func (c ClusterConfig) Entries() []ClusterEntry {
	out := make([]ClusterEntry, len(c.entries))
	for i, e := range c.entries {
		out[i] = ClusterEntry{ClusterID: e.ClusterID, Monitors: slices.Clone(e.Monitors)}
	}
	return out
}

// MarshalJSON writes the config in config.json form.
func (c ClusterConfig) MarshalJSON() ([]byte, error) {
	if c.entries == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(c.entries)
}

// Where monitors were found by ResolveMonitors.
const (
	SourceCarried   = "carried annotation"
	SourceAttribute = "monitors volume attribute"
	SourceConfig    = "Ceph CSI cluster config"
)

// ResolveMonitors finds the monitors of a CSI volume for a reverse
// translation, in this order: the value a forward translation carried in an
// annotation (carried, ok), the comma-separated "monitors" volume attribute a
// Ceph CSI volume context holds when the StorageClass had one, the entry of
// clusterID in cfg. When none has them it returns a
// *plugins.MissingInformationError (errors.Is plugins.ErrMissingInformation)
// about PersistentVolume pvName. joined is the monitors joined with ",",
// without a new string when they came as a plain list.
func ResolveMonitors(pvName, carried string, carriedOK bool, attrs map[string]string, clusterID string, cfg ClusterConfig, fieldPath string) (mons []string, joined, from string, err error) {
	if carriedOK {
		mons, err := plugins.DecodeList(carried)
		if err == nil && len(mons) > 0 {
			joined := carried
			if !plugins.PlainList(mons) {
				joined = strings.Join(mons, ",")
			}
			return mons, joined, SourceCarried, nil
		}
	}
	if s := attrs["monitors"]; s != "" {
		return strings.Split(s, ","), s, SourceAttribute, nil
	}
	if mons, ok := cfg.Monitors(clusterID); ok {
		return mons, strings.Join(mons, ","), SourceConfig, nil
	}
	detail := "no carried annotation, no \"monitors\" volume attribute"
	if clusterID == "" {
		detail += ", and no clusterID to look up"
	} else {
		detail += fmt.Sprintf(", and clusterID %q is not in the Ceph CSI cluster config", clusterID)
	}
	return nil, "", "", &plugins.MissingInformationError{
		Field:  fieldPath,
		Object: `PersistentVolume "` + pvName + `"`,
		Detail: detail + "; supply Ceph CSI's config.json as an option (it never yields monitors [\"\"])",
	}
}
