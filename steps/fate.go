package steps

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Fate is the verdict a run gives a scenario on the target when nothing
// fails, known before it runs: `doctor` prints it, and the steps reach it
// by the same rules (inapplicable, absentFeature, the situations below).
type Fate struct {
	Verdict    judge.Verdict // judge.Passed, judge.Incomplete, judge.Skipped or judge.NotApplicable
	Capability string        // the capability whose absence decides it; "" for passed and policy or version
	// Situation: a step's situation needs Capability (the run records it
	// as the scenario's missing capability), not a check.
	Situation bool
	Why       string // the same for every scenario of one group
}

// Fate says what a run will make of a scenario on this target when the
// target gets everything right: not applicable (another unkeyed policy, an
// MCP version it does not serve, an optional feature it does not have),
// skipped (a situation needs a capability it lacks), incomplete (a check
// needs one, or a later situation does after checks were made) or passed.
func (e *Env) Fate(entry catalog.Entry) Fate {
	if why := e.inapplicable(entry); why != "" {
		return Fate{Verdict: judge.NotApplicable, Why: why}
	}
	checked := false
	var unobserved []string
	then := false
	for _, st := range entry.Steps {
		switch strings.TrimSpace(st.Keyword) {
		case "Then":
			then = true
		case "Given", "When":
			then = false
		}
		if c, met := e.situationNeeds(st.Text); c != "" && !met {
			switch {
			case e.absentFeature(c):
				return Fate{Verdict: judge.NotApplicable, Capability: c, Why: "the profile declares no such feature of the gateway: " + capabilityHint(c)}
			case checked:
				return Fate{Verdict: judge.Incomplete, Capability: c, Situation: true, Why: "a step after its first checks needs " + c}
			}
			return Fate{Verdict: judge.Skipped, Capability: c, Situation: true, Why: "needs " + c}
		}
		if !then {
			continue
		}
		checked = true
		if c := ObservedBy(st.Text); c != "" && !e.observes(c) && len(unobserved) == 0 {
			unobserved = append(unobserved, c)
		}
	}
	if len(unobserved) > 0 {
		return Fate{Verdict: judge.Incomplete, Capability: unobserved[0], Why: "checks not observed without " + unobserved[0]}
	}
	return Fate{Verdict: judge.Passed}
}

// inapplicable says why a scenario is not for the target, decided before
// it runs: another unkeyed policy, or a protocol version a step speaks that
// the target does not serve; "" when it applies.
func (e *Env) inapplicable(entry catalog.Entry) string {
	if policy := policyTag(entry.Tags); policy != "" && policy != e.Policy {
		return fmt.Sprintf("for gateways whose unkeyed policy is %q; the target's is %q", policy, e.Policy)
	}
	if e.Speaks == nil {
		return ""
	}
	for _, st := range entry.Steps {
		if m := speaksStep.FindStringSubmatch(st.Text); m != nil && !e.Speaks[m[1]] {
			return fmt.Sprintf("for gateways that serve MCP %s; negotiation found the target does not", m[1])
		}
	}
	return ""
}

// policyTag is the unkeyed policy a scenario is written for, "" for both.
func policyTag(tags []string) string {
	for _, t := range tags {
		if p, ok := strings.CutPrefix(t, "@unkeyed-"); ok {
			return p
		}
	}
	return ""
}

// absentFeature reports whether a missing capability is an optional feature
// the target does not have at all (so its scenarios are not applicable),
// rather than a gap of what the harness can see.
func (e *Env) absentFeature(capability string) bool {
	return optionalFeature[capability] && e.Control() == nil && e.Evident[capability] == ""
}

// situation is a step whose situation the steps can create only with a
// capability: without it they skip the scenario there (world.cannot).
type situation struct {
	re         *regexp.Regexp
	capability string
	// withoutFixtures: only a target without fixtures needs it (with them,
	// the control API makes the tool or the key).
	withoutFixtures bool
	// secondURL: only when the step names a URL after the first.
	secondURL bool
	// point: the step names a fault point, which the target must list too.
	point bool
	// action: the fault action the step arms, which the target must list
	// too ("" any the target has).
	action string
	// observed: the capability is a dispatch observer's, which the
	// target's read tool (effects) stands in for: the tool it counts is
	// the operator's own, and need not reach the probe.
	observed bool
}

// situations are the steps that call world.cannot, with the capability
// they need: a step added there without its line here makes doctor's
// prediction and the run disagree, which TestDoctorPredictsRun shows.
var situations = []situation{
	{re: regexp.MustCompile(` and drops the connection once the tool runs$`), capability: judge.CapUpstream},
	{re: regexp.MustCompile(`^the probe (?:stalls|sees|answers the next dispatch|refuses the next dispatch) `), capability: judge.CapUpstream},
	{re: regexp.MustCompile(` while the probe holds "[^"]*"$`), capability: judge.CapUpstream},
	{re: regexp.MustCompile(`^the (?:unkeyed retry window|stale-lock threshold) is \d+ seconds$`), capability: judge.CapSettings},
	{re: regexp.MustCompile(`^principal "[^"]*" is revoked$`), capability: judge.CapPrincipals},
	{re: regexp.MustCompile(`^the tool "[^"]*" is removed$`), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`^the tool "[^"]*" is re-priced to \d+ credits?$`), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`^the gateway clock (?:is frozen|advances) `), capability: judge.CapClock},
	{re: regexp.MustCompile(`^a (?:pause|failure) is armed at "([^"]*)"`), capability: judge.CapFaults, point: true},
	{re: regexp.MustCompile(`^a crash is armed at "([^"]*)"`), capability: judge.CapFaults, point: true, action: crashAction},
	{re: regexp.MustCompile(`^the gateway will drop the response after dispatching `), capability: judge.CapFaults},
	{re: regexp.MustCompile(`^\d+ clients split across every gateway URL `), capability: judge.CapTwoURLs},
	{re: regexp.MustCompile(` on the other gateway URL(?: until it is not in progress)?$`), capability: judge.CapTwoURLs},
	{re: regexp.MustCompile(`^client "[^"]*" talks to gateway URL (\d+)$`), capability: judge.CapTwoURLs, secondURL: true},
	{re: regexp.MustCompile(`^a wallet holding exactly \d+ credits and an API key$`), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`, more than the wallet holds$`), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`^an explicit permit `), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`^an upstream (?:multi-round tool|tool "[^"]*" that needs the client to declare sampling)`), capability: judge.CapFixtures},
	{re: regexp.MustCompile(`^an upstream tool "[^"]*" priced \d+ credits?$`), capability: judge.CapUpstream, withoutFixtures: true, observed: true},
	{re: regexp.MustCompile(`^a second upstream tool `), capability: judge.CapToolWriteOther, withoutFixtures: true},
	{re: regexp.MustCompile(`^an upstream read-only tool `), capability: judge.CapToolReadOnly, withoutFixtures: true},
	{re: regexp.MustCompile(`^an upstream approval-gated tool `), capability: judge.CapToolApproval, withoutFixtures: true},
	{re: regexp.MustCompile(`^client "[^"]*" (?:acts as principal "[^"]*"|presents a forged principal token)$`), capability: judge.CapPrincipalTokens},
	{re: regexp.MustCompile(`^client "[^"]*" uses another API key of the same wallet$`), capability: judge.CapSecondKey, withoutFixtures: true},
	{re: regexp.MustCompile(`^client "[^"]*" uses an API key of another wallet$`), capability: judge.CapOtherWallet, withoutFixtures: true},
}

// situationNeeds is the capability a step's situation needs on this
// target, "" when it needs none, and whether the target meets it.
func (e *Env) situationNeeds(text string) (capability string, met bool) {
	for _, s := range situations {
		m := s.re.FindStringSubmatch(text)
		if m == nil || (s.withoutFixtures && e.fixtures()) {
			continue
		}
		if s.secondURL {
			if n, err := strconv.Atoi(m[1]); err != nil || n < 2 {
				continue
			}
		}
		if s.observed {
			return s.capability, e.observes(s.capability)
		}
		return s.capability, e.Caps[s.capability] && (!s.point || e.HasFaultPoint(m[1])) && (s.action == "" || e.HasFaultAction(s.action))
	}
	return "", true
}

// HasFaultPoint: the target's control API lists point among its fault
// points, or lists none (then every point is taken to be there, and an
// unknown one is the control API's refusal to arm it).
func (e *Env) HasFaultPoint(point string) bool {
	return len(e.FaultPoints) == 0 || slices.Contains(e.FaultPoints, point)
}
