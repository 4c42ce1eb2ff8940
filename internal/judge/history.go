// Package judge is the harness's judgement, kept apart from everything that
// gathers evidence or renders it: the history of what the harness saw (its
// calls and their answers, the probe's dispatches, the ledger, and what the
// harness changed about the target), a model of the retry contract of
// docs/wire.md that decides what the gateway was allowed to do at each point
// of that history, the checks it makes, and the one rule that turns checks
// into a scenario's verdict. It does no I/O and imports nothing of the
// harness: scenarios, explore, recheck and bundle verify all judge through
// it, so a harm is seen whether or not a scenario's author wrote its check.
package judge

import (
	"encoding/json"
	"slices"
	"time"
)

// Op is one history event, Jepsen style: a client's operation is recorded
// as invoke, then ok, fail or info (outcome unknown), with a value unique
// to it; effects (dispatches, ledger entries) and what the harness changed
// (clock, settings, revocations, faults) are events of their own.
type Op struct {
	Index   int             `json:"index"`
	Process string          `json:"process"` // the client lane, or "upstream", "ledger", "harness"
	Type    string          `json:"type"`    // invoke | ok | fail | info
	F       string          `json:"f"`       // e.g. "tools/call"
	Value   json.RawMessage `json:"value"`   // operation token, key, receipt, reason...
	Time    time.Time       `json:"time"`
	// Step is the index in the scenario's steps of the step that was running
	// when the event was recorded, so a check made by a step can be
	// recomputed from the events it saw; nil in files written before it
	// existed.
	Step *int `json:"step,omitempty"`
}

// Event types.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"
)

// The F of each kind of event.
const (
	// FCall is a client's tools/call: an invoke, then its outcome (ok with a
	// result, fail for a definite refusal, info when the outcome is unknown
	// or not final: a transport error, an in-progress answer).
	FCall = "tools/call"
	// FRaw is a raw body a client sent (a batch, malformed JSON, an
	// oversized call): its outcome is recorded like a call's.
	FRaw      = "raw"
	FDispatch = "dispatch" // Value: EffectValue with Token (and Tool)
	FDebit    = "debit"    // Value: EffectValue with Amount and Receipt
	FRefund   = "refund"
	// FEntry is a ledger entry of another kind than debit or refund (a fee,
	// say): the history shows every entry the scenario made.
	FEntry = "ledger-entry"
	// FLedgerRead is a read of a wallet (LedgerRead): what a ledger check
	// saw, or the scenario's last read, so ledger checks and the model's
	// ledger can be recomputed from the history alone.
	FLedgerRead = "ledger-read"
	// FTarget opens a scenario's history with what the harness knows of
	// the target (Facts), so the model judges from the history alone.
	FTarget = "target"
	// FEnv is a change the harness made to the target or the probe
	// (EnvValue): a clock move, a setting, a revocation, a removed tool, a
	// fault armed or released, a dispatch held or let go.
	FEnv = "env"
)

// Ledger entry kinds of the control API.
const (
	EntryDebit  = "debit"
	EntryRefund = "refund"
)

// CallValue is the value of a tools/call event. Token is the operation's
// probe token, which ties the call to its dispatches, and its receipt to
// its debits. Arguments are the call's as the scenario wrote them, without
// the key even where the wire carries it inside them (key placement
// argument): the operation's arguments, which the model compares.
type CallValue struct {
	Tool      string `json:"tool"`
	Key       string `json:"key,omitempty"`
	Token     string `json:"token,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Receipt   string `json:"receipt,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
	Status    int    `json:"status,omitempty"`
	// HTTPOnly: a refusal made in HTTP alone (a status the profile maps,
	// no JSON-RPC error), which has no data.retryable flag to judge.
	HTTPOnly bool `json:"http_only,omitempty"`
	// StatusRetryable: a JSON-RPC refusal without data.retryable whose HTTP
	// status the profile maps to idempotency_in_progress (the IETF draft's
	// 409): read as retryable, as that mapping says, like an HTTP-only one.
	StatusRetryable bool `json:"status_retryable,omitempty"`
	// RetryAfter is a refusal's Retry-After header, on every refusal that
	// carries one and every in-progress one ("" when it carries none), so
	// the retry-after check can be judged again; nil in a history written
	// before it was recorded.
	RetryAfter *string `json:"retry_after,omitempty"`
	Error      string  `json:"error,omitempty"`
	// Served is the token a result's structuredContent names: the probe
	// answers each dispatch with its own token, so a result naming another
	// operation's token is that operation's result served for this one.
	Served string `json:"served,omitempty"`
	// Means are the reasons of docs/wire.md a refusal means as the target's
	// profile maps them, when data.reason alone does not say (a vendor's
	// own code for idempotency_key_required): a check judged from the
	// history reads the meaning, not the spelling. Empty: data.reason is it.
	Means []string `json:"means,omitempty"`

	// Call is the index of the call's invoke event, on its outcome, so the
	// two pair up whatever else the client did meanwhile.
	Call *int `json:"call,omitempty"`
	// The call as the harness made it, on the invoke: the protocol version
	// it spoke, the gateway URL (an index into the target's URLs), who sent
	// it (the API key, named by the harness, and the wallet it charges),
	// the principal it acted as, an explicit permit, and the tool's role
	// and price as the harness set them up.
	Wire       string `json:"wire,omitempty"`
	URL        int    `json:"url,omitempty"`
	Credential string `json:"credential,omitempty"`
	Wallet     string `json:"wallet,omitempty"`
	Principal  string `json:"principal,omitempty"`
	Forged     bool   `json:"forged,omitempty"` // the principal token is signed by nobody the gateway trusts
	Permit     string `json:"permit,omitempty"`
	Role       string `json:"role,omitempty"`
	Price      *int64 `json:"price,omitempty"`
	// Dropped and Cancelled say the client gave up on purpose: it closed the
	// connection once the tool ran, or cancelled the call.
	Dropped   bool `json:"dropped,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
	// The result, on an ok: a digest of what a replay must return whole
	// (content, structuredContent, isError), its resultType, whether it has
	// the content list every version's schema requires, and whether it is a
	// 2026-07-28 input-required round rather than a final result.
	Digest string `json:"digest,omitempty"`
	// Replayed and Charged are what the receipt says beside its id, when
	// it says it: whether this result is a replay, and the credits charged
	// for the operation.
	Replayed *bool `json:"replayed,omitempty"`
	// IsError: the result is a tool error (isError true), which says the
	// tool ran but not that its effect was made.
	IsError       bool   `json:"is_error,omitempty"`
	Charged       *int64 `json:"charged,omitempty"`
	ResultType    string `json:"result_type,omitempty"`
	NoContent     bool   `json:"no_content,omitempty"`
	InputRequired bool   `json:"input_required,omitempty"`
}

// ReadRetryable is whether a refusal is read as retryable: its
// data.retryable, or, without one, what the profile's status mapping says;
// a refusal made in HTTP alone is retried when what it means is (in
// progress, the IETF draft's 409; a failed dispatch or response).
func (v CallValue) ReadRetryable() bool {
	return v.Retryable || v.StatusRetryable || (v.HTTPOnly && slices.ContainsFunc(v.Means, func(r string) bool { return retryableReasons[r] }))
}

// MeansReason reports whether a refusal means reason: one of its mapped meanings,
// or its data.reason when the profile maps none.
func (v CallValue) MeansReason(reason string) bool {
	if len(v.Means) > 0 {
		return slices.Contains(v.Means, reason)
	}
	return v.Reason == reason
}

// Meaning is the refusal's meaning under the profile: its one mapped
// meaning, else its data.reason.
func (v CallValue) Meaning() string {
	if len(v.Means) == 1 {
		return v.Means[0]
	}
	return v.Reason
}

// EffectValue is the value of a dispatch, debit or refund event, and of an
// entry in a ledger read.
type EffectValue struct {
	Token   string `json:"token,omitempty"`
	Amount  int64  `json:"amount,omitempty"`
	Receipt string `json:"receipt,omitempty"`
	Kind    string `json:"kind,omitempty"` // a ledger entry's kind, also one other than debit or refund
	Tool    string `json:"tool,omitempty"`
	// Wallet names the wallet of a ledger entry, as the calls name it.
	Wallet string `json:"wallet,omitempty"`
}

// LedgerRead is the value of a FLedgerRead event.
type LedgerRead struct {
	Baseline int64 `json:"baseline"` // the balance when the scenario began
	Balance  int64 `json:"balance"`
	// Entries are the entries the scenario made (the wallet's entries not
	// in its ledger when the scenario began), of every kind.
	Entries []EffectValue `json:"entries"`
	// Prices are the prices the scenario set or the profile declares, by
	// tool name on the target.
	Prices map[string]int64 `json:"prices,omitempty"`
	// EarlierPrices are the prices a tool had before the scenario re-priced
	// it, by tool name: a call made then was debited one of them.
	EarlierPrices map[string][]int64 `json:"earlier_prices,omitempty"`
	// Wallet names the wallet read, as the calls name it ("" the
	// scenario's own).
	Wallet string `json:"wallet,omitempty"`
	// Final marks the read the harness made once the scenario's effects
	// settled (not a check's own read).
	Final bool `json:"final,omitempty"`
}

// Delta is the balance change since the scenario began.
func (r LedgerRead) Delta() int64 { return r.Balance - r.Baseline }

// Facts are what the harness knows of the target when a history begins: its
// unkeyed policy and window, its stale-lock threshold and permit life (when
// a control API says them), the protocol versions it serves, and the
// capabilities that observe it.
type Facts struct {
	Policy string `json:"policy,omitempty"` // "derived" (default) or "refuse"
	// WindowSeconds is the effective unkeyed retry window, 0 when unknown.
	WindowSeconds    int64    `json:"window_seconds,omitempty"`
	StaleLockSeconds int64    `json:"stale_lock_seconds,omitempty"`
	PermitTTLSeconds int64    `json:"permit_ttl_seconds,omitempty"`
	RetentionSeconds int64    `json:"retention_seconds,omitempty"` // a finished record's life after its last write, 0 when unknown
	Wires            []string `json:"wires,omitempty"`
	Capabilities     []string `json:"capabilities,omitempty"`
	// ProbeAnswers: the run's wiring call of a write tool was answered
	// with a result carrying the probe's answer to its token, so this
	// target hands the tool's answer on, and a write call's result without
	// it is none the tool gave, whatever else the history holds.
	ProbeAnswers bool `json:"probe_answers,omitempty"`
}

// Has reports whether the facts list a capability.
func (f Facts) Has(capability string) bool { return slices.Contains(f.Capabilities, capability) }

// Environment changes, the Kind of an EnvValue.
const (
	EnvClock       = "clock"       // the gateway clock was set or moved: Now is its time after
	EnvSetting     = "setting"     // a setting changed: WindowSeconds / StaleLockSeconds
	EnvRevoke      = "revoke"      // Principal was revoked
	EnvRemoveTool  = "remove-tool" // Tool was removed
	EnvFault       = "fault"       // a fault was armed: Point, Action, Tool (and Wallet, when it meets one wallet's calls only)
	EnvRelease     = "release"     // the pause (or the fault of Wallet) at Point was released
	EnvHold        = "hold"        // the probe holds Token's dispatches
	EnvLetGo       = "let-go"      // the probe lets Token's dispatches go
	EnvWallet      = "wallet"      // a wallet the scenario uses: Wallet, Balance (when known)
	EnvTool        = "tool"        // a tool the scenario uses: Tool, Role, Price
	EnvCrash       = "crash"       // the gateway process serving Client's call was killed at Point (a crash fault for Tool): that call gets no answer and its holder never wakes
	EnvEntitlement = "entitlement" // Principal's entitlement to Tool changed: On
	// EnvUpstreamFail: the probe fails Token's next dispatch, Action says
	// how: "tool_error" (the tool runs and answers isError, a result like
	// any other) or "refuse" (a JSON-RPC error before the tool runs).
	EnvUpstreamFail = "upstream-fail"
	// EnvDecide: from here the harness retries every operation until it is
	// decided, so the model requires each to end decided (Options.Decided).
	EnvDecide = "retried-until-decided"
	// EnvWaiting: the call in flight of Client was seen waiting at the
	// pause at Point (the control API said so): it does nothing more until
	// that pause is released.
	EnvWaiting = "waiting"
	// EnvReceiptElsewhere: Receipt also answered another operation (Token)
	// in another scenario of the run (Elsewhere). A receipt names one
	// operation whatever scenario it is in, so a result carrying it for any
	// other is that operation's outcome, or a name the client cannot trust.
	EnvReceiptElsewhere = "receipt-elsewhere"
	// EnvPermit: an explicit permit (Permit, its id) was granted with a
	// budget of Budget credits.
	EnvPermit = "permit"
	// EnvSettle: an operator settled the uncertain operation of Token (in
	// Wallet) through the control API: Outcome "completed" (Receipt is the
	// settled result's; every later call of it replays that result) or
	// "refunded" (its debit, Receipt, given back; a later call runs it
	// afresh).
	EnvSettle = "settle"
	// EnvListed: the target's control API listed its uncertain operations
	// (charged, their owner silent for the stale-lock threshold); Receipts
	// are the receipts of those of Wallet's ("" the scenario's own).
	EnvListed = "listed-uncertain"
	// EnvUnread: the target's read tool (effects) could not give Token's
	// count (it failed, or never settled: Action says why), so the
	// history may lack some of its dispatches: a count below what the
	// answers prove is not observed, never a lost outcome. The probe is the
	// harness's own: its failure is the harness's error, never this.
	EnvUnread = "unread"
)

// Settlement outcomes of EnvSettle (docs/control-api.md, Operations).
const (
	SettleCompleted = "completed"
	SettleRefunded  = "refunded"
)

// EnvValue is the value of a FEnv event.
type EnvValue struct {
	Kind             string     `json:"kind"`
	Now              *time.Time `json:"now,omitempty"` // the gateway clock after a clock change
	Frozen           bool       `json:"frozen,omitempty"`
	WindowSeconds    *int64     `json:"window_seconds,omitempty"`
	StaleLockSeconds *int64     `json:"stale_lock_seconds,omitempty"`
	RetentionSeconds *int64     `json:"retention_seconds,omitempty"` // EnvSetting's retention of finished records
	Principal        string     `json:"principal,omitempty"`
	Tool             string     `json:"tool,omitempty"`
	Role             string     `json:"role,omitempty"`
	Price            *int64     `json:"price,omitempty"`
	Point            string     `json:"point,omitempty"`
	Action           string     `json:"action,omitempty"`
	Token            string     `json:"token,omitempty"`
	Wallet           string     `json:"wallet,omitempty"`
	Balance          *int64     `json:"balance,omitempty"`
	On               bool       `json:"on,omitempty"`
	Client           string     `json:"client,omitempty"`    // EnvWaiting's and EnvSettle's client, as the calls' process names it
	Receipt          string     `json:"receipt,omitempty"`   // EnvReceiptElsewhere's receipt
	Elsewhere        string     `json:"elsewhere,omitempty"` // EnvReceiptElsewhere's scenario
	Permit           string     `json:"permit,omitempty"`    // EnvPermit's permit id
	Budget           *int64     `json:"budget,omitempty"`    // EnvPermit's budget
	Outcome          string     `json:"outcome,omitempty"`   // EnvSettle's outcome
	// Digest is EnvSettle's settled result as a replay must return it (the
	// digest CallValue.Digest holds of a result); "" for a refund.
	Digest string `json:"digest,omitempty"`
	// Receipts are EnvListed's: the listed operations' receipts.
	Receipts []string `json:"receipts,omitempty"`
}

// Dispatch is one call the upstream probe received.
type Dispatch struct {
	Token string    `json:"token"`
	Tool  string    `json:"tool"`
	At    time.Time `json:"at"`
}

// LedgerEntry mirrors the control API's ledger entry.
type LedgerEntry struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Amount  int64     `json:"amount"`
	Receipt string    `json:"receipt,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	At      time.Time `json:"at"`
}

// MustJSON marshals a history value; a value that cannot be marshalled
// becomes its error as a JSON string, so the event still says something.
func MustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(err.Error())
	}
	return b
}
