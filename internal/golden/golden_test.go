package golden

import (
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestEqual(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.txt")
	*update = true
	Equal(t, path, []byte("one\n"))
	*update = false
	for _, tc := range []struct {
		got  string
		fail bool
	}{{"one\n", false}, {"two\n", true}} {
		r := &recorder{TB: t}
		Equal(r, path, []byte(tc.got))
		if r.failed != tc.fail {
			t.Errorf("Equal(%q) failed=%v, want %v", tc.got, r.failed, tc.fail)
		}
	}
	r := &recorder{TB: t}
	Equal(r, filepath.Join(dir, "missing"), nil)
	if !r.failed {
		t.Error("a missing golden file passed")
	}
}
