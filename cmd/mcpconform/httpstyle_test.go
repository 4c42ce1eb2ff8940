package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
	"github.com/mcpconform/mcpconform/reports"
)

// httpStyle edits vendorgw into its IETF idempotency-key draft mode (400,
// 422, 409 with Retry-After, Idempotent-Replayed on replays) and the
// profile into the one docs/profile.md shows for such a gateway: each
// refusal by its status and a text of its body, Retry-After promised, the
// replay header named.
func httpStyle(style vendorgw.HTTPStyle) []any {
	style.On = true
	return []any{
		func(o *vendorgw.Options) { o.HTTPStyle = style },
		func(p map[string]any) {
			r := p["reasons"].(map[string]any)
			r["idempotency_key_required"] = []any{map[string]any{"http": 400, "body": "acme_key_missing"}}
			r["idempotency_key_reused"] = []any{map[string]any{"http": 422, "body": "acme_key_conflict"}}
			r["idempotency_in_progress"] = []any{map[string]any{"http": 409, "body": "acme_busy"}}
			// go-sdk's own 400s, told from the missing key's by their texts:
			// a bare 400 would let a key_missing answer pass for either.
			r["batch_not_supported"] = []any{map[string]any{"http": 400, "body": "batching is not supported"}}
			r["parse_error"] = []any{map[string]any{"http": 400, "body": "malformed payload"}}
			p["retry_after"] = true
			p["replay_marker"] = map[string]any{"header": vendorgw.ReplayedHeader, "value": "true"}
		},
	}
}

// A correct HTTP-style gateway passes at level wire, as the JSON-RPC one
// does (TestVendorGatewayIdempotent): its statuses, bodies, Retry-After and
// replay header are what its profile says, on every answer.
func TestVendorGatewayHTTPStyle(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	out := vendorRun(t, vendorgw.Idempotent, waivers, httpStyle(vendorgw.HTTPStyle{})...)
	wantCorrectPass(t, out)
	// The run saw what the mode is for, or the test proves nothing.
	saw := map[string]bool{}
	for _, s := range out.Run.Scenarios {
		for _, ex := range s.Exchanges {
			for _, k := range []string{"409", "422", "400"} {
				if k == strconv.Itoa(ex.Status) {
					saw[k] = true
				}
			}
			if ex.ResponseHeaders[vendorgw.ReplayedHeader] == "true" {
				saw["replayed"] = true
			}
			if ex.ResponseHeaders["Retry-After"] != "" {
				saw["retry-after"] = true
			}
		}
	}
	for _, k := range []string{"409", "422", "400", "replayed", "retry-after"} {
		if !saw[k] {
			t.Errorf("no answer of the run had %s: the HTTP-style mode is not exercised", k)
		}
	}
}

// Each bug of the HTTP-style mode fails the scenario that meets it, with a
// violated check naming the harm; only those scenarios are run.
func TestVendorGatewayHTTPStyleBugsFail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		style vendorgw.HTTPStyle
		id    string
		kind  string
		harm  judge.Harm
		text  string // a text of the violated check's expectation or observation
	}{
		// The retry's replay goes out unmarked: two results of one
		// operation both claim the tool ran for them.
		{"replay not marked", vendorgw.HTTPStyle{ReplayNotMarked: true}, "retry-01", judge.KindAnswer, judge.HarmLostOutcome, "replay_marker"},
		// The same, where the first answer was lost: no result says which
		// call the tool ran for, the probe's one dispatch before the
		// retry does.
		{"replay after a lost answer not marked", vendorgw.HTTPStyle{ReplayNotMarked: true}, "lost-01", judge.KindAnswer, judge.HarmLostOutcome, "replay_marker"},
		// The first call is marked a replay: a client reads it as a
		// result stored earlier, of some call it never made.
		{"first call marked", vendorgw.HTTPStyle{FirstCallMarked: true}, "retry-01", judge.KindAnswer, judge.HarmLostOutcome, "replay_marker"},
		// The 409s of a held operation carry no Retry-After though the
		// profile promises one.
		{"409 without Retry-After", vendorgw.HTTPStyle{BusyWithoutRetryAfter: true}, "twins-01", judge.KindRetryAfter, judge.HarmWrongRefusal, "without a readable Retry-After"},
		// The same where the 409 is a problem+json with no JSON-RPC body.
		{"problem+json 409 without Retry-After", vendorgw.HTTPStyle{ProblemJSON: true, BusyWithoutRetryAfter: true}, "twins-01", judge.KindRetryAfter, judge.HarmWrongRefusal, "without a readable Retry-After"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edits := append(httpStyle(tc.style), func(c *runner.Config) { c.IDs = []string{tc.id} })
			out := vendorRun(t, vendorgw.Idempotent, "", edits...)
			if v := verdicts(out.Run)[tc.id]; v != judge.Failed {
				t.Errorf("%s: %s, want failed", tc.id, v)
			}
			found := false
			for _, s := range out.Run.Scenarios {
				for _, c := range s.Checks {
					if s.ID == tc.id && c.Status() == judge.Violated && c.Kind == tc.kind && c.Harm == tc.harm && strings.Contains(c.Expected+" "+c.Actual, tc.text) {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("%s: no violated %s check with harm %s", tc.id, tc.kind, tc.harm)
			}
			// recheck and bundle verify judge it again from the history
			// alone, and find the same.
			for _, s := range out.Run.Scenarios {
				if s.ID != tc.id {
					continue
				}
				again, mismatch := judge.Recheck(s.Checks, s.History)
				if mismatch {
					t.Errorf("%s: recheck disagrees with the run", tc.id)
				}
				if !slices.ContainsFunc(again, func(c judge.Check) bool {
					return c.Status() == judge.Violated && c.Kind == tc.kind && c.Harm == tc.harm
				}) {
					t.Errorf("%s: recheck finds no violated %s check", tc.id, tc.kind)
				}
			}
			if out.Result != reports.RunFail || out.Code != runner.ExitFailed {
				t.Errorf("run %s exit %d, want FAIL exit 1", out.Result, out.Code)
			}
		})
	}
}

// A 409 whose JSON-RPC error leaves data.retryable out is still in progress:
// the profile maps its status so, and the draft retries it. The gateway is
// correct: every check of the scenarios that hold a duplicate to a
// retryable in-progress answer holds, live and again from the history.
func TestVendorGatewayHTTPStyleBusyUnflagged(t *testing.T) {
	ids := []string{"twins-01", "twins-03-later"}
	edits := append(httpStyle(vendorgw.HTTPStyle{BusyUnflagged: true}), func(c *runner.Config) { c.IDs = ids })
	out := vendorRun(t, vendorgw.Idempotent, "", edits...)
	// At level wire the ledger's checks are not observed: every check
	// the run could make must hold.
	for _, id := range ids {
		if v := verdicts(out.Run)[id]; v != judge.Passed && v != judge.Incomplete {
			t.Errorf("%s: %s, want passed (or incomplete, the ledger unseen)", id, v)
		}
	}
	saw := false
	for _, s := range out.Run.Scenarios {
		for _, c := range s.Checks {
			if c.Status() == judge.Violated {
				t.Errorf("%s: violated %s: %s", s.ID, c.Kind, c.Actual)
			}
		}
		for _, ex := range s.Exchanges {
			saw = saw || (ex.Status == 409 && !strings.Contains(ex.ResponseBody, "retryable"))
		}
		if _, mismatch := judge.Recheck(s.Checks, s.History); mismatch {
			t.Errorf("%s: recheck disagrees with the run", s.ID)
		}
	}
	if !saw {
		t.Error("no 409 without data.retryable: the variant is not exercised")
	}
}

// The draft lets a missing key be answered 428 Precondition Required as
// well as 400. A profile mapping idempotency_key_required to a bare
// {"http": 428} passes profile check, and the refusal scenarios hold
// against a gateway answering 428; the mapping is a check that can fail:
// a 428 where the profile says 400, or a 400 where it says 428, is not
// the refusal.
func TestVendorGatewayHTTPStyleMissingKey428(t *testing.T) {
	ids := []string{"refuse-02", "refuse-10"}
	for _, tc := range []struct {
		name    string
		gateway int            // the gateway's status for a missing key
		mapped  map[string]any // the profile's one mapping of idempotency_key_required
		held    bool           // whether every refused check holds
	}{
		{"428 mapped 428", 428, map[string]any{"http": 428}, true},
		// A bare 400 would overlap the go-sdk 400s the profile tells
		// apart by their bodies (reason_http_overlap).
		{"428 mapped 400", 428, map[string]any{"http": 400, "body": "acme_key_missing"}, false},
		{"400 mapped 428", 400, map[string]any{"http": 428}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each run waits mostly on sockets
			var prof string
			edits := append(httpStyle(vendorgw.HTTPStyle{MissingKeyStatus: tc.gateway}),
				func(p map[string]any) {
					p["reasons"].(map[string]any)["idempotency_key_required"] = []any{tc.mapped}
				},
				func(c *runner.Config) { c.IDs, prof = ids, c.Profile })
			out := vendorRun(t, vendorgw.Idempotent, "", edits...)
			var stdout, stderr bytes.Buffer
			if code := dispatch(context.Background(), []string{"profile", "check", prof}, &stdout, &stderr); code != 0 {
				t.Errorf("profile check: exit %d, want 0\n%s%s", code, stdout.String(), stderr.String())
			}
			// At level wire the ledger's checks are not observed, so a
			// correct run's scenarios are incomplete, never failed: what
			// the mapping decides is the refused checks.
			v := verdicts(out.Run)
			for _, s := range out.Run.Scenarios {
				refused, violated := 0, 0
				for _, c := range s.Checks {
					if c.Status() == judge.Violated {
						violated++
					}
					if c.Kind == judge.KindRefused && c.Args["reason"] == "idempotency_key_required" {
						refused++
						if (c.Status() == judge.Held) != tc.held {
							t.Errorf("%s: refused check %s, want held %v: %s", s.ID, c.Status(), tc.held, c.Actual)
						}
					}
				}
				if refused == 0 {
					t.Errorf("%s: no idempotency_key_required check", s.ID)
				}
				if tc.held && (violated > 0 || v[s.ID] == judge.Failed) {
					t.Errorf("%s: %s with %d violated checks, want none", s.ID, v[s.ID], violated)
				}
				if !tc.held && v[s.ID] != judge.Failed {
					t.Errorf("%s: %s, want failed", s.ID, v[s.ID])
				}
			}
			if len(out.Run.Scenarios) != len(ids) {
				t.Errorf("%d scenarios ran, want %d", len(out.Run.Scenarios), len(ids))
			}
			saw := false
			for _, s := range out.Run.Scenarios {
				for _, ex := range s.Exchanges {
					saw = saw || ex.Status == tc.gateway
				}
			}
			if !saw {
				t.Errorf("no answer of the run had HTTP %d: the gateway's missing-key status is not exercised", tc.gateway)
			}
		})
	}
}

// Many HTTP APIs following the draft refuse with an RFC 9457
// application/problem+json body and no JSON-RPC envelope at all. The
// profile maps each refusal by its status and a text of the problem's
// type; the gateway is correct: every check of the scenarios that meet
// each refusal (400, 422, 409 with Retry-After) holds, live and again
// from the history.
func TestVendorGatewayHTTPStyleProblemJSON(t *testing.T) {
	ids := []string{"refuse-02", "retry-02", "twins-01"}
	edits := append(httpStyle(vendorgw.HTTPStyle{ProblemJSON: true}), func(c *runner.Config) { c.IDs = ids })
	out := vendorRun(t, vendorgw.Idempotent, "", edits...)
	// At level wire the ledger's checks are not observed: every check
	// the run could make must hold.
	v := verdicts(out.Run)
	for _, id := range ids {
		if v[id] != judge.Passed && v[id] != judge.Incomplete {
			t.Errorf("%s: %s, want passed (or incomplete, the ledger unseen)", id, v[id])
		}
	}
	if len(out.Run.Scenarios) != len(ids) {
		t.Errorf("%d scenarios ran, want %d", len(out.Run.Scenarios), len(ids))
	}
	saw := map[string]bool{}
	for _, s := range out.Run.Scenarios {
		if s.Ending != nil && (s.Ending.Error != "" || s.Ending.Skip != "") {
			t.Errorf("%s: the harness could not drive it: %+v", s.ID, *s.Ending)
		}
		for _, c := range s.Checks {
			if c.Status() == judge.Violated {
				t.Errorf("%s: violated %s: %s", s.ID, c.Kind, c.Actual)
			}
		}
		for _, ex := range s.Exchanges {
			if ex.Status == 400 || ex.Status == 422 || ex.Status == 409 {
				if !strings.Contains(ex.ResponseBody, vendorgw.ProblemType) || strings.Contains(ex.ResponseBody, "jsonrpc") {
					t.Errorf("%s: HTTP %d answered %q, want problem+json only", s.ID, ex.Status, ex.ResponseBody)
				}
				saw[strconv.Itoa(ex.Status)] = true
				saw["retry-after"] = saw["retry-after"] || ex.ResponseHeaders["Retry-After"] != ""
			}
		}
		again, mismatch := judge.Recheck(s.Checks, s.History)
		if mismatch {
			t.Errorf("%s: recheck disagrees with the run", s.ID)
		}
		for _, c := range again {
			if c.Status() == judge.Violated {
				t.Errorf("%s: recheck finds %s violated: %s (expected %s)", s.ID, c.Kind, c.Actual, c.Expected)
			}
		}
	}
	for _, k := range []string{"400", "422", "409", "retry-after"} {
		if !saw[k] {
			t.Errorf("no problem+json answer of the run had %s: the variant is not exercised", k)
		}
	}
}
