package steps

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// TestViolationNamesItsWitness: what a step looked at since its last check
// (the answer's exchange, the probe's dispatches) is the witness of the
// next check; a violation does not stop the scenario, its finding leads
// with the observation and lists the witness, and the next check starts
// with an empty one.
func TestViolationNamesItsWitness(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	call := reports.Exchange{Label: "A: write", Lane: "A", Started: t0, Finished: t0.Add(time.Millisecond),
		RequestHeaders: map[string]string{"Idempotency-Key": `"k1-x"`}, RequestBody: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`), Status: 200}
	w := &world{env: &Env{}, entry: catalog.Entry{ID: "retry-01"}}
	w.evidence.Exchanges = []reports.Exchange{{Label: "initialize", Lane: "A", Started: t0.Add(-time.Millisecond)}, call}
	w.noteAnswer(&answer{Answer: &wire.Answer{Exchange: call}})
	w.noteDispatches([]judge.Dispatch{{Token: "op1-x", At: t0}, {Token: "op1-x", At: t0.Add(2 * time.Millisecond)}})
	if err := w.check(checkOf(judge.KindProbeCount, judge.HarmDoubleDispatch, "token", "op1-x", "n", 1), "the probe saw op1-x dispatched 1 times", judge.CapUpstream, false, "1 dispatch(es) of token op1-x", "2 dispatch(es)"); err != nil {
		t.Fatalf("a violated check stopped the scenario: %v", err)
	}
	finding := failure(w.evidence, w.evidence.Checks[0]) + w.evidenceNote()
	lines := strings.Split(finding, "\n")
	if lines[0] != "observed: 2 dispatch(es); expected: 1 dispatch(es) of token op1-x" {
		t.Errorf("first line %q restates instead of leading with the observation", lines[0])
	}
	for _, want := range []string{`witness: request #2 "A: write" (JSON-RPC id 7, key "k1-x")`, "witness: dispatch of op1-x at 12:00:00.002000", "evidence: evidence/retry-01.json"} {
		if !strings.Contains(finding, want) {
			t.Errorf("finding lacks %q:\n%s", want, finding)
		}
	}
	got := w.evidence.Checks[0].Witness
	if got == nil || len(got.Exchanges) != 1 || got.Exchanges[0] != 1 || len(got.Dispatches) != 2 {
		t.Errorf("witness %+v", got)
	}
	_ = w.check(checkOf(judge.KindGetsResult, "", "client", "A"), "another check", judge.CapWire, true, "x", "x")
	if w.evidence.Checks[1].Witness != nil {
		t.Errorf("the next check inherited a witness: %+v", w.evidence.Checks[1].Witness)
	}
}
