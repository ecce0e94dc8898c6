package secrets

import (
	"fmt"
	"maps"
	"slices"
)

// Redacted is what secret values print as.
const Redacted = "[redacted]"

// Value is one secret value. It prints as [Redacted] with every fmt verb,
// GoString and JSON; use Reveal to get the value.
type Value struct{ v string }

// NewValue wraps s.
func NewValue(s string) Value { return Value{v: s} }

// Reveal returns the secret.
func (v Value) Reveal() string { return v.v }

// IsEmpty reports whether the value is empty.
func (v Value) IsEmpty() bool { return v.v == "" }

// String returns Redacted.
func (v Value) String() string { return Redacted }

// GoString returns Redacted.
func (v Value) GoString() string { return Redacted }

// Format prints Redacted for every verb.
func (v Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON writes "[redacted]".
func (v Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes [redacted].
func (v Value) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// Data is a secret's data: keys are visible, values never print.
type Data map[string]Value

// DataFromStrings wraps a CSI request's secret map.
func DataFromStrings(m map[string]string) Data {
	d := make(Data, len(m))
	for k, v := range m {
		d[k] = NewValue(v)
	}
	return d
}

// DataFromBytes wraps a v1.Secret's data.
func DataFromBytes(m map[string][]byte) Data {
	d := make(Data, len(m))
	for k, v := range m {
		d[k] = NewValue(string(v))
	}
	return d
}

// Keys returns the sorted keys.
func (d Data) Keys() []string { return slices.Sorted(maps.Keys(d)) }

// String lists the keys with redacted values.
func (d Data) String() string {
	s := "{"
	for i, k := range d.Keys() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q: %s", k, Redacted)
	}
	return s + "}"
}

// GoString is String.
func (d Data) GoString() string { return d.String() }

// Format prints String for every verb.
func (d Data) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(d.String())) }

// MarshalJSON writes the keys with redacted values.
func (d Data) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range d.Keys() {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q:%q", k, Redacted)
	}
	return append(b, '}'), nil
}
