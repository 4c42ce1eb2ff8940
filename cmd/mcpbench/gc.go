package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/bench"
)

// gcSetting is one GC configuration of the gateway process: environment
// assignments (GOGC, GOMEMLIMIT) its process starts with.
type gcSetting struct {
	Env []string
}

func (s gcSetting) String() string { return strings.Join(s.Env, " ") }

// parseGCSettings reads "GOGC=100;GOGC=400;GOGC=off GOMEMLIMIT=256MiB".
func parseGCSettings(v string) ([]gcSetting, error) {
	var out []gcSetting
	for _, part := range strings.Split(v, ";") {
		env := strings.Fields(part)
		if len(env) == 0 {
			continue
		}
		for _, kv := range env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || (k != "GOGC" && k != "GOMEMLIMIT") {
				return nil, fmt.Errorf("%q: want GOGC=... or GOMEMLIMIT=... assignments, settings separated by ';'", kv)
			}
		}
		out = append(out, gcSetting{Env: env})
	}
	if len(out) == 0 {
		return nil, errors.New("no settings")
	}
	return out, nil
}

// gcRun is one setting's figures in one round: each gateway phase's rate
// over the same run's bare probe, and the gateway process's peak RSS.
type gcRun struct {
	First, Replay, Unkeyed float64
	PeakRSS                int64 // bytes; 0 unknown
}

// gcSweep measures the gateway process under each setting, rounds times,
// interleaved: each run is a fresh gateway process (`mcpconform gateway`
// on a fresh SQLite file, started with the setting's environment) measured
// by `mcpconform bench` against it, so the load client and the probe run in
// another process, with the Go defaults, whatever the setting.
func gcSweep(ctx context.Context, binary, tmp string, settings []gcSetting, rounds int, logf func(string, ...any)) ([][]gcRun, error) {
	runs := make([][]gcRun, len(settings))
	for r := range rounds {
		for i, s := range settings {
			logf("gc settings: round %d/%d, %s", r+1, rounds, s)
			run, err := gcMeasure(ctx, binary, filepath.Join(tmp, fmt.Sprintf("gc-%d-%d", r, i)), s)
			if err != nil {
				return runs, fmt.Errorf("gc settings %s, round %d: %w", s, r+1, err)
			}
			runs[i] = append(runs[i], run)
		}
	}
	return runs, nil
}

func gcMeasure(ctx context.Context, binary, dir string, s gcSetting) (gcRun, error) {
	gw, err := target.Reference(ctx, target.Options{Binary: binary, StateDir: dir, Env: s.Env})
	if err != nil {
		return gcRun{}, err
	}
	defer gw.Close()
	profile := filepath.Join(dir, "profile.json")
	p, _ := json.Marshal(map[string]any{
		"name": "reference gateway, " + s.String(), "urls": gw.URLs[:1],
		"protocol_version": "2026-07-28", "control_url": gw.ControlURLs[0], "control_token": gw.ControlToken,
	})
	if err := os.WriteFile(profile, p, 0o644); err != nil {
		return gcRun{}, err
	}
	out := filepath.Join(dir, "bench")
	b := exec.CommandContext(ctx, binary, "bench", "--target", gw.URLs[0], "--profile", profile,
		"--budget", "12s", "--calls", "3000", "--concurrency", "8", "--out", out)
	if msg, err := b.CombinedOutput(); err != nil {
		return gcRun{}, fmt.Errorf("mcpconform bench: %w\n%s", err, tail(string(msg), 2000))
	}
	raw, err := os.ReadFile(filepath.Join(out, "bench.json"))
	if err != nil {
		return gcRun{}, err
	}
	var res bench.TargetResults
	if err := json.Unmarshal(raw, &res); err != nil {
		return gcRun{}, fmt.Errorf("bench.json: %w", err)
	}
	var run gcRun
	for _, x := range res.Summary {
		switch x.Name {
		case bench.TargetKeyedFirst:
			run.First = x.Ratio
		case bench.TargetReplays:
			run.Replay = x.Ratio
		case bench.TargetUnkeyed:
			run.Unkeyed = x.Ratio
		}
	}
	run.PeakRSS = peakRSS(gw.Pid(0))
	return run, nil
}

// peakRSS is a live process's peak resident set (Linux's VmHWM); 0 where
// /proc does not say.
func peakRSS(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// renderGC writes the GC settings table: per setting, the median over the
// rounds of each phase's rate over the bare probe and of the gateway's
// peak RSS, each with the rounds' figures.
func renderGC(w io.Writer, settings []gcSetting, runs [][]gcRun, rounds int, date time.Time, machine string) {
	fmt.Fprintf(w, "# GC settings of the reference gateway process\n\n")
	fmt.Fprintf(w, "Written by `go run ./cmd/mcpbench -gc ...` (`make bench-gc`) from one run on one machine (%s, %s); not edited by hand.\n\n", machine, date.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "Each setting is the environment a gateway process (`mcpconform gateway`, SQLite, a fresh file each run) started with. "+
		"`mcpconform bench` measured it from another process (so the load client and the probe kept Go's defaults): "+
		"each figure is the gateway's calls/s over the bare probe's in the same run (3 interleaved rounds of 8 clients, 12 s budget), "+
		"and the gateway process's peak resident set (VmHWM). The settings ran interleaved, %d rounds; every cell is the median over them, "+
		"the rounds' figures in brackets.\n\n", rounds)
	fmt.Fprintf(w, "| setting | keyed first calls × bare | keyed replays × bare | unkeyed calls × bare | peak RSS |\n|---|---:|---:|---:|---:|\n")
	for i, s := range settings {
		col := func(f func(gcRun) float64) string {
			var xs []float64
			for _, r := range runs[i] {
				xs = append(xs, f(r))
			}
			return fmt.Sprintf("%.2f× (%s)", bench.Median(xs), joinF(xs, "%.2f"))
		}
		rss := func() string {
			var xs []float64
			for _, r := range runs[i] {
				xs = append(xs, float64(r.PeakRSS)/(1<<20))
			}
			return fmt.Sprintf("%.0f MiB (%s)", bench.Median(xs), joinF(xs, "%.0f"))
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", s, col(func(r gcRun) float64 { return r.First }),
			col(func(r gcRun) float64 { return r.Replay }), col(func(r gcRun) float64 { return r.Unkeyed }), rss())
	}
}

func joinF(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// runGC builds mcpconform, sweeps the settings and writes out.
func runGC(ctx context.Context, settings []gcSetting, rounds int, out string) error {
	began := time.Now()
	tmp, err := os.MkdirTemp("", "mcpbench-gc-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logf("building mcpconform")
	binary, err := target.Build(ctx, os.Getenv("GO"), filepath.Join(tmp, "bin"))
	if err != nil {
		return err
	}
	runs, err := gcSweep(ctx, binary, tmp, settings, rounds, logf)
	if err != nil {
		return err
	}
	var b strings.Builder
	renderGC(&b, settings, runs, rounds, began, fmt.Sprintf("%d cores, %s", runtime.NumCPU(), runtime.Version()))
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s in %v", out, time.Since(began).Round(time.Second))
	return nil
}
