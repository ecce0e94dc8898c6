package plugins

import (
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// overridesBuf is the storage the pointers and slices of the overrides
// decodeOverrides returns use (the caller's, on its stack).
type overridesBuf struct {
	handle   string
	readOnly bool
	fsType   string
	attrs    [16]attrOverride
	refs     [5]refOverride
	modes    [4]v1.PersistentVolumeAccessMode
}

// overridesMembers are the members of the annotation's object, in the order
// appendOverrides writes them.
var overridesMembers = [...]string{"volumeHandle", "readOnly", "fsType", "volumeAttributes", "secretRefs", "accessModes"}

// decodeOverrides reads raw into buf when it has the form appendOverrides
// writes: no whitespace, members in order and spelled as written, strings
// without escapes and in valid UTF-8, at most as many attributes, references
// and access modes as buf holds. For such input it means what encoding/json
// reads. It reports false for anything else, which the caller then reads
// with encoding/json.
func decodeOverrides(raw string, buf *overridesBuf) (o overrides, ok bool) {
	p := jsonScanner{s: raw}
	if !p.byte('{') {
		return o, false
	}
	if p.byte('}') {
		return o, p.done()
	}
	next := 0
	for {
		var key string
		key, ok = p.str()
		if !ok || !p.byte(':') {
			return o, false
		}
		m := next
		for m < len(overridesMembers) && overridesMembers[m] != key {
			m++
		}
		if m == len(overridesMembers) {
			return o, false
		}
		next = m + 1
		switch m {
		case 0:
			if buf.handle, ok = p.str(); !ok {
				return o, false
			}
			o.volumeHandle = &buf.handle
		case 1:
			switch {
			case p.lit("true"):
				buf.readOnly = true
			case p.lit("false"):
				buf.readOnly = false
			default:
				return o, false
			}
			o.readOnly = &buf.readOnly
		case 2:
			if buf.fsType, ok = p.str(); !ok {
				return o, false
			}
			o.fsType = &buf.fsType
		case 3:
			if o.attrs, ok = p.attributes(buf.attrs[:0]); !ok {
				return o, false
			}
		case 4:
			if o.refs, ok = p.secretRefs(buf.refs[:0]); !ok {
				return o, false
			}
		case 5:
			o.accessModes = true
			if o.modes, ok = p.modes(buf.modes[:0]); !ok {
				return o, false
			}
		}
		if p.byte(',') {
			continue
		}
		return o, p.byte('}') && p.done()
	}
}

// jsonScanner reads the annotation's JSON form.
type jsonScanner struct {
	s string
	i int
}

func (p *jsonScanner) done() bool { return p.i == len(p.s) }

func (p *jsonScanner) byte(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonScanner) lit(w string) bool {
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, in valid
// UTF-8: such a string means its bytes.
func (p *jsonScanner) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, utf8.ValidString(v)
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// object reads a JSON object, calling member after each key and its colon.
func (p *jsonScanner) object(member func(key string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') || !member(key) {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte('}')
	}
}

// attributes reads the volumeAttributes object into dst, which it does not
// grow.
func (p *jsonScanner) attributes(dst []attrOverride) ([]attrOverride, bool) {
	ok := p.object(func(key string) bool {
		if len(dst) == cap(dst) {
			return false
		}
		if p.lit("null") {
			dst = append(dst, attrOverride{key: key, remove: true})
			return true
		}
		v, ok := p.str()
		dst = append(dst, attrOverride{key: key, value: v})
		return ok
	})
	return dst, ok
}

// secretRefs reads the secretRefs object into dst, which it does not grow.
func (p *jsonScanner) secretRefs(dst []refOverride) ([]refOverride, bool) {
	ok := p.object(func(slot string) bool {
		if len(dst) == cap(dst) {
			return false
		}
		if p.lit("null") {
			dst = append(dst, refOverride{slot: slot, remove: true})
			return true
		}
		var ref v1.SecretReference
		field := 0 // name, then namespace, each optional
		ok := p.object(func(key string) bool {
			var ok bool
			switch {
			case key == "name" && field == 0:
				ref.Name, ok = p.str()
				field = 1
			case key == "namespace" && field <= 1:
				ref.Namespace, ok = p.str()
				field = 2
			}
			return ok
		})
		dst = append(dst, refOverride{slot: slot, ref: ref})
		return ok
	})
	return dst, ok
}

// modes reads the accessModes array into dst, which it does not grow.
func (p *jsonScanner) modes(dst []v1.PersistentVolumeAccessMode) ([]v1.PersistentVolumeAccessMode, bool) {
	if !p.byte('[') {
		return dst, false
	}
	if p.byte(']') {
		return dst, true
	}
	for {
		if len(dst) == cap(dst) {
			return dst, false
		}
		m, ok := p.str()
		if !ok {
			return dst, false
		}
		dst = append(dst, v1.PersistentVolumeAccessMode(m))
		if p.byte(',') {
			continue
		}
		return dst, p.byte(']')
	}
}
