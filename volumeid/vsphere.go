package volumeid

import "strings"

const vspherePathKind = "vSphere volume path"

// VSpherePath is an in-tree vSphere volume path, "[<datastore>] <path>", for
// example "[vsanDatastore] kubevols/pvc-1.vmdk" or
// "[DatastoreCluster/ds 1] kubevols/pvc-1.vmdk". Datastore names may contain
// spaces and "/" (a datastore cluster and its member).
type VSpherePath struct {
	// Datastore is the text between the brackets, cluster prefix included.
	Datastore string
	// Path is the file path within the datastore.
	Path string
}

// ParseVSpherePath parses the canonical form "[<datastore>] <path>": a
// non-empty datastore without "]", one space, and a non-empty path that does
// not start or end with white space. String gives the input back.
func ParseVSpherePath(s string) (VSpherePath, error) {
	if !strings.HasPrefix(s, "[") {
		return VSpherePath{}, parseErr(vspherePathKind, s, `want "[<datastore>] <path>": must start with "["`)
	}
	ds, path, ok := strings.Cut(s[1:], "]")
	if !ok {
		return VSpherePath{}, parseErr(vspherePathKind, s, `missing "]" after the datastore name`)
	}
	if ds == "" {
		return VSpherePath{}, parseErr(vspherePathKind, s, "datastore name is empty")
	}
	if !strings.HasPrefix(path, " ") {
		return VSpherePath{}, parseErr(vspherePathKind, s, `want one space after "]"`)
	}
	path = path[1:]
	if path == "" {
		return VSpherePath{}, parseErr(vspherePathKind, s, "file path is empty")
	}
	if strings.TrimSpace(path) != path {
		return VSpherePath{}, parseErr(vspherePathKind, s, "file path must not start or end with white space")
	}
	return VSpherePath{Datastore: ds, Path: path}, nil
}

// String returns "[" + Datastore + "] " + Path.
func (p VSpherePath) String() string {
	return "[" + p.Datastore + "] " + p.Path
}

// AppendTo appends the text of [VSpherePath.String] to b.
func (p VSpherePath) AppendTo(b []byte) []byte {
	b = append(b, '[')
	b = append(b, p.Datastore...)
	b = append(b, "] "...)
	return append(b, p.Path...)
}

// MarshalText implements encoding.TextMarshaler; it fails when the path would
// not parse back.
func (p VSpherePath) MarshalText() ([]byte, error) {
	s := p.String()
	if _, err := ParseVSpherePath(s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [ParseVSpherePath].
func (p *VSpherePath) UnmarshalText(text []byte) error {
	v, err := ParseVSpherePath(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Cluster returns the datastore cluster of "[Cluster/ds] ..." paths, or "".
func (p VSpherePath) Cluster() string {
	if i := strings.LastIndexByte(p.Datastore, '/'); i >= 0 {
		return p.Datastore[:i]
	}
	return ""
}

// DatastoreName returns the datastore without its cluster prefix.
func (p VSpherePath) DatastoreName() string {
	return p.Datastore[strings.LastIndexByte(p.Datastore, '/')+1:]
}

// IsVMDK reports whether the path names a virtual disk file (".vmdk"), which
// is how the vSphere CSI driver recognises a migrated volume's handle.
func (p VSpherePath) IsVMDK() bool {
	return strings.HasSuffix(p.Path, ".vmdk")
}

// LooksLikeVSpherePath reports whether s is a volume path in the loose sense
// the in-tree plugin and the vSphere CSI driver accept: after trimming white
// space it starts with "[", has a "]", and names a ".vmdk" file.
func LooksLikeVSpherePath(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "[") && strings.Contains(s, "]") && strings.HasSuffix(s, ".vmdk")
}
