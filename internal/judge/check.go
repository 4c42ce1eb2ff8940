package judge

// Check states: a check is held, violated, or not observed because the
// target lacks the capability that would observe it.
const (
	Held        = "held"
	Violated    = "violated"
	NotObserved = "not-observed"
)

// Capabilities a check observes with or a situation needs. Those of the
// wire level come from the harness itself or the profile (the operator's
// tools, keys and trust); the others need a control API.
const (
	CapWire     = "wire"     // the MCP endpoint itself
	CapUpstream = "upstream" // the target's tools reach the harness probe
	// CapEffects: the target has no upstream for the probe (its write tool
	// is the side effect), but its own read tool shows each write's
	// effects by token (profile effects): the dispatch checks are made by
	// calling it, so they rest on what the target reports of itself.
	CapEffects         = "effects"
	CapPrincipalTokens = "principal-tokens" // the harness can present tokens of distinct principals
	CapSecondKey       = "second-key"       // a second API key of the same wallet
	CapOtherWallet     = "other-wallet"     // an API key of another wallet
	CapToolWriteOther  = "tool-write-other" // a second mutating tool at the probe
	CapToolReadOnly    = "tool-read-only"   // a metered read-only tool at the probe
	CapToolApproval    = "tool-approval"    // an approval-gated tool at the probe
	CapLedger          = "ledger"
	CapFixtures        = "fixtures" // wallets, keys, tools and permits made on demand
	CapClock           = "clock"
	CapFaults          = "faults"
	CapSettings        = "settings"
	CapPrincipals      = "principals" // principals registered and revoked on demand
	CapTwoURLs         = "two-urls"
)

// Harm is what a violated check means for the gateway's users, in the
// order a failure's headline picks them: the most harmful first.
type Harm string

const (
	HarmDoubleDispatch Harm = "double-dispatch" // the tool ran more often than the operations allow
	HarmDoubleCharge   Harm = "double-charge"   // an operation was charged more than once
	HarmWrongAmount    Harm = "wrong-amount"    // a charge of the wrong amount, a fee, a charge for nothing, a missing charge
	// HarmCrossScope: one caller's stored result reached another (another
	// API key, wallet, principal, tool), or a revoked principal.
	HarmCrossScope Harm = "cross-scope-replay"
	// HarmLostOutcome: an operation's outcome was lost or altered: a replay
	// that is not the stored result, work done for a call the client was
	// told was refused, a result the tool never produced.
	HarmLostOutcome  Harm = "lost-outcome"
	HarmWrongRefusal Harm = "wrong-refusal"  // a refusal the contract does not allow there (or none where it requires one)
	HarmShape        Harm = "protocol-shape" // an answer its protocol version's schema does not allow
)

// Harms in headline order.
var Harms = []Harm{HarmDoubleDispatch, HarmDoubleCharge, HarmWrongAmount, HarmCrossScope, HarmLostOutcome, HarmWrongRefusal, HarmShape}

// Rank orders harms for a headline; a check without a harm ranks last.
func (h Harm) Rank() int {
	for i, x := range Harms {
		if x == h {
			return i
		}
	}
	return len(Harms)
}

// Check is one observation: held, violated, or not observed because the
// target lacks the capability that would observe it. Kind and Args are its
// structured identity, from which recheck recomputes it; Step is the text a
// reader sees, rendered from them, never parsed back.
type Check struct {
	Step string `json:"step"`
	// State is Held, Violated or NotObserved.
	State      string `json:"state,omitempty"`
	Capability string `json:"capability,omitempty"` // what observes it: upstream, ledger, wire...
	// StepIndex is the index in the scenario's steps of the step that made
	// it; -1 for the model's own checks, made once the scenario ended.
	StepIndex int    `json:"step_index"`
	Expected  string `json:"expected"`
	// Actual is what was observed; for a check not observed, why not.
	Actual string `json:"actual"`
	// Witness names the requests, events, dispatches and ledger entries the
	// check looked at, in this scenario's record.
	Witness *Witness `json:"witness,omitempty"`
	// Kind and Args identify the check (KindProbeCount with its token, say);
	// Harm is what its violation means.
	Kind string            `json:"kind,omitempty"`
	Args map[string]string `json:"args,omitempty"`
	Harm Harm              `json:"harm,omitempty"`
	// Model says the check is the model's, not a step's.
	Model bool `json:"model,omitempty"`
}

// Status is the check's state, also for files that recorded only "ok".
func (c Check) Status() string {
	if c.State != "" {
		return c.State
	}
	return Violated
}

// Arg is one of the check's arguments, "" when absent.
func (c Check) Arg(name string) string { return c.Args[name] }

// Witness names the smallest evidence in a scenario's own record that
// proves how a check came out, as Elle names the transactions of an
// anomaly: a reader (and recheck) finds each item in the evidence file.
type Witness struct {
	// Exchanges are indexes into the scenario's exchanges: the requests
	// whose answers the check judged.
	Exchanges []int `json:"exchanges,omitempty"`
	// Events are indexes into the scenario's history.
	Events []int `json:"events,omitempty"`
	// Dispatches are the upstream probe's dispatches the check counted.
	Dispatches []Dispatch `json:"dispatches,omitempty"`
	// Ledger are the ledger entries the check counted.
	Ledger []LedgerEntry `json:"ledger,omitempty"`
}

// IsEmpty reports whether the witness names nothing.
func (w *Witness) IsEmpty() bool {
	return w == nil || len(w.Exchanges) == 0 && len(w.Events) == 0 && len(w.Dispatches) == 0 && len(w.Ledger) == 0
}
