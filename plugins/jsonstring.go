package plugins

import (
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// appendJSONList appends list as a JSON array of strings, byte for byte what
// encoding/json.Marshal writes for a []string (HTML characters, U+2028 and
// U+2029 escaped, invalid UTF-8 replaced by U+FFFD), without reflection.
func appendJSONList(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendJSONString appends s as encoding/json.Marshal writes a string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
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

// appendOverrides appends o as encoding/json.Marshal writes it (members in
// struct order, omitempty honoured, map keys sorted), without reflection.
func appendOverrides(dst []byte, o *csiOverrides) []byte {
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
	if o.VolumeHandle != nil {
		member("volumeHandle")
		dst = appendJSONString(dst, *o.VolumeHandle)
	}
	if o.ReadOnly != nil {
		member("readOnly")
		dst = strconv.AppendBool(dst, *o.ReadOnly)
	}
	if o.FSType != nil {
		member("fsType")
		dst = appendJSONString(dst, *o.FSType)
	}
	if len(o.VolumeAttributes) > 0 {
		member("volumeAttributes")
		dst = appendObject(dst, o.VolumeAttributes, func(dst []byte, v *string) []byte {
			if v == nil {
				return append(dst, "null"...)
			}
			return appendJSONString(dst, *v)
		})
	}
	if len(o.SecretRefs) > 0 {
		member("secretRefs")
		dst = appendObject(dst, o.SecretRefs, func(dst []byte, ref *v1.SecretReference) []byte {
			if ref == nil {
				return append(dst, "null"...)
			}
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
		})
	}
	if o.AccessModes != nil {
		member("accessModes")
		if *o.AccessModes == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, m := range *o.AccessModes {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, string(m))
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, '}')
}

// appendObject appends m as a JSON object with its keys sorted, as
// encoding/json does, writing each value with value.
func appendObject[V any](dst []byte, m map[string]V, value func([]byte, V) []byte) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = value(dst, m[k])
	}
	return append(dst, '}')
}
