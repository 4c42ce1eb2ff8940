package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/bench"
	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/steps"
)

const benchUsage = `Usage: mcpconform bench --target URL --profile FILE [flags]
       mcpconform bench                           (the bundled reference gateway)

Measures a gateway against the harness's upstream probe called directly,
the very upstream its tool forwards to, with the same client: so each
ratio is what the gateway itself costs. It brings the target and the probe
up as run does (the preflight included) and then runs --rounds interleaved
rounds, each phase back to back:

  bare probe          the probe's tool, called directly
  keyed first calls   through the gateway, a new key and token each
  keyed replays       the first calls again, same key and arguments
  unkeyed calls       no key, a new token each (only when the profile's
                      unkeyed_policy is derived; refuse has nothing to time)

each with calls/s, p50, p99, the ratio to the round's bare probe, and the
dispatches the probe counted for the phase's tokens. Then a storm of
--storm identical calls released together, to the bare probe (for the time)
and through the gateway with one key: answered, settled (in-progress
refusals retried) and the dispatches at the probe. A replay or a storm
that reaches the probe more than once is stated as a DOUBLE DISPATCH
finding. Figures are of this machine now: compare runs on one machine.

Bounds: at most --calls counted calls a phase (a few more are in flight or
warming up; the output says how many were sent), and --budget for all the
measuring (start-up is not counted). Every call through the gateway is a
real call: it is charged to the profile's wallet like any other.

Traffic goes only where you point: the target must be on a loopback
address (127.0.0.0/8, ::1, localhost) or be the URL the profile itself
names (its urls), and the probe is the harness's own. Anything else is
refused before a call is sent.

Writes bench.md and bench.json into --out, prints bench.md, and a progress
line a phase on stderr.

Exit codes: 0 measured, no double dispatch; 1 measured, a double dispatch
found; 2 set-up error, or stopped part-way (bench.json says where); 130
interrupted.

Flags:
`

// benchConfig is a bench's flags.
type benchConfig struct {
	run         runner.Config
	calls       int
	budget      time.Duration
	concurrency int
	storm       int
	rounds      int
	out         string
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", benchUsage, stderr)
	var bc benchConfig
	fs.StringVar(&bc.run.Target, "target", "reference", "what to measure: \"reference\" (start the bundled gateway) or a gateway URL (loopback, or the profile's own)")
	fs.StringVar(&bc.run.Profile, "profile", "", "profile file describing a URL target (docs/profile.md): its write tool, key placement, credentials")
	fs.StringVar(&bc.run.ProbeAddr, "probe-addr", "127.0.0.1:0", "listen address of the upstream probe (pin it so a gateway's upstream can point at it)")
	fs.StringVar(&bc.run.ProbeURL, "probe-url", "", "use a running probe (mcpconform probe) at this base URL instead of starting one")
	fs.IntVar(&bc.calls, "calls", 200, "counted calls per phase at most")
	fs.DurationVar(&bc.budget, "budget", 20*time.Second, "time for all the measuring (rounds and storms), start-up not counted")
	fs.IntVar(&bc.concurrency, "concurrency", 4, "clients of each phase")
	fs.IntVar(&bc.storm, "storm", 16, "identical calls in a storm")
	fs.IntVar(&bc.rounds, "rounds", 3, "interleaved rounds of the phases; the figures are their medians")
	fs.StringVar(&bc.out, "out", "mcpconform-bench", "directory bench.md and bench.json are written to")
	if _, code, ok := cli.ParseArgs(fs, args, 0); !ok {
		return code
	}
	if msg := bc.problem(); msg != "" {
		fmt.Fprintf(stderr, "mcpconform bench: %s\n", msg)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform bench: find own binary: %v\n", err)
		return 2
	}
	bc.run.Binary, bc.run.Workers, bc.run.Store = exe, 1, "sqlite"
	res, err := runBench(ctx, bc, func(format string, args ...any) {
		fmt.Fprintf(stderr, "bench: "+format+"\n", args...)
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform bench: %v\n", err)
		if ctx.Err() != nil {
			return runner.ExitInterrupted
		}
		return 2
	}
	if err := writeBench(bc.out, res, stdout); err != nil {
		fmt.Fprintf(stderr, "mcpconform bench: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "bench: wrote %s and %s\n", filepath.Join(bc.out, "bench.md"), filepath.Join(bc.out, "bench.json"))
	switch {
	case ctx.Err() != nil:
		return runner.ExitInterrupted
	case res.Err != "":
		return 2
	case slices.ContainsFunc(res.Findings, func(f string) bool { return strings.HasPrefix(f, "DOUBLE DISPATCH") }):
		return 1
	}
	return 0
}

// problem says what is wrong with the flags, "" nothing.
func (bc benchConfig) problem() string {
	switch {
	case bc.calls < 1:
		return fmt.Sprintf("--calls %d: at least 1", bc.calls)
	case bc.budget <= 0:
		return fmt.Sprintf("--budget %v: a positive duration", bc.budget)
	case bc.concurrency < 1:
		return fmt.Sprintf("--concurrency %d: at least 1", bc.concurrency)
	case bc.storm < 2:
		return fmt.Sprintf("--storm %d: a storm is at least 2 identical calls", bc.storm)
	case bc.rounds < 1:
		return fmt.Sprintf("--rounds %d: at least 1", bc.rounds)
	case bc.run.Target == "reference" && bc.run.Profile != "":
		return "--profile describes a URL target; the reference target needs none (drop --profile, or give --target URL)"
	case bc.run.Target != "reference" && bc.run.Profile == "":
		return "a URL target needs --profile (see drivers/target/testdata/profile.example.json)"
	}
	if bc.run.Target != "reference" {
		return loopbackOnly(bc.run.Target, bc.run.Profile)
	}
	return ""
}

// loopbackOnly refuses a target bench must not load: one off this
// machine, unless the profile names it as its own URL (the operator wrote
// it down for this gateway). Load sent to a mistyped host is somebody
// else's outage.
func loopbackOnly(raw, profilePath string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return fmt.Sprintf("--target %q: want \"reference\" or an absolute http(s) URL", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return ""
	}
	p, err := target.LoadProfile(profilePath)
	if err != nil {
		return err.Error()
	}
	if slices.ContainsFunc(p.URLs, func(v string) bool { return target.SameEndpoint(raw, v) }) {
		return ""
	}
	return fmt.Sprintf("--target %s is not a loopback address and not one of the profile's urls: bench loads only a gateway on this machine, or the one its profile names", raw)
}

// runBench brings the target and probe up as run does, readies the
// gateway's tool and key, and measures.
func runBench(ctx context.Context, bc benchConfig, progress func(string, ...any)) (bench.TargetResults, error) {
	began := time.Now()
	progress("starting the probe and %s", bc.run.Target)
	env, stop, tgt, err := runner.BringUp(ctx, bc.run)
	if err != nil {
		return bench.TargetResults{}, err
	}
	defer stop()
	n := max(bc.concurrency, bc.storm)
	gw := env.Profile.Client(env.URLs[0])
	gw.HTTP, gw.ClientName = bench.NewHTTP(n), "mcpconform-bench"
	tool, err := benchTool(ctx, env, gw)
	if err != nil {
		return bench.TargetResults{}, err
	}
	bare := &wire.Client{BaseURL: env.Probe.URL(), ProtocolVersion: env.Profile.ProtocolVersion,
		HTTP: bench.NewHTTP(n), ClientName: "mcpconform-bench"}
	spec := bench.TargetSpec{
		Bare: bare, BareTool: probe.ToolWrite, Gateway: gw, Tool: tool,
		InProgress: func(a *wire.Answer) bool {
			return env.Profile.Matches("idempotency_in_progress", a.ErrorReason(), a.ErrorCode(), a.Status)
		},
		Dispatches: func(ctx context.Context, prefix string) (int, error) {
			ds, err := env.Probe.Dispatches(ctx, prefix)
			return len(ds), err
		},
		Prefix: env.RunID + "-bench", Rounds: bc.rounds, StormN: bc.storm, Settle: env.Settle, Progress: progress,
	}
	phases := 4
	if env.Policy == target.UnkeyedRefuse {
		spec.NoUnkeyed, phases = "the profile's unkeyed_policy is refuse: the gateway refuses unkeyed calls", 3
	}
	// Seven tenths of the budget for the rounds, the rest for the storms
	// (a settle and a few backoffs each); the context holds all to it.
	window := time.Duration(float64(bc.budget) * 0.7 / float64(bc.rounds*phases))
	warmup := min(50*time.Millisecond, window/4) // short: warm-up calls are sent but not counted
	spec.Load = bench.Load{Concurrency: bc.concurrency, Warmup: warmup, Duration: max(window-warmup, 10*time.Millisecond), MaxCalls: bc.calls}
	mctx, cancel := context.WithTimeout(ctx, bc.budget)
	defer cancel()
	res := bench.MeasureTarget(mctx, spec)
	res.Date, res.Target, res.Profile, res.Protocol = began.UTC().Truncate(time.Second), strings.Join(tgt.URLs, " "), tgt.Profile, tgt.Protocol
	if tgt.Kind == "reference" {
		res.Target = "reference (" + res.Target + ")"
	}
	res.Setup = bench.TargetSetup{Concurrency: bc.concurrency, Warmup: spec.Load.Warmup, Duration: spec.Load.Duration,
		MaxCalls: bc.calls, Rounds: bc.rounds, StormN: bc.storm, Budget: bc.budget}
	if res.Err != "" && errors.Is(mctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		res.Err += fmt.Sprintf(" (--budget %v ran out: give more, or fewer --rounds)", bc.budget)
	}
	res.Wall = time.Since(began)
	return res, nil
}

// benchTool is the gateway's tool that forwards to the probe's write
// tool: registered through the control API when the target makes
// fixtures (the reference; a wallet and key of the bench's own too),
// else the profile's write tool, with its credentials.
func benchTool(ctx context.Context, env *steps.Env, gw *wire.Client) (string, error) {
	ctl := env.Control()
	if ctl == nil || !env.Caps[judge.CapFixtures] {
		t, ok := env.Profile.Tool(target.RoleWrite)
		if !ok {
			return "", errors.New("the profile names no write tool (tools.write): bench needs a mutating tool that forwards to the probe's probe.write")
		}
		return t.Name, nil
	}
	w, err := ctl.CreateWallet(ctx, 1_000_000_000)
	if err != nil {
		return "", fmt.Errorf("create a wallet through the control API: %w", err)
	}
	k, err := ctl.CreateKey(ctx, w.WalletID)
	if err != nil {
		return "", fmt.Errorf("create an API key through the control API: %w", err)
	}
	gw.APIKey = k.APIKey
	name := "probe.bench." + uuid.NewString()[:8]
	if _, err := ctl.CreateTool(ctx, control.Tool{Name: name, Price: control.Ptr(int64(1)), ReadOnly: control.Ptr(false),
		Approval: control.Ptr(false), UpstreamURL: env.Probe.URL(), UpstreamTool: probe.ToolWrite}); err != nil {
		return "", fmt.Errorf("register tool %s through the control API: %w", name, err)
	}
	return name, nil
}

// writeBench writes bench.md and bench.json into dir and bench.md to
// stdout.
func writeBench(dir string, res bench.TargetResults, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create --out %s: %w", dir, err)
	}
	var md strings.Builder
	if err := bench.RenderTarget(&md, res); err != nil {
		return fmt.Errorf("render bench.md: %w", err)
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bench.json: %w", err)
	}
	for name, body := range map[string][]byte{"bench.md": []byte(md.String()), "bench.json": append(js, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	_, err = io.WriteString(stdout, md.String())
	return err
}
