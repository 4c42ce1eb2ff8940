// Package controlapi is the JSON of the conformance control API
// (docs/control-api.md): every request and answer body, defined once for
// the harness's client (drivers/control) and for the reference gateway's
// server (reference/control), so the two cannot drift apart. It depends on
// the standard library only, so a gateway written in Go may use it too.
//
// Requests keep what the server must tell apart: a pointer field is one
// the client may leave out (the server then keeps or derives the value),
// and times and durations a server parses itself are strings, so it can
// say which field was wrong.
package controlapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Version is the control API's name in the capabilities answer.
const Version = "mcpconform/1"

// Capability names of GET /control/capabilities.
const (
	CapFixtures    = "fixtures"
	CapLedger      = "ledger"
	CapDispatchLog = "dispatch_log"
	CapClock       = "clock"
	CapFaults      = "faults"
	CapPrincipals  = "principals"
	CapUpstream    = "upstream"
	CapLocks       = "locks"
	CapSettings    = "settings"
	CapServers     = "servers"
)

// Fault actions a gateway may list in fault_actions (docs/control-api.md,
// Faults): FaultCrash kills the gateway process at the point, as kill -9.
const (
	FaultPause        = "pause"
	FaultFail         = "fail"
	FaultDropResponse = "drop_response"
	FaultCrash        = "crash"
)

// Error is every error answer; Fault is set on an await that timed out.
type Error struct {
	Error  string      `json:"error"`
	Reason string      `json:"reason"`
	Fault  *FaultState `json:"fault,omitempty"`
}

// Capabilities is the answer of GET /control/capabilities.
type Capabilities struct {
	ControlAPI   string   `json:"control_api"`
	Capabilities []string `json:"capabilities"`
	FaultPoints  []string `json:"fault_points"`
	FaultActions []string `json:"fault_actions"`
	Settings     Settings `json:"settings"`
	Store        string   `json:"store"`
	Bugs         []string `json:"bugs"`
}

// Has reports whether the gateway offers capability name.
func (c *Capabilities) Has(name string) bool { return slices.Contains(c.Capabilities, name) }

// Settings is the gateway's effective settings, in seconds (fractions
// allowed).
type Settings struct {
	WindowSeconds          float64  `json:"window_seconds"`
	PermitTTLSeconds       float64  `json:"permit_ttl_seconds"`
	EffectiveWindowSeconds float64  `json:"effective_window_seconds"`
	StaleLockSeconds       float64  `json:"stale_lock_seconds"`
	LockTimeout            Duration `json:"lock_timeout"`
	// RetentionSeconds is how long a finished operation's record is kept
	// after its last write (docs/wire.md, Retention); 0 when the gateway
	// does not say.
	RetentionSeconds float64 `json:"retention_seconds,omitempty"`
}

// SettingsPatch is PUT /control/settings: nil fields stay.
type SettingsPatch struct {
	WindowSeconds    *float64 `json:"window_seconds,omitempty"`
	PermitTTLSeconds *float64 `json:"permit_ttl_seconds,omitempty"`
	StaleLockSeconds *float64 `json:"stale_lock_seconds,omitempty"`
	RetentionSeconds *float64 `json:"retention_seconds,omitempty"`
}

// NewWallet is POST /control/wallets.
type NewWallet struct {
	Balance int64 `json:"balance"`
}

// Wallet is a wallet and its balance.
type Wallet struct {
	WalletID string `json:"wallet_id"`
	Balance  int64  `json:"balance"`
}

// Credit is POST /control/wallets/{id}/credit.
type Credit struct {
	Amount int64 `json:"amount"`
}

// NewKey is POST /control/keys.
type NewKey struct {
	WalletID string `json:"wallet_id"`
}

// Key is an API key; APIKey is the secret, returned once.
type Key struct {
	KeyID    string `json:"key_id"`
	APIKey   string `json:"api_key"`
	WalletID string `json:"wallet_id"`
}

// Trust is POST /control/trust: an identity provider whose principal
// tokens the gateway accepts.
type Trust struct {
	Provider string `json:"provider"`
	Issuer   string `json:"issuer"`
	JWKSURL  string `json:"jwks_url"`
	Audience string `json:"audience"`
}

// Principal is POST /control/principals; empty Tools entitles it to every
// tool.
type Principal struct {
	Provider string   `json:"provider"`
	Issuer   string   `json:"issuer"`
	Subject  string   `json:"subject"`
	Tools    []string `json:"tools"`
}

// PrincipalRef is the answer of POST /control/principals.
type PrincipalRef struct {
	PrincipalID string `json:"principal_id"`
}

// Tool is POST /control/tools. Fields left out keep the tool's current
// value (a local tool's built-in one if it was never changed); an upstream
// tool's price defaults to 1 and its upstream_tool to its name.
type Tool struct {
	Name         string  `json:"name"`
	Description  *string `json:"description,omitempty"`
	Price        *int64  `json:"price,omitempty"`
	ReadOnly     *bool   `json:"read_only,omitempty"`
	Approval     *bool   `json:"approval,omitempty"`
	UpstreamURL  string  `json:"upstream_url,omitempty"`
	UpstreamTool string  `json:"upstream_tool,omitempty"`
	// LocalTool makes the tool an alias of a local tool, served by the
	// control API's loopback echo upstream.
	LocalTool string `json:"local_tool,omitempty"`
	// An upstream tool shows what the upstream's tools/list says of it;
	// these replace it (each a JSON object; annotations replace the
	// upstream's whole object).
	Title        *string         `json:"title,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// RegisteredTool is the answer of POST /control/tools: the stored fields.
type RegisteredTool struct {
	Name         string          `json:"name"`
	Price        int64           `json:"price"`
	ReadOnly     bool            `json:"read_only"`
	Approval     bool            `json:"approval"`
	UpstreamURL  string          `json:"upstream_url"`
	UpstreamTool string          `json:"upstream_tool"`
	LocalTool    string          `json:"local_tool,omitempty"`
	Overrides    json.RawMessage `json:"overrides,omitempty"`
}

// Server is POST /control/servers: an upstream MCP server registered whole.
type Server struct {
	Name     string           `json:"name"`
	URL      string           `json:"url"`
	Prefix   string           `json:"prefix"`
	Price    *int64           `json:"price,omitempty"`
	Prices   map[string]int64 `json:"prices,omitempty"`
	ReadOnly []string         `json:"read_only,omitempty"`
}

// RegisteredServer is the answer of POST /control/servers.
type RegisteredServer struct {
	Name   string       `json:"name"`
	URL    string       `json:"url"`
	Prefix string       `json:"prefix"`
	Tools  []ServerTool `json:"tools"`
}

// ServerTool is one tool a registered server brought.
type ServerTool struct {
	Name         string `json:"name"`
	Price        int64  `json:"price"`
	ReadOnly     bool   `json:"read_only"`
	UpstreamTool string `json:"upstream_tool"`
}

// PermitRequest is POST /control/permits. Budget left out is the tool's
// price; TTL (a Go duration) left out or "0s" is the permit TTL setting.
type PermitRequest struct {
	WalletID string `json:"wallet_id"`
	KeyID    string `json:"key_id"`
	Tool     string `json:"tool"`
	Budget   *int64 `json:"budget,omitempty"`
	TTL      string `json:"ttl,omitempty"`
}

// Permit is a granted permit.
type Permit struct {
	PermitID  string    `json:"permit_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Budget    int64     `json:"budget"`
}

// Ledger is the answer of GET /control/wallets/{id}/ledger.
type Ledger struct {
	Entries []LedgerEntry `json:"entries"`
}

// LedgerEntry is one ledger entry; Kind is credit, debit or refund.
type LedgerEntry struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Amount  int64     `json:"amount"`
	Receipt string    `json:"receipt"`
	Tool    string    `json:"tool"`
	At      time.Time `json:"at"`
}

// Dispatches is the answer of GET /control/dispatches.
type Dispatches struct {
	Dispatches []Dispatch `json:"dispatches"`
}

// Dispatch is one entry of the gateway's own dispatch log.
type Dispatch struct {
	ID          string    `json:"id"`
	Tool        string    `json:"tool"`
	WalletID    string    `json:"wallet_id"`
	Fingerprint string    `json:"fingerprint"`
	At          time.Time `json:"at"`
}

// Locks is the answer of GET /control/locks.
type Locks struct {
	Locks []Lock `json:"locks"`
}

// Lock is a lock row held for unkeyed calls.
type Lock struct {
	Identity   string    `json:"identity"`
	Owner      string    `json:"owner"`
	Fence      int64     `json:"fence"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// OperationUncertain is the state of an operation charged and in
// progress whose owner has been silent for the stale-lock threshold: a
// retry is answered outcome_unknown until it is settled.
const OperationUncertain = "uncertain"

// Operations is the answer of GET /control/operations?state=uncertain.
type Operations struct {
	Operations []Operation `json:"operations"`
}

// Operation is one keyed (or derived) operation as an operator settles it.
// State is "uncertain" in a listing; after a settlement, "completed" or
// "failed_refunded". Receipt and Charged are its debit's ("" and 0 for a
// free tool).
type Operation struct {
	Key            string    `json:"key"`
	State          string    `json:"state"`
	Kind           string    `json:"kind"`
	IdempotencyKey string    `json:"idempotency_key"`
	WalletID       string    `json:"wallet_id"`
	KeyID          string    `json:"key_id"`
	Tool           string    `json:"tool"`
	Receipt        string    `json:"receipt"`
	Charged        int64     `json:"charged"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// SettleRequest is POST /control/operations/{key}/settle: Outcome
// "completed" with Result (the CallToolResult every retry then gets), or
// "refunded" without one.
type SettleRequest struct {
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Clock is the gateway's clock.
type Clock struct {
	Now    time.Time `json:"now"`
	Frozen bool      `json:"frozen"`
}

// SetClock is PUT /control/clock: Now is an RFC 3339 time.
type SetClock struct {
	Now string `json:"now"`
}

// AdvanceClock is POST /control/clock/advance: By is a Go duration.
type AdvanceClock struct {
	By string `json:"by"`
}

// Fault is POST /control/faults: it arms a fault point.
type Fault struct {
	Point  string     `json:"point"`
	Action string     `json:"action"`
	Count  int        `json:"count,omitempty"`
	Match  FaultMatch `json:"match,omitzero"`
}

// FaultMatch filters which requests a fault hits.
type FaultMatch struct {
	Tool     string `json:"tool,omitempty"`
	WalletID string `json:"wallet_id,omitempty"`
}

// FaultState is a fault and its progress.
type FaultState struct {
	FaultID  string     `json:"fault_id"`
	Point    string     `json:"point"`
	Action   string     `json:"action"`
	Count    int        `json:"count"`
	Match    FaultMatch `json:"match"`
	Hits     int        `json:"hits"`
	Waiting  int        `json:"waiting"`
	Released bool       `json:"released"`
}

// Faults is the answer of GET /control/faults, oldest first.
type Faults struct {
	Faults []FaultState `json:"faults"`
}

// AwaitFault is POST /control/faults/{id}/await. Waiting left out is 1;
// Timeout (a Go duration) left out is 5 s.
type AwaitFault struct {
	Waiting *int   `json:"waiting,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// Duration is a Go duration written as its string ("130s"), as the control
// API writes durations.
type Duration time.Duration

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
