package volumeid

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

const (
	cephfsHandleKind   = "CephFS migration handle"
	cephfsHandlePrefix = "mig_cephfs_"
	// CephFSHandleLen is the length of every CephFS migration handle.
	CephFSHandleLen = len(cephfsHandlePrefix) + 32 + 1 + 2*sha256.Size
)

// CephFSHandle is this project's migration volume handle for an in-tree
// CephFS volume. Kubernetes and Ceph CSI never defined one: Ceph CSI treats
// the handle of a static CephFS volume as an opaque, unique key, so any
// deterministic unique string works. The format is
//
//	mig_cephfs_<ClusterID>_<64 lowercase hex digits of Digest>
//
// always [CephFSHandleLen] (108) bytes, within CSI's 128-byte limit however
// long the path. Digest is SHA-256 over a versioned, length-prefixed encoding
// of the joined monitors, the file-system name and the root path, so distinct
// volumes get distinct handles. The clusterID is readable from the handle;
// the path and file system are not (they travel in the volume attributes).
type CephFSHandle struct {
	// ClusterID is [ClusterIDFromList] of the monitors.
	ClusterID string
	// Digest identifies the (monitors, file system, path) triple.
	Digest [sha256.Size]byte
}

// NewCephFSHandle returns the handle of the CephFS directory rootPath in file
// system fsName ("" for the cluster's default file system) on the given
// monitors. rootPath should already be normalised as the in-tree plugin does
// ("/" when empty, a leading "/" added). It is the one way to build a
// CephFSHandle from an in-tree source.
func NewCephFSHandle(monitors []string, fsName, rootPath string) CephFSHandle {
	var buf [256]byte
	mons := appendJoined(buf[:0], monitors)
	var cid [32]byte
	clusterIDOfBytes(&cid, mons)
	return CephFSHandle{ClusterID: string(cid[:]), Digest: cephfsDigest(mons, []byte(fsName), []byte(rootPath))}
}

// cephfsDigest is SHA-256 over the length-prefixed version tag, joined
// monitors, file-system name and root path, hashed from a stack buffer when
// they fit.
func cephfsDigest(joinedMonitors, fsName, rootPath []byte) [sha256.Size]byte {
	var buf [512]byte
	b := buf[:0]
	b = binary.BigEndian.AppendUint64(b, uint64(len(cephfsDigestTag)))
	b = append(b, cephfsDigestTag...)
	for _, s := range [...][]byte{joinedMonitors, fsName, rootPath} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return sha256.Sum256(b)
}

// cephfsDigestTag versions the digest input.
const cephfsDigestTag = "csimigrate cephfs v1"

// String returns the handle text.
func (h CephFSHandle) String() string {
	var buf [CephFSHandleLen]byte
	return string(h.AppendTo(buf[:0]))
}

// AppendTo appends the text of [CephFSHandle.String] to b.
func (h CephFSHandle) AppendTo(b []byte) []byte {
	b = append(b, cephfsHandlePrefix...)
	b = append(b, h.ClusterID...)
	b = append(b, '_')
	return hex.AppendEncode(b, h.Digest[:])
}

// MarshalText implements encoding.TextMarshaler.
func (h CephFSHandle) MarshalText() ([]byte, error) {
	s := h.String()
	if _, err := ParseCephFSHandle(s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [ParseCephFSHandle].
func (h *CephFSHandle) UnmarshalText(text []byte) error {
	p, err := ParseCephFSHandle(string(text))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ParseCephFSHandle parses a CephFS migration handle.
func ParseCephFSHandle(s string) (CephFSHandle, error) {
	if !strings.HasPrefix(s, cephfsHandlePrefix) {
		return CephFSHandle{}, parseErr(cephfsHandleKind, s, `want "mig_cephfs_<clusterID>_<sha256 hex>"`)
	}
	if len(s) != CephFSHandleLen {
		return CephFSHandle{}, parseErr(cephfsHandleKind, s, "want exactly 108 characters")
	}
	rest := s[len(cephfsHandlePrefix):]
	cid, dig := rest[:32], rest[32:]
	if !isClusterIDDigest(cid) {
		return CephFSHandle{}, parseErr(cephfsHandleKind, s, "clusterID must be 32 lowercase hexadecimal digits")
	}
	if dig[0] != '_' || !isLowerHex(dig[1:]) {
		return CephFSHandle{}, parseErr(cephfsHandleKind, s, `want "_" and 64 lowercase hexadecimal digits after the clusterID`)
	}
	var h CephFSHandle
	h.ClusterID = cid
	_, _ = hex.Decode(h.Digest[:], []byte(dig[1:]))
	return h, nil
}
