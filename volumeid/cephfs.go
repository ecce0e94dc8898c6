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
// ("/" when empty, a leading "/" added).
func NewCephFSHandle(monitors []string, fsName, rootPath string) CephFSHandle {
	mons := strings.Join(monitors, ",")
	h := sha256.New()
	var n [8]byte
	write := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write("csimigrate cephfs v1")
	write(mons)
	write(fsName)
	write(rootPath)
	var out CephFSHandle
	out.ClusterID = ClusterID(mons)
	h.Sum(out.Digest[:0])
	return out
}

// String returns the handle text.
func (h CephFSHandle) String() string {
	return cephfsHandlePrefix + h.ClusterID + "_" + hex.EncodeToString(h.Digest[:])
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
