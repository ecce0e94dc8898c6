package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Keys of Ceph secrets.
const (
	// CephInTreeKey holds the key in an in-tree Ceph secret.
	CephInTreeKey = "key"
	// CephMigrationUserKey names the RADOS user in an in-tree RBD secret used
	// by migrated volumes (note the case: not adminID).
	CephMigrationUserKey = "adminId"
	// CephUserID and CephUserKey are Ceph CSI's node credentials.
	CephUserID  = "userID"
	CephUserKey = "userKey"
	// CephDefaultUser is the user of a migration secret without adminId.
	CephDefaultUser = "admin"
)

// Errors of CephCSICredentials, with Ceph CSI's messages.
var (
	ErrCephSecretEmpty = errors.New("provided secret is empty")
	ErrCephMissingID   = errors.New("missing ID field 'userID' in secrets")
	ErrCephMissingKey  = errors.New("missing key field 'userKey' in secrets")
	// ErrCephNoKey: an in-tree Ceph secret has no usable key.
	ErrCephNoKey = errors.New("in-tree Ceph secret has no key")
)

// CephCredentials are the credentials Ceph CSI derives from a request's
// secrets.
type CephCredentials struct {
	// ID is the RADOS user, without "client.".
	ID string
	// Key is the user's key.
	Key Value
	// Migration reports that the secret was read as an in-tree migration
	// secret (a non-empty "key").
	Migration bool
}

// CephCSICredentials reads a CSI request's secrets as Ceph CSI's RBD driver
// does (v3.5 to v3.12): a map with a non-empty "key" is a migration secret,
// giving {ID: adminId, or admin when absent or empty; Key: key}, all other
// fields ignored; otherwise "userID" and "userKey" are required. The errors
// are ErrCephSecretEmpty, ErrCephMissingID and ErrCephMissingKey. The CephFS
// driver has no migration remap: use [CephCSIUserCredentials] for it.
func CephCSICredentials(secrets map[string]string) (CephCredentials, error) {
	if len(secrets) == 0 {
		return CephCredentials{}, ErrCephSecretEmpty
	}
	if k := secrets[CephInTreeKey]; k != "" {
		id := secrets[CephMigrationUserKey]
		if id == "" {
			id = CephDefaultUser
		}
		return CephCredentials{ID: id, Key: NewValue(k), Migration: true}, nil
	}
	return CephCSIUserCredentials(secrets)
}

// CephCSIUserCredentials reads "userID" and "userKey" as Ceph CSI does for a
// non-migration secret (and for every CephFS secret).
func CephCSIUserCredentials(secrets map[string]string) (CephCredentials, error) {
	if len(secrets) == 0 {
		return CephCredentials{}, ErrCephSecretEmpty
	}
	id, ok := secrets[CephUserID]
	if !ok || id == "" {
		return CephCredentials{}, ErrCephMissingID
	}
	key := secrets[CephUserKey]
	if key == "" {
		return CephCredentials{}, ErrCephMissingKey
	}
	return CephCredentials{ID: id, Key: NewValue(key)}, nil
}

// SecretStringData returns a Secret's data and stringData merged as strings,
// as the API server stores them (stringData wins).
func SecretStringData(s *v1.Secret) map[string]string {
	if s == nil {
		return nil
	}
	m := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		m[k] = string(v)
	}
	for k, v := range s.StringData {
		m[k] = v
	}
	return m
}

// Fix is a change an administrator must make to a Secret.
type Fix struct {
	// Namespace and Name identify the Secret.
	Namespace, Name string
	// Field is the data key to add or change.
	Field string
	// Value is the value to set; it is never secret (a user name).
	Value string
	// Reason explains the fix.
	Reason string
}

// String describes the fix.
func (f Fix) String() string {
	return fmt.Sprintf("secret %s/%s: set %s=%q: %s", f.Namespace, f.Name, f.Field, f.Value, f.Reason)
}

// CephMigrationSecretFixes tells what an in-tree RBD secret used by a volume
// of RADOS user user ("" means admin) needs so that Ceph CSI, reading it as a
// migration secret, uses the same credentials: a non-empty "key" (without it
// there is nothing to fix automatically: an error wrapping ErrCephNoKey), and
// "adminId" equal to the user when the user is not admin (translation cannot
// carry the user: Ceph CSI reads it from the secret).
func CephMigrationSecretFixes(secret *v1.Secret, user string) ([]Fix, error) {
	if secret == nil {
		return nil, fmt.Errorf("%w: no secret given", ErrCephNoKey)
	}
	data := SecretStringData(secret)
	if data[CephInTreeKey] == "" {
		return nil, fmt.Errorf("%w: secret %s/%s has no non-empty %q (fields: %q)", ErrCephNoKey, secret.Namespace, secret.Name, CephInTreeKey, slices.Sorted(maps.Keys(data)))
	}
	if user == "" {
		user = CephDefaultUser
	}
	got := data[CephMigrationUserKey]
	if got == "" {
		got = CephDefaultUser
	}
	if got == user {
		return nil, nil
	}
	return []Fix{{Namespace: secret.Namespace, Name: secret.Name, Field: CephMigrationUserKey, Value: user,
		Reason: fmt.Sprintf("migrated volumes of RADOS user %q would otherwise connect as %q", user, got)}}, nil
}

// InTreeCephKey returns the key an in-tree Ceph plugin reads from a secret:
// "key" when present, else the single value of a one-entry secret.
func InTreeCephKey(secret *v1.Secret) (Value, error) {
	data := SecretStringData(secret)
	if k, ok := data[CephInTreeKey]; ok && k != "" {
		return NewValue(k), nil
	}
	if len(data) == 1 {
		for _, v := range data {
			if v != "" {
				return NewValue(v), nil
			}
		}
	}
	name := ""
	if secret != nil {
		name = secret.Namespace + "/" + secret.Name
	}
	return Value{}, fmt.Errorf("%w: secret %s has fields %q; want a non-empty %q or a single field", ErrCephNoKey, name, slices.Sorted(maps.Keys(data)), CephInTreeKey)
}

// CephFSCSISecretName returns the name of the CSI secret derived for a
// migrated CephFS volume from the in-tree secret name and the RADOS user
// ("" means admin): "<name>-csi-<user>" when that is a valid Secret name,
// otherwise "<name as one label, shortened>-csi-<10 hex digits of SHA-256 of
// name and user>".
// The rule is deterministic, so every volume of one (secret, user) pair
// shares one CSI secret, and the in-tree secret is left as it is for mounts
// still made by the in-tree plugin.
func CephFSCSISecretName(inTreeName, user string) string {
	if user == "" {
		user = CephDefaultUser
	}
	if name := inTreeName + "-csi-" + user; isDNS1123Subdomain(name) {
		return name
	}
	return hashedCephFSCSISecretName(inTreeName, user)
}

// hashedCephFSCSISecretName is the CephFSCSISecretName of a pair whose
// plain name is not a valid Secret name.
func hashedCephFSCSISecretName(inTreeName, user string) string {
	sum := sha256.Sum256([]byte(inTreeName + "\x00" + user))
	suffix := "-csi-" + hex.EncodeToString(sum[:5])
	base := strings.ToLower(inTreeName)
	base = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, base)
	if max := validation.DNS1123SubdomainMaxLength - len(suffix); len(base) > max {
		base = base[:max]
	}
	base = strings.Trim(base, "-")
	if base == "" {
		base = "cephfs"
	}
	return base + suffix
}

// isDNS1123Subdomain is validation.IsDNS1123Subdomain without the regexp
// (this runs on every CephFS translation): at most 253 characters, dot-separated
// labels of lowercase alphanumerics and "-" that start and end alphanumeric.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		switch {
		case alnum:
			start = false
		case c == '-' && !start && i+1 < len(s) && s[i+1] != '.':
		case c == '.' && !start && i+1 < len(s):
			start = true
		default:
			return false
		}
	}
	return !start
}

// CephFSCSISecret builds the Secret Ceph CSI needs to stage a migrated CephFS
// volume: in the in-tree secret's namespace, named by CephFSCSISecretName,
// with "userID" (the user, admin when "") and "userKey" (the key the in-tree
// plugin read). The in-tree secret is not modified.
func CephFSCSISecret(inTree *v1.Secret, user string) (*v1.Secret, error) {
	key, err := InTreeCephKey(inTree)
	if err != nil {
		return nil, err
	}
	if user == "" {
		user = CephDefaultUser
	}
	return &v1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      CephFSCSISecretName(inTree.Name, user),
			Namespace: inTree.Namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "csimigrate"},
			Annotations: map[string]string{
				"cephfs.csimigrate.io/derived-from": inTree.Name,
			},
		},
		Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{CephUserID: []byte(user), CephUserKey: []byte(key.Reveal())},
	}, nil
}

// Ceph CSI drivers whose secrets [CephCSISecretReady] judges.
const (
	// CephRBDDriver reads a secret with a non-empty "key" as a migration
	// secret (user from "adminId"), else "userID" and "userKey".
	CephRBDDriver = "rbd.csi.ceph.com"
	// CephFSDriver reads "userID" and "userKey" only.
	CephFSDriver = "cephfs.csi.ceph.com"
)

// ErrCephSecretUnusable is wrapped by the errors of [CephCSISecretReady]: the
// driver cannot authenticate with the secret as it is, and there is no field
// to add that would fix it without the key (which csimigrate never invents).
var ErrCephSecretUnusable = errors.New("the Ceph CSI driver cannot use this secret")

// CephCSISecretReady judges a Secret as the Ceph CSI driver named by driver
// (CephRBDDriver or CephFSDriver) reads it for a volume of RADOS user user
// ("" means admin): nil, nil when the driver authenticates as that user; the
// fixes (a field to add or change, never a key: adminId of a migration
// secret, userID of a userID/userKey secret, whose userKey must then be that
// user's key) when it would authenticate as another user; an error wrapping ErrCephSecretUnusable (and the driver's own error
// kind: ErrCephNoKey, ErrCephMissingID, ErrCephMissingKey, ErrCephSecretEmpty)
// when it cannot authenticate at all. A nil secret is an unusable one. Values
// never appear in the result.
//
// This is the one rule the plan, translate and rewrite -apply apply to every
// secret a migrated volume or class references: RBD (Ceph CSI v3.5 to v3.12)
// takes a non-empty "key" as a migration secret, whose user is "adminId"
// (admin when absent), and otherwise needs "userID" and "userKey"; CephFS has
// no migration remap and needs "userID" and "userKey".
func CephCSISecretReady(secret *v1.Secret, driver, user string) ([]Fix, error) {
	if user == "" {
		user = CephDefaultUser
	}
	if secret == nil {
		return nil, fmt.Errorf("%w: %w: no secret", ErrCephSecretUnusable, ErrCephSecretEmpty)
	}
	data := SecretStringData(secret)
	id := secret.Namespace + "/" + secret.Name
	fields := slices.Sorted(maps.Keys(data))
	switch driver {
	case CephRBDDriver:
		if data[CephInTreeKey] != "" {
			return CephMigrationSecretFixes(secret, user)
		}
		if _, err := CephCSIUserCredentials(data); err != nil {
			return nil, fmt.Errorf("%w: %w: secret %s has no non-empty %q and no %q with %q (fields: %q)",
				ErrCephSecretUnusable, ErrCephNoKey, id, CephInTreeKey, CephUserID, CephUserKey, fields)
		}
		return userIDFix(secret, data, user), nil
	case CephFSDriver:
		if _, err := CephCSIUserCredentials(data); err != nil {
			return nil, fmt.Errorf("%w: %w: secret %s needs non-empty %q and %q (fields: %q)", ErrCephSecretUnusable, err, id, CephUserID, CephUserKey, fields)
		}
		return userIDFix(secret, data, user), nil
	}
	return nil, fmt.Errorf("%w: driver %q: want %q or %q", ErrCephSecretUnusable, driver, CephRBDDriver, CephFSDriver)
}

// userIDFix is the fix of a userID/userKey secret that names another user
// than the volume's: the driver would connect as that user, whom the
// volume's caps were not given to. The key must change with it.
func userIDFix(secret *v1.Secret, data map[string]string, user string) []Fix {
	if got := data[CephUserID]; got != user {
		return []Fix{{Namespace: secret.Namespace, Name: secret.Name, Field: CephUserID, Value: user,
			Reason: fmt.Sprintf("Ceph CSI would connect as %q, not as the volume's RADOS user %q (userKey must then be %s's key)", got, user, user)}}
	}
	return nil
}
