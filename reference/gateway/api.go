// Package gateway holds the reference gateway's rules for tools/call: keys,
// windows, locks and fences, permits, the ledger and replay authorisation.
// It knows nothing of HTTP or SQL: the wire layer authenticates and parses,
// the store persists, a Dispatcher runs the tool.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// PrincipalRef is a verified enterprise principal.
type PrincipalRef struct {
	Provider string
	Issuer   string
	Subject  string
}

// String is the form stored in records: "provider|issuer|subject".
func (p *PrincipalRef) String() string {
	if p == nil {
		return ""
	}
	return p.Provider + "|" + p.Issuer + "|" + p.Subject
}

// Caller is who the wire layer authenticated.
type Caller struct {
	WalletID  string
	APIKeyID  string
	Principal *PrincipalRef // nil without a principal token
	// ToolsVersion is the tool registry's version read with the API key
	// (store.APIKey.ToolsVersion); 0 when unknown. The call uses the
	// process's tool entries of that version (ToolMemo).
	ToolsVersion int64
}

// CallRequest is one tools/call, parsed and authenticated.
type CallRequest struct {
	Caller    Caller
	Tool      string
	Arguments json.RawMessage // a JSON object (the wire layer refuses anything else)
	ClientKey string          // explicit idempotency key, "" if none (already validated)
	PermitID  string          // explicit permit, "" if none
	// ClientDone is closed once the client has given up on the call (sent
	// notifications/cancelled, or closed its response stream); nil if the
	// caller cannot tell. The gateway runs the call to its end regardless:
	// only the cancel-forgets bug switch looks at it.
	ClientDone <-chan struct{}
	// Stateless: the call came on the stateless 2026-07-28 wire. The rules
	// are the same on both wires: only a bug switch of one wire
	// (principal-unbound-stateless) looks at it.
	Stateless bool
}

// CallResponse is what the wire layer sends back.
type CallResponse struct {
	// Result is the whole CallToolResult JSON, _meta receipt included.
	Result json.RawMessage
	// Drop asks the wire layer to close the connection without answering
	// (the drop_response fault); the outcome is already stored.
	Drop bool
}

// ReceiptMetaKey is where a result carries its receipt in _meta.
const ReceiptMetaKey = "io.mcpconform/receipt"

// Receipt is the value under ReceiptMetaKey.
type Receipt struct {
	ID             string `json:"id"`
	Replayed       bool   `json:"replayed"`
	IdempotencyKey string `json:"idempotency_key"`
	Charged        int64  `json:"charged"`
}

// Refusal is every answer that is not a result: a JSON-RPC error with a stable
// data.reason. Its Code is the reference gateway's default for that reason.
type Refusal struct {
	Code      int64
	Reason    string
	Message   string
	Retryable bool
	Data      map[string]any // extra data fields, merged beside reason and retryable
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Reason, r.Message) }

// Reasons and their default codes (docs/wire.md).
const (
	ReasonKeyRequired      = "idempotency_key_required"
	ReasonInProgress       = "idempotency_in_progress"
	ReasonKeyReused        = "idempotency_key_reused"
	ReasonKeyInvalid       = "idempotency_key_invalid"
	ReasonUnauthenticated  = "unauthenticated"
	ReasonPrincipalInvalid = "principal_invalid"
	ReasonPrincipalDenied  = "principal_denied"
	ReasonInsufficient     = "insufficient_funds"
	ReasonPermitInvalid    = "permit_invalid"
	ReasonPermitExhausted  = "permit_exhausted"
	ReasonPermitExpired    = "permit_expired"
	ReasonDispatchFailed   = "dispatch_failed"
	ReasonResponseFailed   = "response_failed"
	// ReasonOutcomeUnknown answers a retry of an operation that was charged
	// and whose owner has not been heard of for the stale-lock threshold: its
	// tool may or may not have run, so the gateway can neither replay nor run
	// it. Not retryable: only an operator's settlement (or the owner, should
	// it come back) decides it.
	ReasonOutcomeUnknown   = "outcome_unknown"
	ReasonUnknownTool      = "unknown_tool"
	ReasonInvalidArguments = "invalid_arguments"
	ReasonBatch            = "batch_not_supported"
	ReasonParse            = "parse_error"
	ReasonTooLarge         = "request_too_large"
	ReasonInternal         = "internal_error"
	// ReasonCapabilitiesMissing is an upstream's refusal of a call needing a
	// client capability the caller did not declare (MCP's -32021); nothing
	// ran. The wire layer answers it too, for its own SDK's refusals.
	ReasonCapabilitiesMissing = "client_capabilities_missing"
)

// jsonrpcCodes are the reasons JSON-RPC has a standard code for: the same
// in every code table.
var jsonrpcCodes = map[string]int64{
	ReasonKeyInvalid:       -32602,
	ReasonUnknownTool:      -32602,
	ReasonInvalidArguments: -32602,
	ReasonBatch:            -32600,
	ReasonParse:            -32700,
	ReasonTooLarge:         -32600,
	ReasonInternal:         -32603,
	// MCP's own code, which a client acts on (it declares the capability).
	ReasonCapabilitiesMissing: -32021,
}

// withJSONRPCCodes completes a code table with jsonrpcCodes.
func withJSONRPCCodes(own map[string]int64) map[string]int64 {
	for r, c := range jsonrpcCodes {
		own[r] = c
	}
	return own
}

// Codes maps a reason to its default JSON-RPC code (docs/wire.md says why
// these): the standard codes where JSON-RPC has one, else a code outside the
// band JSON-RPC reserves (-32768..-32000), where no MCP SDK keeps a transport
// error of its own, ending in the HTTP status a REST gateway would answer.
var Codes = withJSONRPCCodes(map[string]int64{
	ReasonKeyRequired:      -31428,
	ReasonInProgress:       -31409,
	ReasonKeyReused:        -31422,
	ReasonUnauthenticated:  -31401,
	ReasonPrincipalInvalid: -31401,
	ReasonPrincipalDenied:  -31403,
	ReasonInsufficient:     -31402,
	ReasonPermitInvalid:    -31412,
	ReasonPermitExhausted:  -31412,
	ReasonPermitExpired:    -31412,
	ReasonDispatchFailed:   -31502,
	ReasonResponseFailed:   -31500,
	ReasonOutcomeUnknown:   -31504, // a REST gateway's 504: its upstream's outcome is not known
})

// SeedCodes are the codes of the seed gateway (the SEL-498 review), for a
// vendor whose gateway answers with them: `mcpconform gateway --codes seed`.
// Several are transport errors of MCP SDKs (go-sdk reads -32003 and -32004
// as a closed connection, -32005 as a transport rejection; the TypeScript
// SDK -32001 as a request timeout), so a stock client may lose the reason.
var SeedCodes = withJSONRPCCodes(map[string]int64{
	ReasonKeyRequired:      -32003,
	ReasonInProgress:       -32005,
	ReasonKeyReused:        -32004,
	ReasonUnauthenticated:  -32001,
	ReasonPrincipalInvalid: -32001,
	ReasonPrincipalDenied:  -32001,
	ReasonInsufficient:     -32002,
	ReasonPermitInvalid:    -32006,
	ReasonPermitExhausted:  -32006,
	ReasonPermitExpired:    -32006,
	ReasonDispatchFailed:   -32007,
	ReasonResponseFailed:   -32008,
	ReasonOutcomeUnknown:   -32009,
})

// Code tables a gateway may answer with, by the name --codes takes.
const (
	CodesDefault = "default"
	CodesSeed    = "seed"
)

// CodeTable returns the code table of a --codes name ("" is the default).
func CodeTable(name string) (map[string]int64, error) {
	switch name {
	case "", CodesDefault:
		return Codes, nil
	case CodesSeed:
		return SeedCodes, nil
	}
	return nil, fmt.Errorf("code table %q: want %q or %q", name, CodesDefault, CodesSeed)
}

// Refuse builds a refusal with the default code; retryable only for the
// reasons a client may retry as they are.
func Refuse(reason, format string, args ...any) *Refusal {
	retry := reason == ReasonInProgress || reason == ReasonDispatchFailed || reason == ReasonResponseFailed
	return &Refusal{Code: Codes[reason], Reason: reason, Message: fmt.Sprintf(format, args...), Retryable: retry}
}

// DispatchRequest is one real run of a tool.
type DispatchRequest struct {
	Tool      store.Tool
	Arguments json.RawMessage
	WalletID  string
	RecordKey string
}

// Dispatcher runs tools: local ones in process, upstream ones over MCP.
// It returns the CallToolResult JSON (content, structuredContent, isError).
// An error means the tool could not be reached: nothing ran. An error that
// is (or wraps) a *Refusal is the answer the caller gets, after the refund,
// instead of dispatch_failed: an upstream's refusal the caller can act on.
type Dispatcher interface {
	Dispatch(ctx context.Context, r DispatchRequest) (json.RawMessage, error)
}

// Settings are the knobs the control API may change at run time.
type Settings struct {
	Window      time.Duration // MCP_UNKEYED_RETRY_WINDOW; 0 refuses unkeyed calls
	PermitTTL   time.Duration // auto-permit lifetime
	StaleLock   time.Duration // a lock older than this may be taken over
	LockTimeout time.Duration // store lock wait; informational here
	// Retention is how long a finished record (its key, fingerprint and
	// stored outcome) is kept after its last write; past it the record is
	// purged and the key names nothing. Never shorter than the effective
	// window, so no retry the window promises a replay finds it gone. A
	// record in progress, running or uncertain, is never purged.
	Retention time.Duration
}

// DefaultRetention keeps a finished record a day, as Stripe keeps an
// idempotency key: long past any client's retries, short enough that the
// store does not grow for ever.
const DefaultRetention = 24 * time.Hour

// EffectiveWindow is min(Window, PermitTTL): a retry later than the auto
// permit's life cannot replay, so the advertised window must not promise it.
func (s Settings) EffectiveWindow() time.Duration {
	if s.PermitTTL < s.Window {
		return s.PermitTTL
	}
	return s.Window
}

// DefaultSettings are the start-up values of the SEL-498 review.
func DefaultSettings() Settings {
	return Settings{Window: 300 * time.Second, PermitTTL: 120 * time.Second, StaleLock: 120 * time.Second, LockTimeout: 5 * time.Second,
		Retention: DefaultRetention}
}

// MaxSettingSeconds is the longest setting in seconds: a time.Duration counts
// nanoseconds in an int64, so anything longer (about 292 years) would wrap.
const MaxSettingSeconds = math.MaxInt64 / int64(time.Second)

// SettingDuration turns a setting given in seconds (fractions allowed) into a
// duration. What a duration cannot hold is refused, not converted: a float
// beyond int64 converts to whatever the platform makes of it (a negative
// window, on amd64), and a positive value under a nanosecond would become 0,
// which for the window means "refuse unkeyed calls", not "a short window".
func SettingDuration(name string, secs float64) (time.Duration, error) {
	switch {
	case math.IsNaN(secs) || secs < 0:
		return 0, fmt.Errorf("%s %v: must not be negative", name, secs)
	case secs > float64(MaxSettingSeconds):
		return 0, fmt.Errorf("%s %v: out of range, at most %d seconds (about 292 years)", name, secs, MaxSettingSeconds)
	case secs > 0 && secs < 1e-9:
		return 0, fmt.Errorf("%s %v: below the 1ns resolution (0 is a setting of its own)", name, secs)
	}
	return time.Duration(math.Round(secs * float64(time.Second))), nil
}

// CheckTimes refuses settings whose times, at the instant now, fall outside
// what a store keeps (store.TimeInRange): an auto permit minted now must
// expire before 2262, and the oldest record or lock a lookup reaches back
// to must not predate 1677. now itself must be in range.
func (s Settings) CheckTimes(now time.Time) error {
	last := store.MaxTime.Format(time.RFC3339)
	switch {
	case !store.TimeInRange(now):
		return fmt.Errorf("%w: the time %s is outside %s..%s", ErrTimeRange, now.Format(time.RFC3339Nano), store.MinTime.Format(time.RFC3339), last)
	case now.After(store.MaxTime.Add(-s.PermitTTL)):
		return fmt.Errorf("%w: permit ttl %v: a permit minted at %s would expire after %s, the last time a store keeps",
			ErrTimeRange, s.PermitTTL, now.Format(time.RFC3339Nano), last)
	case now.Before(store.MinTime.Add(max(s.Window, s.StaleLock))):
		return fmt.Errorf("%w: window %v or stale lock %v reaches back before %s from %s",
			ErrTimeRange, s.Window, s.StaleLock, store.MinTime.Format(time.RFC3339), now.Format(time.RFC3339Nano))
	}
	return nil
}

// ErrTimeRange is wrapped by every CheckTimes error.
var ErrTimeRange = errors.New("time out of the store's range")

// Validate refuses settings the gateway cannot honour.
func (s Settings) Validate() error {
	switch {
	case s.Window < 0:
		return fmt.Errorf("unkeyed retry window %v: must not be negative (0 turns derived keys off)", s.Window)
	case s.PermitTTL <= 0:
		return fmt.Errorf("permit ttl %v: must be positive", s.PermitTTL)
	case s.StaleLock <= 0:
		return fmt.Errorf("stale lock threshold %v: must be positive", s.StaleLock)
	case s.Retention <= 0:
		return fmt.Errorf("retention %v: must be positive", s.Retention)
	case s.Retention < s.EffectiveWindow():
		// A retry inside the window is promised a replay: a record purged
		// before the window ends would make it a second dispatch.
		return fmt.Errorf("retention %v: must not be shorter than the effective unkeyed retry window %v (min of window %v and permit ttl %v)",
			s.Retention, s.EffectiveWindow(), s.Window, s.PermitTTL)
	}
	return nil
}
