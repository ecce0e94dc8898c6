package volumeid

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// RBDImagePrefix is the prefix of the images the in-tree RBD provisioner
// created. The migration handle leaves it out and Ceph CSI always adds it back.
const RBDImagePrefix = "kubernetes-dynamic-pvc-"

const (
	rbdHandleKind = "RBD migration handle"
	rbdMigField   = "mig"
	rbdMonsPrefix = "mons-"
	rbdImgPrefix  = "image-"
)

// ErrUnrepresentable is wrapped by *UnrepresentableError: the RBD image (or
// pool) cannot be written into a migration handle in a way that Ceph CSI reads
// back as the same image.
var ErrUnrepresentable = errors.New("RBD image cannot be represented in a migration handle")

// RBDHandle is the migration volume handle of an in-tree RBD volume:
//
//	mig_mons-<ClusterID>_image-<Image without RBDImagePrefix>_<hex of Pool>
//
// This is the format k8s.io/csi-translation-lib v0.30 composes and Ceph CSI
// parses for migrated volumes. Ceph CSI adds [RBDImagePrefix] back to whatever
// follows "image-", so only images that carry the prefix, and whose remainder
// has no "_" and no "image-", survive a round trip (see [NewRBDHandle]).
//
// The zero RBDHandle is not valid.
type RBDHandle struct {
	// ClusterID is the Ceph CSI clusterID, [ClusterID] of the monitors.
	ClusterID string
	// Pool is the RADOS pool of the image.
	Pool string
	// Image is the full RBD image name, prefix included.
	Image string
}

// NewRBDHandle composes the migration handle of an image on the given
// monitors and pool exactly as csi-translation-lib v0.30.14 does, so that both
// libraries give a volume the same handle. It is the one way to build an
// RBDHandle from an in-tree source.
//
// When Ceph CSI would read the handle as a different volume (an image
// without [RBDImagePrefix], a "_" or "image-" after it, an empty pool), the
// handle is still returned, because the node side of Ceph CSI uses the
// imageName attribute and mounts work, but the error is an
// *[UnrepresentableError] that says what Ceph CSI's delete and expand would
// act on instead.
func NewRBDHandle(monitors []string, pool, image string) (RBDHandle, error) {
	h := RBDHandle{ClusterID: ClusterIDFromList(monitors), Pool: pool, Image: image}
	if representable(pool, image) {
		return h, nil
	}
	s := h.String()
	got, err := CephCSIReadRBDHandle(s)
	return h, &UnrepresentableError{Handle: s, Want: h, CephCSIReads: got, CephCSIErr: err}
}

// representable reports whether Ceph CSI reads the handle composed for
// (pool, image) with an MD5 clusterID back as the same image and pool (see
// [CephCSIReadRBDHandle]): the image carries the prefix, and what follows it
// has no "_" (a field separator) and no "image-" (where Ceph CSI cuts the
// name); the pool is not empty. The bare prefix is fine: Ceph CSI adds the
// prefix to an empty name.
func representable(pool, image string) bool {
	rest, ok := strings.CutPrefix(image, RBDImagePrefix)
	return ok && pool != "" &&
		strings.IndexByte(rest, '_') < 0 && !strings.Contains(rest, rbdImgPrefix)
}

// String returns the handle in the csi-translation-lib format.
func (h RBDHandle) String() string {
	var buf [256]byte
	return string(h.AppendTo(buf[:0]))
}

// AppendTo appends the text of [RBDHandle.String] to b.
func (h RBDHandle) AppendTo(b []byte) []byte {
	b = append(b, rbdMigField...)
	b = append(b, '_')
	b = append(b, rbdMonsPrefix...)
	b = append(b, h.ClusterID...)
	b = append(b, '_')
	b = append(b, rbdImgPrefix...)
	b = append(b, strings.TrimPrefix(h.Image, RBDImagePrefix)...)
	b = append(b, '_')
	return hex.AppendEncode(b, []byte(h.Pool))
}

// MarshalText implements encoding.TextMarshaler. It fails for a handle that
// [ParseRBDHandle] would not accept back.
func (h RBDHandle) MarshalText() ([]byte, error) {
	s := h.String()
	if _, err := ParseRBDHandle(s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [ParseRBDHandle].
func (h *RBDHandle) UnmarshalText(text []byte) error {
	p, err := ParseRBDHandle(string(text))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ParseRBDHandle parses a migration handle strictly: exactly four
// "_"-separated fields "mig", "mons-<32 lowercase hex digits>",
// "image-<name>" and the lowercase hex encoding of a non-empty pool, in that
// order, with a name that contains no "image-". Every handle it accepts is
// read by Ceph CSI as the same cluster, pool and image, and String gives the
// input back.
//
// Ceph CSI itself is looser (see [CephCSIReadRBDHandle]): it finds the fields
// by substring, in any order, never checks the first, and accepts uppercase
// hex.
func ParseRBDHandle(s string) (RBDHandle, error) {
	f0, rest, ok := strings.Cut(s, "_")
	if !ok || f0 != rbdMigField {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `want "mig_mons-<clusterID>_image-<name>_<hex pool>": first field must be "mig"`)
	}
	f1, rest, ok := strings.Cut(rest, "_")
	if !ok || !strings.HasPrefix(f1, rbdMonsPrefix) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `second field must be "mons-<clusterID>"`)
	}
	cid := f1[len(rbdMonsPrefix):]
	if !isClusterIDDigest(cid) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, "clusterID must be 32 lowercase hexadecimal digits (the MD5 of the monitors)")
	}
	f2, f3, ok := strings.Cut(rest, "_")
	if !ok || !strings.HasPrefix(f2, rbdImgPrefix) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `third field must be "image-<name>"`)
	}
	name := f2[len(rbdImgPrefix):]
	if name == "" {
		return RBDHandle{}, parseErr(rbdHandleKind, s, "image name is empty")
	}
	if strings.Contains(name, rbdImgPrefix) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `image name must not contain "image-" (Ceph CSI would truncate it)`)
	}
	if strings.IndexByte(f3, '_') >= 0 {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `too many "_"-separated fields: want exactly 4`)
	}
	if f3 == "" || len(f3)%2 != 0 || !isLowerHex(f3) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, "last field must be the non-empty lowercase hexadecimal encoding of the pool name")
	}
	return RBDHandle{ClusterID: cid, Pool: decodeLowerHex(f3), Image: RBDImagePrefix + name}, nil
}

// decodeLowerHex decodes checked lowercase hex with one allocation, the
// returned string.
func decodeLowerHex(s string) string {
	var b strings.Builder
	b.Grow(len(s) / 2)
	for i := 0; i+1 < len(s); i += 2 {
		b.WriteByte(unhex(s[i])<<4 | unhex(s[i+1]))
	}
	return b.String()
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// IsRBDHandle reports whether s is a migration handle that [ParseRBDHandle]
// accepts. Unlike Ceph CSI's own test, which only looks for the substrings
// "mig", "image-" and "mons-" anywhere in the handle (so that, for example, a
// Ceph CSI volume ID of a pool named "image-mons-mig" would qualify), it
// checks the whole structure.
func IsRBDHandle(s string) bool {
	_, err := ParseRBDHandle(s)
	return err == nil
}

// CephCSIReadRBDHandle reads s the way Ceph CSI (v3.5 to v3.12) reads a
// migration handle, looseness included, and returns what Ceph CSI would act on.
// It exists to predict Ceph CSI's behaviour, for example which image a
// DeleteVolume of a handle would delete; use [ParseRBDHandle] to validate.
//
// Ceph CSI splits on "_" and needs at least four fields; fields from the
// fourth on, joined with "_", are the hex-encoded pool; among the first three,
// a field containing "image-" gives the image (RBDImagePrefix followed by the
// text between the first and second "image-") and one containing "mons-" gives
// the clusterID (the field with the characters of "mons-" trimmed from both
// ends). The last match wins.
func CephCSIReadRBDHandle(s string) (RBDHandle, error) {
	if !strings.Contains(s, rbdMigField) || !strings.Contains(s, rbdImgPrefix) || !strings.Contains(s, rbdMonsPrefix) {
		return RBDHandle{}, parseErr(rbdHandleKind, s, `Ceph CSI does not treat it as a migration handle: it lacks one of "mig", "image-", "mons-"`)
	}
	fields := strings.Split(s, "_")
	if len(fields) < 4 {
		return RBDHandle{}, parseErr(rbdHandleKind, s, "Ceph CSI: invalid VolumeID (fewer than 4 fields)")
	}
	pool, err := hex.DecodeString(strings.Join(fields[3:], "_"))
	if err != nil {
		return RBDHandle{}, parseErr(rbdHandleKind, s, "Ceph CSI: pool information can not be empty in volID (pool field is not hexadecimal)")
	}
	var h RBDHandle
	h.Pool = string(pool)
	for _, f := range fields[:3] {
		switch {
		case strings.Contains(f, rbdImgPrefix):
			h.Image = RBDImagePrefix + strings.Split(f, rbdImgPrefix)[1]
		case strings.Contains(f, rbdMonsPrefix):
			h.ClusterID = strings.Trim(f, rbdMonsPrefix)
		}
	}
	switch {
	case h.Image == "":
		return RBDHandle{}, parseErr(rbdHandleKind, s, "Ceph CSI: image name is empty")
	case h.Pool == "":
		return RBDHandle{}, parseErr(rbdHandleKind, s, "Ceph CSI: pool information can not be empty in volID")
	case h.ClusterID == "":
		return RBDHandle{}, parseErr(rbdHandleKind, s, "Ceph CSI: failed to get clusterID from monitors hash in volID")
	}
	return h, nil
}

// UnrepresentableError reports an RBD image whose migration handle Ceph CSI
// reads as something else. Mounts still work (the node side uses the
// imageName attribute), but Ceph CSI's DeleteVolume and ControllerExpandVolume
// act on CephCSIReads, or fail; a delete of a nonexistent image is reported as
// success, so the real image leaks. Remedies: keep the PV's reclaim policy
// Retain, or give the PV an rbd.csi.ceph.com/volume-handle annotation with a
// handle Ceph CSI resolves correctly.
type UnrepresentableError struct {
	// Handle is the composed handle (identical to csi-translation-lib's).
	Handle string
	// Want is the volume the handle was composed for.
	Want RBDHandle
	// CephCSIReads is what Ceph CSI reads from Handle; zero when it fails.
	CephCSIReads RBDHandle
	// CephCSIErr is Ceph CSI's parse failure, if it fails.
	CephCSIErr error
}

// Error implements error.
func (e *UnrepresentableError) Error() string {
	if e.CephCSIErr != nil {
		return fmt.Sprintf("RBD image %q in pool %q: Ceph CSI cannot parse the migration handle %q (%v); its expand fails with Internal and its delete with InvalidArgument, retried for ever", e.Want.Image, e.Want.Pool, e.Handle, e.CephCSIErr)
	}
	return fmt.Sprintf("RBD image %q in pool %q: Ceph CSI reads the migration handle %q as image %q in pool %q; expand and delete act on that image when it exists, and when it does not, delete reports success and the real one leaks (keep reclaim policy Retain, or set annotation rbd.csi.ceph.com/volume-handle)", e.Want.Image, e.Want.Pool, e.Handle, e.CephCSIReads.Image, e.CephCSIReads.Pool)
}

// Unwrap returns ErrUnrepresentable.
func (e *UnrepresentableError) Unwrap() error { return ErrUnrepresentable }

// RBDDefaultPool is the pool of an in-tree RBD volume or class that names
// none: the API server sets it on PVs (and the in-tree provisioner used it
// for classes).
const RBDDefaultPool = "rbd"

// RBDPool is pool, or RBDDefaultPool when it is empty.
func RBDPool(pool string) string { return cmp.Or(pool, RBDDefaultPool) }
