package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Multi-round calls, as MCP 2026-07-28 has them: a tool may answer a round
// with an input-required result (inputRequests, requestState), and the
// client sends the call again with its answers (inputResponses) and the
// state. The rounds are one operation: charged once, for the round that
// finishes, whose result a retry replays.
func registerRounds(sc *godog.ScenarioContext) {
	sc.Step(`^an upstream multi-round tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return aProbeTool(ctx, alias, price, probe.ToolAsk, "a multi-round upstream tool")
	})
	sc.Step(`^an upstream tool "([^"]*)" that needs the client to declare sampling, priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return aProbeTool(ctx, alias, price, probe.ToolSample, "an upstream tool needing sampling")
	})
	sc.Step(`^the last answer of "([^"]*)" asks for input$`, asksForInput)
	sc.Step(`^the last answer of "([^"]*)" is a final result as its protocol version writes one$`, finalResultOfItsVersion)
	sc.Step(`^"([^"]*)" answers the input its last answer asked for$`, answersInput)
}

// aProbeTool registers a tool forwarding to one of the probe's tools; only
// a control API can route one there.
func aProbeTool(ctx context.Context, alias string, price int64, tool, what string) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		return w.cannot(judge.CapFixtures, fmt.Sprintf("%s %q routed to the probe's %s", what, alias, tool))
	}
	name := fmt.Sprintf("probe.%s.%s", alias, uuid.NewString()[:8])
	if _, err := w.env.Control().CreateTool(ctx, control.Tool{Name: name, Price: control.Ptr(price), ReadOnly: control.Ptr(false), Approval: control.Ptr(false),
		UpstreamURL: w.env.Probe.URL(), UpstreamTool: tool}); err != nil {
		return fmt.Errorf("register upstream tool %s: %w", name, err)
	}
	w.tools[alias], w.prices[alias] = name, price
	w.noteTool(name, map[string]string{probe.ToolAsk: judge.RoleAsk, probe.ToolSample: judge.RoleSample}[tool], price)
	return nil
}

// inputAsked is what an input-required result asks for, or nil.
type inputAsked struct {
	ids   []string // the input requests' ids
	state string
}

func askedOf(a *answer) *inputAsked {
	var rt string
	if a == nil || json.Unmarshal(a.ResultField("resultType"), &rt) != nil || rt != "input_required" {
		return nil
	}
	var reqs map[string]json.RawMessage
	var state string
	if json.Unmarshal(a.ResultField("inputRequests"), &reqs) != nil || len(reqs) == 0 {
		return nil
	}
	_ = json.Unmarshal(a.ResultField("requestState"), &state)
	in := &inputAsked{state: state}
	for id := range reqs {
		in.ids = append(in.ids, id)
	}
	sort.Strings(in.ids)
	return in
}

func asksForInput(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	actual := w.describe(a)
	if a.IsResult() {
		actual = "a result: " + string(a.Result())
	}
	return w.check(checkOf(judge.KindAsksForInput, judge.HarmShape, "client", who), fmt.Sprintf("the last answer of %s asks for input", who), judge.CapWire, askedOf(a) != nil,
		`a result with resultType "input_required", its inputRequests and a requestState`, actual)
}

// answersInput sends the client's last call again as the call's next round:
// the same tool, arguments and key, a new JSON-RPC id, every input request
// accepted (as an elicitation answer) and the state sent back. It becomes
// the client's last call, so a retry repeats this round.
func answersInput(ctx context.Context, who string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	in := askedOf(a)
	if in == nil || c.last == nil {
		return fmt.Errorf("%s's last answer asks for no input to answer (%s)", who, w.describe(a))
	}
	next := *c.last
	next.ID = nil
	next.InputResponses = map[string]any{}
	for _, id := range in.ids {
		next.InputResponses[id] = map[string]any{"action": "accept", "content": map[string]any{"ok": true}}
	}
	next.RequestState = in.state
	next.Label = strings.TrimSuffix(next.Label, " (next round)") + " (next round)"
	c.last = &next
	got, err := w.do(ctx, c, &next)
	if err != nil && got == nil {
		return fmt.Errorf("%s answers the input: %w", who, err)
	}
	c.answers = append(c.answers, got)
	return nil
}

// finalResultOfItsVersion checks the last answer is a final tools/call
// result in the form the schema of the protocol version the client speaks
// now requires (judge.FinalShape): 2026-07-28's requires resultType
// "complete" of a final result; 2025-11-25's requires a content list and
// admits any other member, a resultType too. A replay is checked as a
// first answer is, whichever wire produced the stored outcome.
func finalResultOfItsVersion(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	version := w.clientFor(who).wire.Version()
	step := fmt.Sprintf("the last answer of %s is a final result as %s writes one", who, version)
	id := checkOf(judge.KindFinalShape, judge.HarmShape, "client", who, "wire", version)
	v := a.ResultValue()
	ok, expected := judge.FinalShape(a.IsResult(), v, version)
	actual := w.describe(a)
	if a.IsResult() {
		actual = fmt.Sprintf("a result with resultType %s", orAbsent(a.ResultField("resultType")))
		if v.NoContent {
			actual += " and no content list"
		}
	}
	return w.check(id, step, judge.CapWire, ok, expected, actual)
}

func orAbsent(raw json.RawMessage) string {
	if raw == nil {
		return "(absent)"
	}
	return string(raw)
}
