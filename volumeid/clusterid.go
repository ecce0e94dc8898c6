package volumeid

import (
	"crypto/md5"
	"encoding/hex"
)

// ClusterID returns the Ceph CSI clusterID that CSI migration derives from an
// in-tree monitor string: the lowercase hexadecimal MD5 digest of the string
// exactly as given.
//
// Nothing is trimmed or added, so spacing matters: "a:6789,b:6789" and
// "a:6789, b:6789" are different clusters to Ceph CSI. For a StorageClass the
// raw "monitors" parameter is hashed; for a PV, the monitor list joined with
// "," (see [ClusterIDFromList]).
//
// A common mistake when creating the Ceph CSI config map by hand is
// `md5sum <<< "$MONS"`: the here-string appends a newline, which gives a
// different digest (for "10.70.53.126:6789", 59df45780b8ee3815ba699f4aeca6744
// instead of b7f67366bb43f32e07d8a261a7840da9). The right shell form is
// `printf %s "$MONS" | md5sum`.
func ClusterID(monitors string) string {
	var digits [32]byte
	clusterIDInto(&digits, monitors)
	return string(digits[:])
}

// clusterIDInto writes ClusterID(monitors) into dst without allocating for
// monitor strings of usual length.
func clusterIDInto(dst *[32]byte, monitors string) {
	var buf [256]byte
	if len(monitors) <= len(buf) {
		n := copy(buf[:], monitors)
		clusterIDOfBytes(dst, buf[:n])
	} else {
		clusterIDOfBytes(dst, []byte(monitors))
	}
}

// clusterIDOfBytes writes ClusterID(string(monitors)) into dst.
func clusterIDOfBytes(dst *[32]byte, monitors []byte) {
	sum := md5.Sum(monitors)
	hex.Encode(dst[:], sum[:])
}

// ClusterIDFromList returns [ClusterID] of the monitors joined with ",", as
// csi-translation-lib does for the monitor list of an RBD PV.
func ClusterIDFromList(monitors []string) string {
	var buf [256]byte
	var cid [32]byte
	clusterIDOfBytes(&cid, appendJoined(buf[:0], monitors))
	return string(cid[:])
}

// appendJoined appends the monitors joined with "," to b.
func appendJoined(b []byte, monitors []string) []byte {
	for i, m := range monitors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return b
}

// isClusterIDDigest reports whether s looks like a ClusterID result: 32
// lowercase hexadecimal characters.
func isClusterIDDigest(s string) bool {
	if len(s) != 32 {
		return false
	}
	return isLowerHex(s)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
