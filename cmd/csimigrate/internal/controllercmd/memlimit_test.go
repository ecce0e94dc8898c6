package controllercmd

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The cgroup's memory limit, as Linux gives it (v2's memory.max, v1's
// limit_in_bytes), sets the Go heap's soft limit to 90% of it; no limit
// ("max", v1's huge number, no file) sets none, and neither does an
// admin's GOMEMLIMIT.
func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		content string
		want    int64
	}{
		{"v2", "536870912\n", 483183820},
		{"v2-max", "max\n", 0},
		{"v1-none", "9223372036854771712\n", 0},
		{"garbage", "lots\n", 0},
	} {
		t.Setenv("GOMEMLIMIT", "")
		if got := setMemoryLimit([]string{write(tc.name, tc.content)}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
		if tc.want > 0 && debug.SetMemoryLimit(-1) != tc.want {
			t.Errorf("%s: the runtime's limit is not %d", tc.name, tc.want)
		}
	}
	if got := setMemoryLimit([]string{filepath.Join(dir, "absent")}); got != 0 {
		t.Errorf("no file: %d", got)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := setMemoryLimit([]string{write("set", "536870912")}); got != 0 {
		t.Errorf("with GOMEMLIMIT set: %d, want none", got)
	}
}

// The controller's collector target is gcPercent unless GOGC is set.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if got := setGCPercent(); got != gcPercent {
		t.Errorf("without GOGC: %d, want %d", got, gcPercent)
	}
	if now := debug.SetGCPercent(100); now != gcPercent {
		t.Errorf("the runtime's GOGC is %d, want %d", now, gcPercent)
	}
	t.Setenv("GOGC", "200")
	if got := setGCPercent(); got != 0 {
		t.Errorf("with GOGC set: %d, want none", got)
	}
	if now := debug.SetGCPercent(100); now != 100 {
		t.Errorf("with GOGC set the runtime's GOGC changed to %d", now)
	}
}
