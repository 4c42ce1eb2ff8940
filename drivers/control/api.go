package control

import (
	"context"
	"net/url"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// The JSON of the API is package controlapi's, shared with the reference
// gateway's server; these names keep the client's callers short.
type (
	Capabilities   = controlapi.Capabilities
	Settings       = controlapi.Settings
	SettingsPatch  = controlapi.SettingsPatch
	Wallet         = controlapi.Wallet
	Key            = controlapi.Key
	Trust          = controlapi.Trust
	Principal      = controlapi.Principal
	Tool           = controlapi.Tool
	RegisteredTool = controlapi.RegisteredTool
	PermitRequest  = controlapi.PermitRequest
	Permit         = controlapi.Permit
	Dispatch       = controlapi.Dispatch
	Lock           = controlapi.Lock
	Operation      = controlapi.Operation
	SettleRequest  = controlapi.SettleRequest
	Clock          = controlapi.Clock
	Fault          = controlapi.Fault
	FaultMatch     = controlapi.FaultMatch
	FaultState     = controlapi.FaultState
	Duration       = controlapi.Duration
)

// Capability names of GET /control/capabilities.
const (
	CapFixtures    = controlapi.CapFixtures
	CapLedger      = controlapi.CapLedger
	CapDispatchLog = controlapi.CapDispatchLog
	CapClock       = controlapi.CapClock
	CapFaults      = controlapi.CapFaults
	CapPrincipals  = controlapi.CapPrincipals
	CapUpstream    = controlapi.CapUpstream
	CapLocks       = controlapi.CapLocks
	CapSettings    = controlapi.CapSettings
)

// Fault actions of fault_actions.
const (
	FaultPause        = controlapi.FaultPause
	FaultFail         = controlapi.FaultFail
	FaultDropResponse = controlapi.FaultDropResponse
	FaultCrash        = controlapi.FaultCrash
)

// Ptr is a helper for the optional fields of request literals.
func Ptr[T any](v T) *T { return &v }

// WholeSeconds is a setting as the harness's model counts it: whole
// seconds, a fraction dropped (so a sub-second window reads as none known).
func WholeSeconds(s float64) int64 { return int64(s) }

// Capabilities reads GET /capabilities.
func (c *Client) Capabilities(ctx context.Context) (*Capabilities, error) {
	return call[Capabilities](ctx, c, "GET", "/capabilities", nil, nil)
}

// CreateWallet makes a wallet with balance.
func (c *Client) CreateWallet(ctx context.Context, balance int64) (*Wallet, error) {
	return call[Wallet](ctx, c, "POST", "/wallets", nil, controlapi.NewWallet{Balance: balance})
}

// Credit adds amount to a wallet and returns the new balance.
func (c *Client) Credit(ctx context.Context, walletID string, amount int64) (int64, error) {
	var out Wallet
	err := c.do(ctx, "POST", "/wallets/"+url.PathEscape(walletID)+"/credit", nil, controlapi.Credit{Amount: amount}, &out)
	return out.Balance, err
}

// CreateKey makes an API key on a wallet.
func (c *Client) CreateKey(ctx context.Context, walletID string) (*Key, error) {
	return call[Key](ctx, c, "POST", "/keys", nil, controlapi.NewKey{WalletID: walletID})
}

// Trust registers an identity provider.
func (c *Client) Trust(ctx context.Context, t Trust) error {
	return c.do(ctx, "POST", "/trust", nil, t, nil)
}

// CreatePrincipal registers a principal and returns its id.
func (c *Client) CreatePrincipal(ctx context.Context, p Principal) (string, error) {
	if p.Tools == nil {
		p.Tools = []string{} // the contract shows [], not null
	}
	var out controlapi.PrincipalRef
	return out.PrincipalID, c.do(ctx, "POST", "/principals", nil, p, &out)
}

// Revoke revokes a principal.
func (c *Client) Revoke(ctx context.Context, principalID string) error {
	return c.do(ctx, "POST", "/principals/"+url.PathEscape(principalID)+"/revoke", nil, nil, nil)
}

// CreateTool registers a tool and returns its name.
func (c *Client) CreateTool(ctx context.Context, t Tool) (string, error) {
	var out RegisteredTool
	return out.Name, c.do(ctx, "POST", "/tools", nil, t, &out)
}

// DeleteTool removes a tool.
func (c *Client) DeleteTool(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/tools/"+url.PathEscape(name), nil, nil, nil)
}

// CreatePermit grants an explicit permit.
func (c *Client) CreatePermit(ctx context.Context, p PermitRequest) (*Permit, error) {
	return call[Permit](ctx, c, "POST", "/permits", nil, p)
}

// Wallet reads a wallet's balance.
func (c *Client) Wallet(ctx context.Context, walletID string) (*Wallet, error) {
	return call[Wallet](ctx, c, "GET", "/wallets/"+url.PathEscape(walletID), nil, nil)
}

// Ledger reads a wallet's ledger entries.
func (c *Client) Ledger(ctx context.Context, walletID string) ([]judge.LedgerEntry, error) {
	var out controlapi.Ledger
	if err := c.do(ctx, "GET", "/wallets/"+url.PathEscape(walletID)+"/ledger", nil, nil, &out); err != nil {
		return nil, err
	}
	entries := make([]judge.LedgerEntry, len(out.Entries))
	for i, e := range out.Entries {
		entries[i] = judge.LedgerEntry(e)
	}
	return entries, nil
}

// Snapshot reads balance and ledger together, for a scenario's
// LedgerBefore and LedgerAfter.
func (c *Client) Snapshot(ctx context.Context, walletID string) (*reports.Ledger, error) {
	w, err := c.Wallet(ctx, walletID)
	if err != nil {
		return nil, err
	}
	entries, err := c.Ledger(ctx, walletID)
	if err != nil {
		return nil, err
	}
	return &reports.Ledger{WalletID: walletID, Balance: w.Balance, Entries: entries}, nil
}

// Dispatches reads the gateway's dispatch log; empty filters are left out.
func (c *Client) Dispatches(ctx context.Context, tool, walletID string) ([]Dispatch, error) {
	var out controlapi.Dispatches
	q := url.Values{"tool": {tool}, "wallet_id": {walletID}}
	return out.Dispatches, c.do(ctx, "GET", "/dispatches", q, nil, &out)
}

// Locks reads the lock rows held for a wallet and tool.
func (c *Client) Locks(ctx context.Context, tool, walletID string) ([]Lock, error) {
	var out controlapi.Locks
	q := url.Values{"tool": {tool}, "wallet_id": {walletID}}
	return out.Locks, c.do(ctx, "GET", "/locks", q, nil, &out)
}

// UncertainOperations lists the operations a retry is answered
// outcome_unknown for: charged, in progress, their owner silent for the
// stale-lock threshold.
func (c *Client) UncertainOperations(ctx context.Context) ([]Operation, error) {
	var out controlapi.Operations
	q := url.Values{"state": {controlapi.OperationUncertain}}
	return out.Operations, c.do(ctx, "GET", "/operations", q, nil, &out)
}

// SettleOperation decides an uncertain operation: "completed" with the
// CallToolResult every retry then replays, or "refunded" (no result) so the
// debit is given back and the next retry runs it afresh.
func (c *Client) SettleOperation(ctx context.Context, key string, in SettleRequest) (*Operation, error) {
	return call[Operation](ctx, c, "POST", "/operations/"+url.PathEscape(key)+"/settle", nil, in)
}

// Clock reads the gateway clock.
func (c *Client) Clock(ctx context.Context) (*Clock, error) {
	return call[Clock](ctx, c, "GET", "/clock", nil, nil)
}

// SetClock freezes the gateway clock at now.
func (c *Client) SetClock(ctx context.Context, now time.Time) (*Clock, error) {
	in := controlapi.SetClock{Now: now.UTC().Format(time.RFC3339Nano)}
	return call[Clock](ctx, c, "PUT", "/clock", nil, in)
}

// AdvanceClock moves the frozen clock by d.
func (c *Client) AdvanceClock(ctx context.Context, d time.Duration) (*Clock, error) {
	return call[Clock](ctx, c, "POST", "/clock/advance", nil, controlapi.AdvanceClock{By: d.String()})
}

// ResetClock returns the gateway to real time.
func (c *Client) ResetClock(ctx context.Context) error {
	return c.do(ctx, "DELETE", "/clock", nil, nil, nil)
}

// PutSettings changes settings and returns the effective ones.
func (c *Client) PutSettings(ctx context.Context, p SettingsPatch) (*Settings, error) {
	return call[Settings](ctx, c, "PUT", "/settings", nil, p)
}

// ResetSettings restores the start-up settings.
func (c *Client) ResetSettings(ctx context.Context) error {
	return c.do(ctx, "DELETE", "/settings", nil, nil, nil)
}

// ArmFault arms a fault and returns its id.
func (c *Client) ArmFault(ctx context.Context, f Fault) (string, error) {
	var out FaultState
	return out.FaultID, c.do(ctx, "POST", "/faults", nil, f, &out)
}

// FaultState reads a fault's progress.
func (c *Client) FaultState(ctx context.Context, id string) (*FaultState, error) {
	return call[FaultState](ctx, c, "GET", "/faults/"+url.PathEscape(id), nil, nil)
}

// AwaitFault blocks (server side, at most timeout) until waiting requests
// wait at the fault point; the refusal reason "await_timeout" says they
// did not arrive in time.
func (c *Client) AwaitFault(ctx context.Context, id string, waiting int, timeout time.Duration) (*FaultState, error) {
	in := controlapi.AwaitFault{Waiting: &waiting, Timeout: timeout.String()}
	return call[FaultState](ctx, c, "POST", "/faults/"+url.PathEscape(id)+"/await", nil, in)
}

// ReleaseFault lets every waiting request continue and disarms the fault.
func (c *Client) ReleaseFault(ctx context.Context, id string) (*FaultState, error) {
	return call[FaultState](ctx, c, "POST", "/faults/"+url.PathEscape(id)+"/release", nil, nil)
}

// ResetFaults releases and disarms every fault.
func (c *Client) ResetFaults(ctx context.Context) error {
	return c.do(ctx, "DELETE", "/faults", nil, nil, nil)
}

// call is do for answers decoded into a *T, nil on error.
func call[T any](ctx context.Context, c *Client, method, path string, q url.Values, in any) (*T, error) {
	var out T
	if err := c.do(ctx, method, path, q, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
