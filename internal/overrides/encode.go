package overrides

import (
	"strconv"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// jsonSafe reports the bytes encoding/json writes as they are: ASCII but
// not control characters, '"', '\\' or the HTML characters '<', '>', '&'.
var jsonSafe = func() (safe [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		safe[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return safe
}()

// appendJSONString appends s as encoding/json.Marshal of Go 1.26 writes a
// string: invalid UTF-8 as the escape \ufffd (Go 1.27's writes the
// replacement character itself, which decodes the same), so that the
// annotation's bytes do not depend on the Go release that built it.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	i := 0
	for i < len(s) && jsonSafe[s[i]] {
		i++
	}
	start := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendOverrides appends o as encoding/json.Marshal writes the csiOverrides
// it stands for (members in struct order, omitempty honoured, map keys
// sorted: o's attributes and references come sorted), without reflection.
func appendOverrides(dst []byte, o *overrides) []byte {
	dst = append(dst, '{')
	first := true
	member := func(name string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	if o.hasVolumeHandle {
		member("volumeHandle")
		dst = appendJSONString(dst, o.volumeHandle)
	}
	if o.hasReadOnly {
		member("readOnly")
		dst = strconv.AppendBool(dst, o.readOnly)
	}
	if o.hasFSType {
		member("fsType")
		dst = appendJSONString(dst, o.fsType)
	}
	// The two maps below are written out alike, not through one helper
	// taking funcs: with one, dst escaped to the heap (measured: 2 more
	// allocations and 1 KB more per reverse translation).
	if len(o.attrs) > 0 {
		member("volumeAttributes")
		dst = append(dst, '{')
		for i, a := range o.attrs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, a.key)
			dst = append(dst, ':')
			if a.remove {
				dst = append(dst, "null"...)
			} else {
				dst = appendJSONString(dst, a.value)
			}
		}
		dst = append(dst, '}')
	}
	if len(o.refs) > 0 {
		member("secretRefs")
		dst = append(dst, '{')
		for i, r := range o.refs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, r.slot)
			dst = append(dst, ':')
			if r.remove {
				dst = append(dst, "null"...)
			} else {
				dst = appendSecretRef(dst, &r.ref)
			}
		}
		dst = append(dst, '}')
	}
	if o.accessModes {
		member("accessModes")
		dst = append(dst, '[')
		for i, m := range o.modes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, string(m))
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendSecretRef appends ref as encoding/json writes a SecretReference.
func appendSecretRef(dst []byte, ref *v1.SecretReference) []byte {
	dst = append(dst, '{')
	if ref.Name != "" {
		dst = append(dst, `"name":`...)
		dst = appendJSONString(dst, ref.Name)
	}
	if ref.Namespace != "" {
		if ref.Name != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"namespace":`...)
		dst = appendJSONString(dst, ref.Namespace)
	}
	return append(dst, '}')
}
