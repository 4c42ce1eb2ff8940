package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUUse is how much of the machine a phase used: CPU time over the phase's
// wall time, in cores, for this process (the load client and the gateway,
// with SQLite inside it) and for the PostgreSQL server's processes, which
// share the same cores.
type CPUUse struct {
	Wall time.Duration `json:"wall"`
	Self float64       `json:"self_cores"`
	// DB is set when the phase's store is a PostgreSQL server; DBCores is
	// then its processes' cores, unless DBUnmeasured says why not.
	DB           bool    `json:"db,omitempty"`
	DBCores      float64 `json:"db_cores,omitempty"`
	DBUnmeasured string  `json:"db_unmeasured,omitempty"`
	Of           int     `json:"of"` // nproc
}

// Measured: the figures were taken (results written before they were have
// a zero CPUUse).
func (u CPUUse) Measured() bool { return u.Wall > 0 && u.Of > 0 }

// Saturated reports whether the cores measured sum to at least
// SaturatedFrac of nproc. An unmeasured server counts as zero, so the claim
// is made only when what was measured alone reaches it.
func (u CPUUse) Saturated() bool {
	return u.Measured() && u.Self+u.dbCores() >= SaturatedFrac*float64(u.Of)
}

func (u CPUUse) dbCores() float64 {
	if u.DB && u.DBUnmeasured == "" {
		return u.DBCores
	}
	return 0
}

// SaturatedFrac is the share of the machine's cores above which a phase
// counts as CPU-bound.
const SaturatedFrac = 0.9

// clockTicks is the unit of /proc/<pid>/stat's times (sysconf(CLK_TCK),
// 100 on every Linux port Go runs on; Go cannot ask sysconf without cgo).
const clockTicks = 100

// CPUMeter reads the CPU time used so far by this process and, when the
// store is a PostgreSQL server on this machine, by the server's processes.
type CPUMeter struct {
	proc fs.FS // /proc; nil when the server is not read
	db   bool
	why  string // why the server's processes are not read
}

// NewCPUMeter meters this process, and the PostgreSQL server of dsn when
// dsn is set and its host is this machine's loopback (a server elsewhere
// uses other cores, or ones this process cannot see).
func NewCPUMeter(dsn string) CPUMeter {
	return newCPUMeter(dsn, os.DirFS("/proc"))
}

func newCPUMeter(dsn string, proc fs.FS) CPUMeter {
	if dsn == "" {
		return CPUMeter{}
	}
	m := CPUMeter{db: true}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		m.why = "server host unknown"
		return m
	}
	switch h := u.Hostname(); h {
	case "127.0.0.1", "localhost", "::1":
		m.proc = proc
	default:
		m.why = "server not local (" + h + ")"
	}
	return m
}

// CPUReading is a meter's reading at one moment.
type CPUReading struct {
	at   time.Time
	self time.Duration
	db   map[procID]int64 // clock ticks
	err  error
}

// procID tells a process from a later one given the same pid.
type procID struct {
	pid   int
	start int64
}

// Read takes a reading now.
func (m CPUMeter) Read() CPUReading {
	r := CPUReading{at: time.Now(), self: selfCPU()}
	if m.proc != nil {
		r.db, r.err = serverTicks(m.proc, "postgres")
	}
	return r
}

// Since is the use from reading r until now.
func (m CPUMeter) Since(r CPUReading) CPUUse {
	now := m.Read()
	wall := now.at.Sub(r.at)
	u := CPUUse{Wall: wall, DB: m.db, DBUnmeasured: m.why, Of: runtime.NumCPU()}
	if wall <= 0 {
		return u
	}
	u.Self = (now.self - r.self).Seconds() / wall.Seconds()
	if !m.db || m.why != "" {
		return u
	}
	switch err := errors.Join(r.err, now.err); {
	case err != nil:
		u.DBUnmeasured = err.Error()
	case len(now.db) == 0:
		u.DBUnmeasured = "no postgres process in /proc"
	default:
		u.DBCores = float64(tickDelta(r.db, now.db)) / clockTicks / wall.Seconds()
	}
	return u
}

// tickDelta sums, over the processes alive at the end, the ticks used
// since the start (all of them for a process started since). A process
// that ended in between is left out with its last ticks: the figure can
// fall short, never overstate.
func tickDelta(before, after map[procID]int64) int64 {
	var d int64
	for id, t := range after {
		d += t - before[id]
	}
	return d
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverTicks is the utime+stime of every process in proc named comm.
func serverTicks(proc fs.FS, comm string) (map[procID]int64, error) {
	ents, err := fs.ReadDir(proc, ".")
	if err != nil {
		return nil, fmt.Errorf("/proc not readable: %w", err)
	}
	out := map[procID]int64{}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := fs.ReadFile(proc, e.Name()+"/stat")
		if err != nil {
			continue // ended since the listing, or not ours to read
		}
		st, err := ParseStat(string(b))
		if err != nil || st.Comm != comm {
			continue
		}
		out[procID{st.PID, st.Start}] = st.UTime + st.STime
	}
	return out, nil
}

// Stat is what the CPU meter reads of a /proc/<pid>/stat line.
type Stat struct {
	PID          int
	Comm         string // as /proc/<pid>/comm has it
	UTime, STime int64  // clock ticks
	Start        int64  // clock ticks after boot
}

// ParseStat reads a /proc/<pid>/stat line. The command name is the text
// between the first "(" and the last ")": it may itself hold spaces and
// parentheses, so splitting the whole line on spaces is wrong.
func ParseStat(line string) (Stat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("stat line: no command name")
	}
	var st Stat
	var err error
	if st.PID, err = strconv.Atoi(strings.TrimSpace(line[:open])); err != nil {
		return Stat{}, fmt.Errorf("stat line: pid: %w", err)
	}
	st.Comm = line[open+1 : end]
	// Fields from the state (field 3) on; utime, stime and starttime are
	// fields 14, 15 and 22.
	f := strings.Fields(line[end+1:])
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("stat line: %d fields after the command name, want 20 or more", len(f))
	}
	for _, v := range []struct {
		to    *int64
		field int
	}{{&st.UTime, 14}, {&st.STime, 15}, {&st.Start, 22}} {
		if *v.to, err = strconv.ParseInt(f[v.field-3], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("stat line: field %d: %w", v.field, err)
		}
	}
	return st, nil
}

// cores writes a phase's use as a table cell: "bench process 1.31,
// PostgreSQL 0.58, of 2".
func (u CPUUse) cores() string {
	if !u.Measured() {
		return "–"
	}
	s := fmt.Sprintf("bench process %.2f", u.Self)
	switch {
	case u.DB && u.DBUnmeasured != "":
		s += ", PostgreSQL not measured (" + u.DBUnmeasured + ")"
	case u.DB:
		s += fmt.Sprintf(", PostgreSQL %.2f", u.DBCores)
	}
	s += fmt.Sprintf(", of %d", u.Of)
	if u.Saturated() {
		s += ": saturated"
	}
	return s
}
