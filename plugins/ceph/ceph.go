// Package ceph holds what the RBD and CephFS translators share: the Ceph CSI
// cluster configuration (the config.json of Ceph CSI's config map), which
// maps a clusterID to its monitors, and the rules for finding the monitors of
// a CSI volume when translating it back to an in-tree source.
package ceph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/csimigrate/csimigrate/volumeid"
)

// ClusterEntry is one element of Ceph CSI's config.json.
type ClusterEntry struct {
	// ClusterID is the key volumes refer to.
	ClusterID string `json:"clusterID"`
	// Monitors are the cluster's monitor addresses, "host:port".
	Monitors []string `json:"monitors"`
	// RBD holds the entry's RBD settings that matter to migration; nil
	// when it has none.
	RBD *RBDSettings `json:"rbd,omitempty"`
	// CephFS holds the entry's CephFS settings that matter to migration;
	// nil when it has none.
	CephFS *CephFSSettings `json:"cephFS,omitempty"`
}

// CephFSSettings are a cluster entry's CephFS settings (the "cephFS"
// member).
type CephFSSettings struct {
	// SubvolumeGroup is the subvolume group of the entry's CephFS volumes
	// ("" means Ceph CSI's default, DefaultSubvolumeGroup). Ceph CSI's
	// journal does not record a volume's group: the entry decides it.
	SubvolumeGroup string `json:"subvolumeGroup,omitempty"`
}

// maxClusterIDLen is the longest clusterID whose volume IDs fit Ceph CSI's
// 128 bytes: "0001-" 4 hex digits "-" clusterID "-" 16 hex digits "-" UUID.
const maxClusterIDLen = volumeid.CephCSIMaxIDLen - (5 + 4 + 1 + 1 + 16 + 1 + 36)

// DefaultSubvolumeGroup is the subvolume group of a cluster entry that
// names none.
const DefaultSubvolumeGroup = "csi"

// clone is a deep copy of e.
func (e ClusterEntry) clone() ClusterEntry {
	out := ClusterEntry{ClusterID: e.ClusterID, Monitors: slices.Clone(e.Monitors)}
	if e.RBD != nil {
		r := *e.RBD
		out.RBD = &r
	}
	if e.CephFS != nil {
		f := *e.CephFS
		out.CephFS = &f
	}
	return out
}

// RBDSettings are a cluster entry's RBD settings (the "rbd" member).
type RBDSettings struct {
	// RadosNamespace is the RADOS namespace of the entry's RBD images and
	// journal.
	RadosNamespace string `json:"radosNamespace,omitempty"`
}

// Error kinds of [ClusterConfig.Lookup], for errors.Is.
var (
	// ErrNoClusterEntry: no entry has the clusterID (Ceph CSI: "missing
	// configuration for cluster ID").
	ErrNoClusterEntry = errors.New("no entry for the clusterID in the Ceph CSI cluster config")
	// ErrNoMonitors: the first entry with the clusterID, the one Ceph CSI
	// uses, has no monitors (Ceph CSI: "empty monitor list for cluster ID").
	ErrNoMonitors = errors.New("the Ceph CSI cluster config entry has no monitors")
	// ErrAmbiguousClusterID: two entries with monitors have the clusterID
	// and different monitors. Ceph CSI uses the first; a translation does not
	// guess which one the volume's monitors are.
	ErrAmbiguousClusterID = errors.New("the clusterID has two entries with different monitors in the Ceph CSI cluster config")
)

// LookupError says why [ClusterConfig.Lookup] found no monitors.
type LookupError struct {
	// ClusterID is the clusterID looked up.
	ClusterID string
	// Entries are the indexes of the entries involved (none for
	// ErrNoClusterEntry).
	Entries []int
	// Err is one of ErrNoClusterEntry, ErrNoMonitors, ErrAmbiguousClusterID.
	Err error
}

// Error implements error.
func (e *LookupError) Error() string {
	s := fmt.Sprintf("clusterID %q: %v", e.ClusterID, e.Err)
	if len(e.Entries) > 0 {
		s += fmt.Sprintf(" (entries %v of config.json)", e.Entries)
	}
	return s
}

// Unwrap returns the error kind.
func (e *LookupError) Unwrap() error { return e.Err }

// ClusterConfig maps Ceph CSI clusterIDs to monitors as Ceph CSI reads its
// config.json: a lookup takes the first entry with the clusterID and needs
// its monitors; no other entry matters to it. The zero value is empty and
// usable.
type ClusterConfig struct {
	entries []ClusterEntry
	// first is the index of the first entry of each clusterID.
	first map[string]int
	// ambiguous holds the clusterIDs that have two entries with different,
	// non-empty monitor lists, with the index of the second.
	ambiguous map[string]int
}

// ParseClusterConfig parses the content of Ceph CSI's config.json: a JSON
// list of objects with "clusterID" and "monitors" (and "rbd"'s
// "radosNamespace" and "cephFS"'s "subvolumeGroup"; other members are not
// read). Like Ceph CSI, it refuses only
// what JSON cannot decode (empty input included); entries without a
// clusterID or monitors, and clusterIDs listed twice, are kept and reported
// by [ClusterConfig.Warnings], and only a lookup of such a clusterID fails.
func ParseClusterConfig(data []byte) (ClusterConfig, error) {
	var entries []ClusterEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return ClusterConfig{}, fmt.Errorf("ceph-csi config.json: want a JSON list of {\"clusterID\": ..., \"monitors\": [...]}: %w", err)
	}
	if entries == nil {
		return ClusterConfig{}, errors.New("ceph-csi config.json: want a JSON list of {\"clusterID\": ..., \"monitors\": [...]}, got null")
	}
	return NewClusterConfig(entries...), nil
}

// NewClusterConfig builds a ClusterConfig from entries, kept as given (see
// [ParseClusterConfig]).
func NewClusterConfig(entries ...ClusterEntry) ClusterConfig {
	c := ClusterConfig{first: make(map[string]int, len(entries))}
	for i, e := range entries {
		c.entries = append(c.entries, e.clone())
		j, dup := c.first[e.ClusterID]
		if !dup {
			c.first[e.ClusterID] = i
			continue
		}
		if len(e.Monitors) > 0 && len(entries[j].Monitors) > 0 && !slices.Equal(e.Monitors, entries[j].Monitors) {
			if _, ok := c.ambiguous[e.ClusterID]; !ok {
				if c.ambiguous == nil {
					c.ambiguous = map[string]int{}
				}
				c.ambiguous[e.ClusterID] = i
			}
		}
	}
	return c
}

// Lookup returns a copy of the monitors of clusterID: those of the first
// entry with it, as Ceph CSI connects to them. Errors are *LookupError
// matching ErrNoClusterEntry, ErrNoMonitors (Ceph CSI fails there too) or
// ErrAmbiguousClusterID (a later entry has other monitors: Ceph CSI would use
// the first, which may not be the cluster the volume is on).
func (c ClusterConfig) Lookup(clusterID string) ([]string, error) {
	i, ok := c.first[clusterID]
	if !ok {
		return nil, &LookupError{ClusterID: clusterID, Err: ErrNoClusterEntry}
	}
	if len(c.entries[i].Monitors) == 0 {
		return nil, &LookupError{ClusterID: clusterID, Entries: []int{i}, Err: ErrNoMonitors}
	}
	if j, ok := c.ambiguous[clusterID]; ok {
		return nil, &LookupError{ClusterID: clusterID, Entries: []int{i, j}, Err: ErrAmbiguousClusterID}
	}
	return slices.Clone(c.entries[i].Monitors), nil
}

// RBDRadosNamespace is the RBD rados namespace of the entry Ceph CSI uses
// for clusterID ("" when it has none, or there is no such entry).
func (c ClusterConfig) RBDRadosNamespace(clusterID string) string {
	i, ok := c.first[clusterID]
	if !ok || c.entries[i].RBD == nil {
		return ""
	}
	return c.entries[i].RBD.RadosNamespace
}

// CephFSSubvolumeGroup is the subvolume group Ceph CSI gives the CephFS
// volumes of clusterID (DefaultSubvolumeGroup when its entry names none);
// ok is false when there is no entry.
func (c ClusterConfig) CephFSSubvolumeGroup(clusterID string) (group string, ok bool) {
	i, ok := c.first[clusterID]
	if !ok {
		return "", false
	}
	if e := c.entries[i]; e.CephFS != nil && e.CephFS.SubvolumeGroup != "" {
		return e.CephFS.SubvolumeGroup, true
	}
	return DefaultSubvolumeGroup, true
}

// CephFSGroupClusterID finds the clusterID whose volumes Ceph CSI puts in
// subvolume group group on the cluster of clusterID: clusterID itself when
// its group is that one, else the first entry with the same monitors and
// that group. ok is false when no entry serves the group.
func (c ClusterConfig) CephFSGroupClusterID(clusterID, group string) (string, bool) {
	mons, err := c.Lookup(clusterID)
	if err != nil {
		return "", false
	}
	if g, _ := c.CephFSSubvolumeGroup(clusterID); g == group {
		return clusterID, true
	}
	for i, e := range c.entries {
		if c.first[e.ClusterID] != i {
			continue // Ceph CSI reads the first entry of a clusterID only
		}
		if g, _ := c.CephFSSubvolumeGroup(e.ClusterID); g == group && slices.Equal(e.Monitors, mons) {
			if _, err := c.Lookup(e.ClusterID); err == nil {
				return e.ClusterID, true
			}
		}
	}
	return "", false
}

// CephFSGroupEntry is the entry CephFS volumes of subvolume group group
// need on the cluster of base (whose monitors it copies): base itself when
// the group is DefaultSubvolumeGroup, else an entry whose clusterID is
// base's followed by "-" and the group (a digest of both when that would
// make a volume ID longer than Ceph CSI's 128 bytes).
func CephFSGroupEntry(base ClusterEntry, group string) ClusterEntry {
	if group == DefaultSubvolumeGroup {
		return base.clone()
	}
	id := base.ClusterID + "-" + group
	if len(id) > maxClusterIDLen {
		id = volumeid.ClusterIDFromList([]string{base.ClusterID, "subvolumeGroup=" + group})
	}
	return ClusterEntry{ClusterID: id, Monitors: slices.Clone(base.Monitors), CephFS: &CephFSSettings{SubvolumeGroup: group}}
}

// Warnings describes the entries Ceph CSI accepts but that are likely
// mistakes, in entry order: an empty clusterID, no monitors, an empty
// monitor address, a clusterID listed again (ignored by Ceph CSI; an error
// for lookups when its monitors differ).
func (c ClusterConfig) Warnings() []string {
	var out []string
	for i, e := range c.entries {
		switch first := c.first[e.ClusterID]; {
		case first != i && c.ambiguous[e.ClusterID] == i:
			out = append(out, fmt.Sprintf("entry %d: clusterID %q again, with monitors %q other than those of entry %d; Ceph CSI uses entry %d, translations that need this clusterID fail", i, e.ClusterID, e.Monitors, first, first))
			continue
		case first != i:
			out = append(out, fmt.Sprintf("entry %d: clusterID %q again (entry %d); Ceph CSI ignores this entry", i, e.ClusterID, first))
			continue
		}
		if e.ClusterID == "" {
			out = append(out, fmt.Sprintf("entry %d: clusterID is empty; no volume can use it", i))
		}
		if len(e.Monitors) == 0 {
			out = append(out, fmt.Sprintf("entry %d: clusterID %q has no monitors; Ceph CSI fails every volume of this cluster", i, e.ClusterID))
		} else if slices.Contains(e.Monitors, "") {
			out = append(out, fmt.Sprintf("entry %d: clusterID %q has an empty monitor address", i, e.ClusterID))
		}
	}
	return out
}

// EntryFor returns the entry migration needs for a monitor list: the clusterID
// is [volumeid.ClusterIDFromList] of the list. Ceph CSI must keep this entry
// as long as volumes migrated from these monitors exist, even after the
// monitors change, because their handles embed the clusterID.
func EntryFor(monitors []string) ClusterEntry {
	return ClusterEntry{ClusterID: volumeid.ClusterIDFromList(monitors), Monitors: slices.Clone(monitors)}
}

// Entries returns a copy of the entries in their original order.
func (c ClusterConfig) Entries() []ClusterEntry {
	out := make([]ClusterEntry, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.clone()
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

// ErrMonitorsNotFound is matched by a *MonitorsNotFoundError.
var ErrMonitorsNotFound = errors.New("no monitors found for the volume")

// MonitorsNotFoundError says where a reverse translation looked for
// a volume's monitors and found none.
type MonitorsNotFoundError struct {
	// ClusterID is the clusterID looked up, "" when the volume had none.
	ClusterID string
	// Lookup is the *LookupError of the cluster config, nil when there was
	// no clusterID to look up.
	Lookup error
}

// Error implements error.
func (e *MonitorsNotFoundError) Error() string {
	s := "no carried annotation, no \"monitors\" volume attribute"
	if e.Lookup == nil {
		return s + ", and no clusterID to look up"
	}
	return s + ", and in the Ceph CSI cluster config " + e.Lookup.Error()
}

// Unwrap returns ErrMonitorsNotFound and the lookup error, if any.
func (e *MonitorsNotFoundError) Unwrap() []error {
	if e.Lookup == nil {
		return []error{ErrMonitorsNotFound}
	}
	return []error{ErrMonitorsNotFound, e.Lookup}
}

// IsMigration reports whether e is an entry migration makes rather than one
// a deployment names: its clusterID is derived from its own monitors
// ([EntryFor]), or for a CephFS subvolume group, from those and the group
// ([CephFSGroupEntry]).
func (e ClusterEntry) IsMigration() bool {
	base := EntryFor(e.Monitors)
	if e.ClusterID == base.ClusterID {
		return true
	}
	return e.CephFS != nil && e.CephFS.SubvolumeGroup != "" && e.ClusterID == CephFSGroupEntry(base, e.CephFS.SubvolumeGroup).ClusterID
}

// Served are the entries Ceph CSI reads, in order: the first of each
// clusterID, with monitors, and not ambiguous (Lookup succeeds).
func (c ClusterConfig) Served() []ClusterEntry {
	var out []ClusterEntry
	for i, e := range c.entries {
		if c.first[e.ClusterID] != i {
			continue
		}
		if _, err := c.Lookup(e.ClusterID); err == nil {
			out = append(out, e.clone())
		}
	}
	return out
}
