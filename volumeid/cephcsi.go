package volumeid

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

const (
	cephCSIKind = "Ceph CSI volume ID"
	// CephCSIMaxIDLen is the longest volume ID Ceph CSI composes.
	CephCSIMaxIDLen = 128
	// cephCSIFixedLen is the length of everything but the clusterID.
	cephCSIFixedLen = 64
	// CephCSIMaxClusterIDLen is the longest clusterID a volume ID can carry.
	CephCSIMaxClusterIDLen = CephCSIMaxIDLen - cephCSIFixedLen
	uuidLen                = 36
)

// CephCSIVolumeID is the volume ID Ceph CSI composes for a volume it
// provisions:
//
//	<%04x Version>-<%04x len(ClusterID)>-<ClusterID>-<%016x Location>-<ObjectUUID>
//
// for example
// 0001-0020-b7f67366bb43f32e07d8a261a7840da9-0000000000000002-c867ff35-3f04-11ec-b823-0242ac110003.
// Location is the pool ID for RBD and the file-system ID (fscid) for CephFS;
// Ceph CSI writes it as the two's complement of a signed 64-bit integer.
// The images and subvolumes behind such IDs are named "csi-vol-<ObjectUUID>".
type CephCSIVolumeID struct {
	// Version is the encoding version; Ceph CSI writes 1.
	Version uint16
	// ClusterID is the key of the cluster in Ceph CSI's config map; at most
	// CephCSIMaxClusterIDLen bytes.
	ClusterID string
	// Location is the pool ID (RBD) or fscid (CephFS).
	Location int64
	// ObjectUUID is the 36-character UUID of the image or subvolume.
	ObjectUUID string
}

// String composes the ID as Ceph CSI does. The result is meaningful only for
// an ID that [CephCSIVolumeID.Validate] accepts.
func (id CephCSIVolumeID) String() string {
	return string(id.AppendTo(make([]byte, 0, cephCSIFixedLen+len(id.ClusterID))))
}

// AppendTo appends the text of [CephCSIVolumeID.String] to b.
func (id CephCSIVolumeID) AppendTo(b []byte) []byte {
	var buf [8]byte
	binary.BigEndian.PutUint16(buf[:2], id.Version)
	b = hex.AppendEncode(b, buf[:2])
	b = append(b, '-')
	binary.BigEndian.PutUint16(buf[:2], uint16(len(id.ClusterID)))
	b = hex.AppendEncode(b, buf[:2])
	b = append(b, '-')
	b = append(b, id.ClusterID...)
	b = append(b, '-')
	binary.BigEndian.PutUint64(buf[:], uint64(id.Location))
	b = hex.AppendEncode(b, buf[:])
	b = append(b, '-')
	return append(b, id.ObjectUUID...)
}

// Validate reports whether Ceph CSI would compose id: the clusterID is not
// empty and at most CephCSIMaxClusterIDLen bytes, and ObjectUUID is a UUID in
// its 8-4-4-4-12 textual form.
func (id CephCSIVolumeID) Validate() error {
	s := id.String()
	switch {
	case id.ClusterID == "":
		return parseErr(cephCSIKind, s, "clusterID is empty")
	case len(id.ClusterID) > CephCSIMaxClusterIDLen:
		return parseErr(cephCSIKind, s, "clusterID is longer than "+strconv.Itoa(CephCSIMaxClusterIDLen)+" bytes")
	case !isUUID(id.ObjectUUID):
		return parseErr(cephCSIKind, s, "object UUID must be 36 characters in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	}
	return nil
}

// MarshalText implements encoding.TextMarshaler; it fails for an invalid ID.
func (id CephCSIVolumeID) MarshalText() ([]byte, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	return []byte(id.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [ParseCephCSIVolumeID].
func (id *CephCSIVolumeID) UnmarshalText(text []byte) error {
	p, err := ParseCephCSIVolumeID(string(text))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseCephCSIVolumeID parses a Ceph CSI volume ID. It accepts every ID Ceph
// CSI composes and, unlike Ceph CSI's own decoder, also checks the "-"
// separators, that the hexadecimal fields are lowercase hex, and the UUID's
// form, so that String gives the input back.
func ParseCephCSIVolumeID(s string) (CephCSIVolumeID, error) {
	var id CephCSIVolumeID
	if len(s) < cephCSIFixedLen+1 {
		return id, parseErr(cephCSIKind, s, "too short: want <version>-<clusterID length>-<clusterID>-<location>-<uuid>, at least 65 characters")
	}
	if len(s) > CephCSIMaxIDLen {
		return id, parseErr(cephCSIKind, s, "longer than 128 characters")
	}
	v, ok := hex16(s[0:4])
	if !ok || s[4] != '-' {
		return id, parseErr(cephCSIKind, s, `want 4 lowercase hex digits of encoding version, then "-"`)
	}
	n, ok := hex16(s[5:9])
	if !ok || s[9] != '-' {
		return id, parseErr(cephCSIKind, s, `want 4 lowercase hex digits of clusterID length after the version, then "-"`)
	}
	if int(n) == 0 || cephCSIFixedLen+int(n) != len(s) {
		return id, parseErr(cephCSIKind, s, "clusterID length field "+strconv.Itoa(int(n))+" does not match the ID's length")
	}
	i := 10 + int(n)
	if s[i] != '-' {
		return id, parseErr(cephCSIKind, s, `want "-" after the clusterID`)
	}
	loc := s[i+1 : i+17]
	if !isLowerHex(loc) || s[i+17] != '-' {
		return id, parseErr(cephCSIKind, s, `want 16 lowercase hex digits of location (pool ID or fscid) after the clusterID, then "-"`)
	}
	var buf [8]byte
	_, _ = hex.Decode(buf[:], []byte(loc))
	id = CephCSIVolumeID{
		Version:    v,
		ClusterID:  s[10:i],
		Location:   int64(binary.BigEndian.Uint64(buf[:])),
		ObjectUUID: s[i+18:],
	}
	if !isUUID(id.ObjectUUID) {
		return CephCSIVolumeID{}, parseErr(cephCSIKind, s, "object UUID must be 36 characters in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	}
	return id, nil
}

func hex16(s string) (uint16, bool) {
	if len(s) != 4 || !isLowerHex(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 16)
	return uint16(v), err == nil
}

// isUUID reports whether s has the textual UUID form (hex digits of either
// case, dashes at 8, 13, 18 and 23).
func isUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
