package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/effectsrv"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

// effectsIDs are the scenarios the effects tests run: a keyed retry, one
// seconds later, and the same key with another message. Each counts the
// write's effects, so each is judged through the read tool alone.
var effectsIDs = []string{"retry-01", "retry-01-later", "retry-02", "twins-01", "ledger-02"}

// effectsRun runs the scenarios against internal/effectsrv through a
// profile that declares no probe, only the read tool that shows the
// messages written (effects), as an operator of such a server would.
func effectsRun(t *testing.T, o effectsrv.Options, ids []string) runner.Outcome {
	t.Helper()
	srv, err := effectsrv.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	prof := effectsProfile(nil)
	if o.ParamsKey {
		prof = effectsParamsProfile()
	}
	cfg := runner.Config{Target: srv.URL(), Profile: writeProfile(t, prof), Seed: 3, IDs: ids}
	var predicted map[string]judge.Verdict
	if o.Bugs == (effectsrv.Bugs{}) {
		// What doctor says a run will make of each scenario, held to the
		// run: the read tool stands in for the probe in both alike.
		d, err := runner.Doctor(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		predicted = d.Predicted()
	}
	out, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Run.Scenarios {
		t.Logf("%-16s %-12s %s", s.ID, s.Verdict, firstLine(s.Reason))
		if predicted != nil && predicted[s.ID] != s.Verdict {
			t.Errorf("%s: doctor predicted %s, the run made it %s", s.ID, predicted[s.ID], s.Verdict)
		}
	}
	return out
}

// effectsProfile is effectsrv's profile, its read arguments replaced when
// given.
func effectsProfile(readArgs map[string]any) map[string]any {
	if readArgs == nil {
		readArgs = map[string]any{"contains": "{token}"}
	}
	return map[string]any{
		"name":           "effectsrv",
		"key_placement":  "argument",
		"unkeyed_policy": "refuse",
		"receipt_path":   "result.structuredContent.message_id",
		"tools":          map[string]any{"write": map[string]any{"name": effectsrv.ToolSend}},
		"credentials":    map[string]any{"api_keys": []string{"ek-0123456789"}},
		"reasons": map[string]any{
			"idempotency_key_reused":   []any{effectsrv.ReasonKeyConflict},
			"idempotency_key_required": []any{effectsrv.ReasonKeyMissing},
		},
		"effects": map[string]any{
			"write_arguments": map[string]any{"channel": "conformance", "text": "{token} {extra}"},
			"read": map[string]any{"tool": effectsrv.ToolList, "arguments": readArgs,
				"count": "result.structuredContent.messages"},
		},
	}
}

// effectsParamsProfile is the profile of effectsrv with ParamsKey: the key
// a member of the tools/call params (key_param's default, SEP-3182's
// name), the rest as for the key in the arguments.
func effectsParamsProfile() map[string]any {
	p := effectsProfile(nil)
	p["name"] = "effectsrv, key in params"
	p["key_placement"] = "params"
	return p
}

// doctor shows the read-tool observer: its capability, and one write whose
// effect the read tool counts; a read that cannot see the write (its
// arguments match no message) is a wiring failure, not a pass.
func TestEffectsServerDoctor(t *testing.T) {
	srv, err := effectsrv.Start(effectsrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	for _, tc := range []struct {
		name     string
		readArgs map[string]any
		code     int
		want     []string
	}{
		{"wired", nil, 0, []string{"ok   one call of the write tool shows one effect through the target's read tool",
			"capabilities: effects, ", "highest level it can claim: wire"}},
		{"read sees nothing", map[string]any{"contains": "elsewhere-{token}"}, 1,
			[]string{"FAIL one call of the write tool shows one effect through the target's read tool", "never counted an effect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := writeProfile(t, effectsProfile(tc.readArgs))
			var out, errs bytes.Buffer
			code := dispatch(context.Background(), []string{"doctor", "--target", srv.URL(), "--profile", prof}, &out, &errs)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errs.String())
			}
			t.Log(out.String())
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("doctor output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// A server idempotent by the key in its arguments passes at its highest
// level (wire), every dispatch check observed through its read tool; its
// ledger checks, which no read tool stands in for, stay not observed
// (incomplete scenarios of the metered level, not failures).
func TestEffectsServerCorrectPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    effectsrv.Options
		wire string // the protocol the run negotiates
	}{
		{"key in arguments", effectsrv.Options{}, "2025-11-25"},
		// Stateless, so the run speaks 2026-07-28, which the params
		// bug's revision needs: its pass is on that wire.
		{"key in params", effectsrv.Options{ParamsKey: true}, "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each run waits mostly on clocks and sockets
			out := effectsRun(t, tc.o, effectsIDs)
			wantEffectsPass(t, out)
			if got := out.Run.Target.Protocol; got != tc.wire {
				t.Errorf("the run spoke %q, want %q", got, tc.wire)
			}
		})
	}
}

// wantEffectsPass holds a run of effectsIDs to PASS at wire, each of its
// scenarios with a check held through the read tool and none through the
// probe.
func wantEffectsPass(t *testing.T, out runner.Outcome) {
	t.Helper()
	if out.Result != reports.RunPass || out.Code != runner.ExitOK || out.Run.Level != reports.LevelWire {
		t.Errorf("run %s exit %d at level %s, want PASS exit 0 at wire: %v", out.Result, out.Code, out.Run.Level, out.Why)
	}
	if got := len(out.Run.Scenarios); got != len(effectsIDs) {
		t.Errorf("%d scenarios ran, want %d", got, len(effectsIDs))
	}
	for _, s := range out.Run.Scenarios {
		if s.Verdict != judge.Passed && s.Verdict != judge.Incomplete {
			t.Errorf("%s: %s, want passed or incomplete: %s", s.ID, s.Verdict, s.Reason)
		}
		seen := false
		for _, c := range s.Checks {
			if c.Capability == judge.CapUpstream {
				t.Errorf("%s: check %q names the probe, which is not behind this server", s.ID, c.Step)
			}
			seen = seen || (c.Capability == judge.CapEffects && c.Status() == judge.Held)
		}
		if !seen {
			t.Errorf("%s: no check held through the read tool (effects)", s.ID)
		}
	}
}

// Behind a gateway that replays or refuses an unkeyed call, the read tool
// still shows a correct server's effects: every read is a call of its own
// (a fresh key), so the run passes as it does without the gateway.
func TestEffectsReadsThroughGateway(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads effectsrv.ReadPolicy
	}{
		{"unkeyed reads replayed", effectsrv.ReadsReplayed},
		{"unkeyed reads refused", effectsrv.ReadsRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := effectsRun(t, effectsrv.Options{UnkeyedReads: tc.reads}, []string{"retry-01"})
			if out.Result != reports.RunPass || out.Code != runner.ExitOK {
				t.Errorf("run %s exit %d, want PASS exit 0: %v", out.Result, out.Code, out.Why)
			}
		})
	}
}

// Each bug switch fails the scenario that shows it, with a violated check
// whose harm is a double dispatch: the read tool shows the message twice.
func TestEffectsServerBugsFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      effectsrv.Options
		failed string
		late   string // the late argument of the check that catches it: "" when the step's own read does
	}{
		// A retry with the same key writes the message again.
		{"retry writes again", effectsrv.Options{Bugs: effectsrv.Bugs{RetryWritesAgain: true}}, "retry-01", ""},
		// The key forgotten after a second: the retry 2 s later writes again.
		{"key forgotten", effectsrv.Options{Bugs: effectsrv.Bugs{KeyTTL: time.Second}}, "retry-01-later", ""},
		// The replay is right, but the message is written again 300 ms
		// later: the step's read has already counted one; the re-read at
		// the scenario's end, which waits out effects.read.lag_ms (2 s by
		// default) after the last write's answer, sees it.
		{"late rewrite", effectsrv.Options{Bugs: effectsrv.Bugs{LateRewrite: 300 * time.Millisecond}}, "retry-01", judge.LateScenario},
		// The same, behind a gateway that replays an unkeyed read: an
		// unkeyed re-read would get the first read's answer (one message)
		// and miss the late one; each read's own key makes it run.
		{"late rewrite, unkeyed reads replayed", effectsrv.Options{Bugs: effectsrv.Bugs{LateRewrite: 300 * time.Millisecond},
			UnkeyedReads: effectsrv.ReadsReplayed}, "retry-01", judge.LateScenario},
		// Behind a gateway that refuses unkeyed calls, an unkeyed read
		// would stop every scenario with a harness error, the double
		// write unjudged.
		{"retry writes again, unkeyed reads refused", effectsrv.Options{Bugs: effectsrv.Bugs{RetryWritesAgain: true},
			UnkeyedReads: effectsrv.ReadsRefused}, "retry-01", ""},
		// The key in params read on 2025-11-25 alone: the run speaks
		// 2026-07-28 (the server is stateless), where the retry writes
		// again.
		{"params key ignored on 2026", effectsrv.Options{ParamsKey: true, Bugs: effectsrv.Bugs{ParamsKeyIgnoredOn2026: true}}, "retry-01", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := effectsRun(t, tc.o, []string{tc.failed})
			if out.Result != reports.RunFail || out.Code != runner.ExitFailed {
				t.Errorf("run %s exit %d, want FAIL exit 1", out.Result, out.Code)
			}
			for _, s := range out.Run.Scenarios {
				if s.ID != tc.failed {
					continue
				}
				if s.Verdict != judge.Failed {
					t.Fatalf("%s: %s, want failed", s.ID, s.Verdict)
				}
				double := false
				for _, c := range s.Checks {
					double = double || (c.Status() == judge.Violated && c.Harm == judge.HarmDoubleDispatch && c.Capability == judge.CapEffects &&
						c.Kind == judge.KindProbeCount && c.Args["late"] == tc.late)
				}
				if !double {
					t.Errorf("%s: no violated double-dispatch count check (late %q) seen through the read tool: %s", s.ID, tc.late, s.Reason)
				}
				reads := 0
				for _, ex := range s.Control {
					if ex.Lane == "effects" && strings.Contains(string(ex.RequestBody), effectsrv.ToolList) {
						reads++
					}
				}
				if reads == 0 {
					t.Errorf("%s: the evidence holds none of the read tool's calls the finding rests on", s.ID)
				}
				if sum := reports.HarmSummary(out.Run); !strings.HasPrefix(sum, string(judge.HarmDoubleDispatch)+" in 1 ("+tc.failed) {
					t.Errorf("harm summary %q, want %s leading with %s", sum, tc.failed, judge.HarmDoubleDispatch)
				}
				return
			}
			t.Fatalf("%s did not run", tc.failed)
		})
	}
}

// The worked examples of docs/profile.md are the profiles these tests run
// effectsrv with (their names aside), so the guide shows ones that work.
func TestEffectsGuideExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/profile.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		heading string
		profile map[string]any
	}{
		{"### A server whose write tool is the effect", effectsProfile(nil)},
		{"#### The same server, the key a member of the tools/call params", effectsParamsProfile()},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			_, rest, ok := bytes.Cut(b, []byte(tc.heading))
			_, rest, ok2 := bytes.Cut(rest, []byte("```json\n"))
			example, _, ok3 := bytes.Cut(rest, []byte("```"))
			if !ok || !ok2 || !ok3 {
				t.Fatalf("docs/profile.md has no json block under %q", tc.heading)
			}
			var doc, ours map[string]any
			if err := json.Unmarshal(example, &doc); err != nil {
				t.Fatalf("the guide's example: %v", err)
			}
			raw, _ := json.Marshal(tc.profile)
			_ = json.Unmarshal(raw, &ours)
			delete(doc, "name")
			delete(ours, "name")
			if diff := cmp.Diff(ours, doc); diff != "" {
				t.Errorf("the guide's example differs from effectsrv's profile (-test +guide):\n%s", diff)
			}
			if _, err := target.ParseProfile(example); err != nil {
				t.Errorf("the guide's example: %v", err)
			}
		})
	}
}
