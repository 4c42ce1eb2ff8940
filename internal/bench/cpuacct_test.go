package bench

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	odd, err := os.ReadFile("testdata/proc/4242/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, line string
		want       Stat
		err        string // a part of the error; "" for none
	}{
		{"a command name with spaces and parentheses", string(odd), Stat{PID: 4242, Comm: "my (odd) proc ", UTime: 7, STime: 3, Start: 5000}, ""},
		{"postgres", "302 (postgres) R 301 302 302 0 -1 4194368 7632 0 0 0 124 277 0 0 20 0 1 0 3919984 271110144",
			Stat{PID: 302, Comm: "postgres", UTime: 124, STime: 277, Start: 3919984}, ""},
		{"cut short", "303 (postgres) S 301 303", Stat{}, "3 fields after the command name"},
		{"no command name", "303 postgres S 301 303", Stat{}, "no command name"},
		{"pid not a number", "x (postgres) R 301 302 302 0 -1 4194368 7632 0 0 0 124 277 0 0 20 0 1 0 3919984 2", Stat{}, "pid"},
		{"utime not a number", "302 (postgres) R 301 302 302 0 -1 4194368 7632 0 0 0 x 277 0 0 20 0 1 0 3919984 2", Stat{}, "field 14"},
	} {
		got, err := ParseStat(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: ParseStat = %+v, %v; want an error saying %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseStat = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestServerTicks(t *testing.T) {
	// Two postgres processes read; a cut-short one, another command, and
	// entries that are not processes skipped.
	got, err := serverTicks(os.DirFS("testdata/proc"), "postgres")
	want := map[procID]int64{{301, 3919974}: 215 + 888, {302, 3919984}: 124 + 277}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("serverTicks = %v, %v; want %v", got, err, want)
	}
	if _, err := serverTicks(os.DirFS("testdata/no-such-proc"), "postgres"); err == nil || !strings.Contains(err.Error(), "/proc not readable") {
		t.Errorf("serverTicks of a missing /proc: %v, want /proc not readable", err)
	}
}

func TestTickDelta(t *testing.T) {
	a, b := procID{10, 100}, procID{11, 200}
	for _, tc := range []struct {
		name          string
		before, after map[procID]int64
		want          int64
	}{
		{"both running", map[procID]int64{a: 50, b: 10}, map[procID]int64{a: 80, b: 15}, 35},
		{"started during the phase: all its ticks", map[procID]int64{a: 50}, map[procID]int64{a: 60, b: 7}, 17},
		{"ended during the phase: left out", map[procID]int64{a: 50, b: 10}, map[procID]int64{a: 60}, 10},
		{"pid reused: a new process", map[procID]int64{a: 50}, map[procID]int64{{10, 900}: 4}, 4},
	} {
		if got := tickDelta(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: tickDelta = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNewCPUMeter(t *testing.T) {
	proc := os.DirFS("testdata/proc")
	for _, tc := range []struct {
		dsn      string
		db, read bool
		why      string
	}{
		{"", false, false, ""},
		{"postgres://u:p@127.0.0.1:5432/b?sslmode=disable", true, true, ""},
		{"postgres://u@localhost/b", true, true, ""},
		{"postgres://u@[::1]:5432/b", true, true, ""},
		{"postgres://u@db.example.com:5432/b", true, false, "server not local (db.example.com)"},
		{"host=127.0.0.1 dbname=b", true, false, "server host unknown"},
	} {
		m := newCPUMeter(tc.dsn, proc)
		if m.db != tc.db || (m.proc != nil) != tc.read || m.why != tc.why {
			t.Errorf("newCPUMeter(%q) = db %v, reads /proc %v, why %q; want %v, %v, %q", tc.dsn, m.db, m.proc != nil, m.why, tc.db, tc.read, tc.why)
		}
	}
}

func TestCPUUseCores(t *testing.T) {
	w := 3 * time.Second
	for _, tc := range []struct {
		name      string
		u         CPUUse
		want      string
		saturated bool
	}{
		{"not measured", CPUUse{}, "–", false},
		{"postgres", CPUUse{Wall: w, Self: 1.31, DB: true, DBCores: 0.58, Of: 2}, "bench process 1.31, PostgreSQL 0.58, of 2: saturated", true},
		{"postgres, room left", CPUUse{Wall: w, Self: 1.01, DB: true, DBCores: 0.58, Of: 2}, "bench process 1.01, PostgreSQL 0.58, of 2", false},
		{"sqlite: no server", CPUUse{Wall: w, Self: 1.2, Of: 2}, "bench process 1.20, of 2", false},
		{"server not measured: no claim on the bench process alone", CPUUse{Wall: w, Self: 1.6, DB: true, DBCores: 1, DBUnmeasured: "server not local (db)", Of: 2},
			"bench process 1.60, PostgreSQL not measured (server not local (db)), of 2", false},
		{"server not measured, the bench process alone saturating", CPUUse{Wall: w, Self: 1.85, DB: true, DBUnmeasured: "x", Of: 2},
			"bench process 1.85, PostgreSQL not measured (x), of 2: saturated", true},
	} {
		if got := tc.u.cores(); got != tc.want || tc.u.Saturated() != tc.saturated {
			t.Errorf("%s: cores = %q, saturated %v; want %q, %v", tc.name, got, tc.u.Saturated(), tc.want, tc.saturated)
		}
	}
}
