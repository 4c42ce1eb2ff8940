package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Profiled is a phase run again under the CPU and block profilers, because
// a target on it was missed: the files, and their top packages.
type Profiled struct {
	Store     string  `json:"store"`
	Phase     string  `json:"phase"`
	Rate      float64 `json:"rate"` // the phase's calls/s under the profilers
	CPUFile   string  `json:"cpu_file,omitempty"`
	BlockFile string  `json:"block_file,omitempty"`
	// CPU is on-CPU time by the package of the function running (flat);
	// CPUCum by every package on the stack (cumulative, each sample counted
	// once per package). Block is time goroutines waited, by the first
	// package up the stack that is not a waiting primitive's (waitPackage):
	// the code that waited, not the channel it waited on.
	CPU    []Share `json:"cpu,omitempty"`
	CPUCum []Share `json:"cpu_cum,omitempty"`
	Block  []Share `json:"block,omitempty"`
	// DBWaits are the gateway's PostgreSQL sessions by state and wait
	// event, sampled during the phase (SampleWaits).
	DBWaits []Share `json:"db_waits,omitempty"`
	// Cores is the CPU the bench process and the PostgreSQL server used
	// during the phase, in cores of the machine's.
	Cores      CPUUse  `json:"cores"`
	CPUTotal   float64 `json:"cpu_total_s"`   // seconds of CPU sampled
	BlockTotal float64 `json:"block_total_s"` // seconds waited, summed over goroutines
	Err        string  `json:"err,omitempty"`
}

// Share is one package's part of a profile (or one wait state's part of
// the database sessions sampled).
type Share struct {
	Package string  `json:"package"`
	Value   float64 `json:"value"` // seconds, or samples
	Frac    float64 `json:"frac"`  // of the profile's total
}

// BlockRate is the block profiler's rate while a phase is profiled: every
// wait of 10 µs or more is recorded, shorter ones sampled.
const BlockRate = 10_000

// ProfilePhase runs phase with the CPU profiler on and the block profiler
// recording, writes both profiles to dir as <name>.cpu.pb.gz and
// <name>.block.pb.gz (the block one holds this phase's waits only), and
// sums them by package. The gateway must run in this process for its
// functions to show.
func ProfilePhase(dir, name string, phase func()) (Profiled, error) {
	pr := Profiled{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pr, err
	}
	var cpu bytes.Buffer
	if err := pprof.StartCPUProfile(&cpu); err != nil {
		return pr, fmt.Errorf("cpu profile: %w", err)
	}
	runtime.SetBlockProfileRate(BlockRate)
	before, berr := blockSnapshot()
	phase()
	after, aerr := blockSnapshot()
	runtime.SetBlockProfileRate(0)
	pprof.StopCPUProfile()

	pr.CPUFile = filepath.Join(dir, name+".cpu.pb.gz")
	if err := os.WriteFile(pr.CPUFile, cpu.Bytes(), 0o644); err != nil {
		return pr, err
	}
	cp, err := profile.Parse(bytes.NewReader(cpu.Bytes()))
	if err != nil {
		return pr, fmt.Errorf("parse cpu profile: %w", err)
	}
	pr.CPU, pr.CPUCum, pr.CPUTotal = cpuShares(cp)

	if berr != nil || aerr != nil {
		return pr, fmt.Errorf("block profile: %v %v", berr, aerr)
	}
	delta, err := Delta(before, after)
	if err != nil {
		return pr, fmt.Errorf("block profile: %w", err)
	}
	pr.BlockFile = filepath.Join(dir, name+".block.pb.gz")
	f, err := os.Create(pr.BlockFile)
	if err != nil {
		return pr, err
	}
	if err := delta.Write(f); err != nil {
		f.Close()
		return pr, err
	}
	if err := f.Close(); err != nil {
		return pr, err
	}
	pr.Block, pr.BlockTotal = blockShares(delta)
	return pr, nil
}

func blockSnapshot() (*profile.Profile, error) {
	var b bytes.Buffer
	if err := pprof.Lookup("block").WriteTo(&b, 0); err != nil {
		return nil, err
	}
	return profile.Parse(&b)
}

// Delta is after less before: the samples of what happened in between (the
// block profile is cumulative since the process started).
func Delta(before, after *profile.Profile) (*profile.Profile, error) {
	b := before.Copy()
	b.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{after, b})
	if err != nil {
		return nil, err
	}
	// Merge keeps stacks whose counts cancelled out; drop them.
	kept := d.Sample[:0]
	for _, s := range d.Sample {
		for _, v := range s.Value {
			if v != 0 {
				kept = append(kept, s)
				break
			}
		}
	}
	d.Sample = kept
	return d, nil
}

// TopShares is how many packages a profile summary lists.
const TopShares = 8

// cpuShares sums a CPU profile's time (its nanoseconds value) by package,
// flat and cumulative.
func cpuShares(p *profile.Profile) (flat, cum []Share, total float64) {
	vi := valueIndex(p, "cpu", "nanoseconds")
	fm, cm := map[string]float64{}, map[string]float64{}
	for _, s := range p.Sample {
		v := float64(s.Value[vi]) / 1e9
		total += v
		seen := map[string]bool{}
		for i, fn := range frames(s) {
			pkg := Package(fn)
			if i == 0 {
				fm[pkg] += v
			}
			if !seen[pkg] {
				seen[pkg] = true
				cm[pkg] += v
			}
		}
	}
	return top(fm, total), top(cm, total), total
}

// blockShares sums a block profile's delay by the first package up each
// stack that is not a waiting primitive's (waitPackage). Two kinds of wait
// are left out, as they only contain the others: the load client's (this
// package or its HTTP transport on the stack: a request waiting for its
// answer, a connection for its next request) and the MCP
// transport's wait for the tool handler's answer.
func blockShares(p *profile.Profile) ([]Share, float64) {
	vi := valueIndex(p, "delay", "nanoseconds")
	m := map[string]float64{}
	var total float64
	for _, s := range p.Sample {
		fns := frames(s)
		pkg := "runtime"
		for _, fn := range fns {
			if q := Package(fn); !waitPackage(q) {
				pkg = q
				break
			}
		}
		if nested(pkg) || slices.ContainsFunc(fns, loadClient) {
			continue
		}
		v := float64(s.Value[vi]) / 1e9
		total += v
		m[pkg] += v
	}
	return top(m, total), total
}

// selfPackage is this package's path, as it appears in profiles.
const selfPackage = "github.com/mcpconform/mcpconform/internal/bench"

// loadClient: a function of the load client, this package's or its HTTP
// transport's (whose connection goroutines wait beside every request).
func loadClient(fn string) bool {
	return Package(fn) == selfPackage || strings.HasPrefix(fn, "net/http.(*persistConn)") ||
		strings.HasPrefix(fn, "net/http.(*Transport)")
}

// waitPackage: packages whose functions are where a goroutine waits, not
// what made it wait (a pool's semaphore is the pool's wait).
func waitPackage(pkg string) bool {
	switch pkg {
	case "runtime", "sync", "sync/atomic", "context", "time", "golang.org/x/sync/semaphore", "github.com/jackc/puddle/v2":
		return true
	}
	return strings.HasPrefix(pkg, "internal/")
}

// nested: the MCP transport waiting for the tool handler's answer.
func nested(pkg string) bool {
	return strings.HasPrefix(pkg, "github.com/modelcontextprotocol/go-sdk/")
}

func valueIndex(p *profile.Profile, typ, unit string) int {
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// frames are a sample's function names, leaf first (inlined frames
// included).
func frames(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil {
				out = append(out, ln.Function.Name)
			}
		}
	}
	return out
}

// Package is a function name's package path: "a/b/c.(*T).M" is "a/b/c",
// "runtime.park_m" is "runtime".
func Package(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

func top(m map[string]float64, total float64) []Share {
	out := make([]Share, 0, len(m))
	for k, v := range m {
		sh := Share{Package: k, Value: v}
		if total > 0 {
			sh.Frac = v / total
		}
		out = append(out, sh)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].Package < out[j].Package
	})
	if len(out) > TopShares {
		out = out[:TopShares]
	}
	return out
}

// shareList writes shares as "pkg 41%, pkg 12%".
func shareList(sh []Share) string {
	parts := make([]string, len(sh))
	for i, s := range sh {
		parts[i] = fmt.Sprintf("%s %.0f%%", s.Package, 100*s.Frac)
	}
	return strings.Join(parts, ", ")
}
