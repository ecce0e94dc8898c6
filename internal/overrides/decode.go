package overrides

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// decode reads the annotation raw: its scalars into sc, its attributes and
// references appended to attrs and refs (room a caller gives on its stack,
// so that reading the form the writer produces allocates nothing but the
// access modes). encoding/json is the reference reader: any JSON it accepts
// means what it reads. The form appendOverrides writes (members in order,
// no white space, keys sorted, strings without escapes) is read directly,
// without reflection, where it means the same to encoding/json (FuzzDecode
// holds the two to that); anything else goes through encoding/json.
func decode(raw string, sc *scalars, attrs []attrOverride, refs []refOverride) ([]attrOverride, []refOverride, error) {
	if a, r, ok := decodeWritten(raw, sc, attrs, refs); ok {
		return a, r, nil
	}
	*sc = scalars{}
	var j csiOverrides
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return nil, nil, err
	}
	a, r := j.flatten(sc, attrs[:0], refs[:0])
	return a, r, nil
}

// flatten is j as the overrides it stands for: its scalars into sc, its
// attributes sorted by key and references by slot appended to attrs and
// refs.
func (j *csiOverrides) flatten(sc *scalars, attrs []attrOverride, refs []refOverride) ([]attrOverride, []refOverride) {
	if j.VolumeHandle != nil {
		sc.volumeHandle, sc.hasVolumeHandle = *j.VolumeHandle, true
	}
	if j.ReadOnly != nil {
		sc.readOnly, sc.hasReadOnly = *j.ReadOnly, true
	}
	if j.FSType != nil {
		sc.fsType, sc.hasFSType = *j.FSType, true
	}
	for k, v := range j.VolumeAttributes {
		if v == nil {
			attrs = append(attrs, attrOverride{key: k, remove: true})
		} else {
			attrs = append(attrs, attrOverride{key: k, value: *v})
		}
	}
	sortAttrs(attrs)
	for slot, ref := range j.SecretRefs {
		refs = append(refs, refOverrideOf(slot, ref))
	}
	slices.SortFunc(refs, func(x, y refOverride) int { return strings.Compare(x.slot, y.slot) })
	if j.AccessModes != nil {
		sc.accessModes, sc.modes = true, *j.AccessModes
	}
	return attrs, refs
}

// scanner reads the written form of the annotation: literal text and
// strings without escapes.
type scanner struct {
	s string
	i int
}

// lit consumes l if the input continues with it.
func (p *scanner) lit(l string) bool {
	if strings.HasPrefix(p.s[p.i:], l) {
		p.i += len(l)
		return true
	}
	return false
}

// member consumes `,"name":` (without the comma for the first member).
func (p *scanner) member(name string, first bool) bool {
	save := p.i
	if (first || p.lit(",")) && p.lit(`"`) && p.lit(name) && p.lit(`":`) {
		return true
	}
	p.i = save
	return false
}

// str consumes a string that encoding/json reads as its bytes: no escape,
// no control character, valid UTF-8. One pass, eight bytes at a time, goes
// from one special byte (a quote, a backslash, a control character, a byte
// of a multi-byte sequence) to the next until the closing quote.
func (p *scanner) str() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	s := p.s[p.i+1:]
	ascii := true
	i := 0
	for {
		for i+8 <= len(s) {
			if m := specialMask(binary.LittleEndian.Uint64([]byte(s[i : i+8]))); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto found
			}
			i += 8
		}
		// The tail shorter than a word, byte by byte.
		for ; i < len(s); i++ {
			if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				goto found
			}
		}
		return "", false // no closing quote
	found:
		switch c := s[i]; {
		case c == '"':
			v := s[:i]
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			p.i += i + 2
			return v, true
		case c >= utf8.RuneSelf:
			ascii = false
			i++
		default: // a backslash or a control character
			return "", false
		}
	}
}

// specialMask has the high bit of the first byte of the word x (in memory
// order) that ends or stops a plain string set, and no lower one: a quote, a
// backslash, a control character or a byte of a multi-byte UTF-8 sequence.
// (Each term may mark bytes above its first true one, never below.)
func specialMask(x uint64) uint64 {
	return x&hi8 | less(x, 0x20) | less(x^(lo8*'"'), 1) | less(x^(lo8*'\\'), 1)
}

// less has the high bit of the first byte of x less than n set (n at most
// 128), and possibly of bytes above it.
func less(x uint64, n byte) uint64 { return (x - lo8*uint64(n)) &^ x & hi8 }

// Word-at-a-time byte tests (Hacker's Delight, "find a byte less than n").
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// decodeWritten reads raw, if it has the form appendOverrides writes, as
// decode does, and reports whether it did.
func decodeWritten(raw string, sc *scalars, attrs []attrOverride, refs []refOverride) ([]attrOverride, []refOverride, bool) {
	p := &scanner{s: raw}
	if !p.lit("{") {
		return nil, nil, false
	}
	first, ok := true, true
	if p.member("volumeHandle", first) {
		first = false
		sc.volumeHandle, ok = p.str()
		sc.hasVolumeHandle = true
	}
	if ok && p.member("readOnly", first) {
		first = false
		sc.hasReadOnly = true
		switch {
		case p.lit("true"):
			sc.readOnly = true
		case p.lit("false"):
		default:
			ok = false
		}
	}
	if ok && p.member("fsType", first) {
		first = false
		sc.fsType, ok = p.str()
		sc.hasFSType = true
	}
	if ok && p.member("volumeAttributes", first) {
		first = false
		attrs, ok = p.attrs(attrs)
	}
	if ok && p.member("secretRefs", first) {
		first = false
		refs, ok = p.refs(refs)
	}
	if ok && p.member("accessModes", first) {
		sc.modes, ok = p.modes()
		sc.accessModes = true
	}
	return attrs, refs, ok && p.lit("}") && p.i == len(p.s)
}

// key reads the next key of an object whose keys must be strictly
// increasing (so each once, as encoding/json's map would hold it) and the
// colon after it; n counts the keys read, prev is the last.
func (p *scanner) key(n int, prev string) (string, bool) {
	if n > 0 && !p.lit(",") {
		return "", false
	}
	key, ok := p.str()
	if !ok || (n > 0 && key <= prev) || !p.lit(":") {
		return "", false
	}
	return key, true
}

// attrs reads the volume attributes: an object of strings and nulls.
func (p *scanner) attrs(dst []attrOverride) ([]attrOverride, bool) {
	if !p.lit("{") {
		return dst, false
	}
	prev := ""
	for n := 0; !p.lit("}"); n++ {
		key, ok := p.key(n, prev)
		if !ok {
			return dst, false
		}
		prev = key
		if p.lit("null") {
			dst = append(dst, attrOverride{key: key, remove: true})
			continue
		}
		v, ok := p.str()
		if !ok {
			return dst, false
		}
		dst = append(dst, attrOverride{key: key, value: v})
	}
	return dst, true
}

// refs reads the secret references: an object of references and nulls.
func (p *scanner) refs(dst []refOverride) ([]refOverride, bool) {
	if !p.lit("{") {
		return dst, false
	}
	prev := ""
	for n := 0; !p.lit("}"); n++ {
		slot, ok := p.key(n, prev)
		if !ok {
			return dst, false
		}
		prev = slot
		if p.lit("null") {
			dst = append(dst, refOverride{slot: slot, remove: true})
			continue
		}
		var ref v1.SecretReference
		ok = p.lit("{")
		if ok && p.member("name", true) {
			ref.Name, ok = p.str()
		}
		if ok && p.member("namespace", p.s[p.i-1] == '{') {
			ref.Namespace, ok = p.str()
		}
		if !ok || !p.lit("}") {
			return dst, false
		}
		dst = append(dst, refOverride{slot: slot, ref: ref})
	}
	return dst, true
}

// modes reads the access modes, a new slice ([] for none).
func (p *scanner) modes() ([]v1.PersistentVolumeAccessMode, bool) {
	if !p.lit("[") {
		return nil, false
	}
	modes := []v1.PersistentVolumeAccessMode{}
	for n := 0; !p.lit("]"); n++ {
		if n > 0 && !p.lit(",") {
			return nil, false
		}
		m, ok := p.str()
		if !ok {
			return nil, false
		}
		modes = append(modes, v1.PersistentVolumeAccessMode(m))
	}
	return modes, true
}
