package control

import (
	"context"
	"net/url"
	"slices"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

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
)

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

// Settings is the gateway's effective settings.
type Settings struct {
	WindowSeconds          int64    `json:"window_seconds"`
	PermitTTLSeconds       int64    `json:"permit_ttl_seconds"`
	EffectiveWindowSeconds int64    `json:"effective_window_seconds"`
	StaleLockSeconds       int64    `json:"stale_lock_seconds"`
	LockTimeout            Duration `json:"lock_timeout"`
}

// SettingsPatch names the settings to change; nil fields stay.
type SettingsPatch struct {
	WindowSeconds    *int64 `json:"window_seconds,omitempty"`
	PermitTTLSeconds *int64 `json:"permit_ttl_seconds,omitempty"`
	StaleLockSeconds *int64 `json:"stale_lock_seconds,omitempty"`
}

// Int64 is a helper for SettingsPatch literals.
func Int64(v int64) *int64 { return &v }

// Wallet is a wallet and its balance.
type Wallet struct {
	WalletID string `json:"wallet_id"`
	Balance  int64  `json:"balance"`
}

// Key is an API key; APIKey is the secret, returned once.
type Key struct {
	KeyID  string `json:"key_id"`
	APIKey string `json:"api_key"`
}

// Trust tells the gateway which identity provider to trust.
type Trust struct {
	Provider string `json:"provider"`
	Issuer   string `json:"issuer"`
	JWKSURL  string `json:"jwks_url"`
	Audience string `json:"audience"`
}

// Principal registers an enterprise principal; empty Tools entitles it to all.
type Principal struct {
	Provider string   `json:"provider"`
	Issuer   string   `json:"issuer"`
	Subject  string   `json:"subject"`
	Tools    []string `json:"tools"`
}

// Tool registers or re-prices a tool. Without UpstreamURL, Name must be a
// built-in local tool.
type Tool struct {
	Name         string `json:"name"`
	Price        int64  `json:"price"`
	ReadOnly     bool   `json:"read_only"`
	Approval     bool   `json:"approval"`
	UpstreamURL  string `json:"upstream_url,omitempty"`
	UpstreamTool string `json:"upstream_tool,omitempty"`
}

// PermitRequest asks for an explicit permit.
type PermitRequest struct {
	WalletID string   `json:"wallet_id"`
	KeyID    string   `json:"key_id"`
	Tool     string   `json:"tool"`
	Budget   int64    `json:"budget"`
	TTL      Duration `json:"ttl"`
}

// Permit is a granted permit.
type Permit struct {
	PermitID  string    `json:"permit_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Dispatch is one entry of the gateway's own dispatch log.
type Dispatch struct {
	ID          string    `json:"id"`
	Tool        string    `json:"tool"`
	WalletID    string    `json:"wallet_id"`
	Fingerprint string    `json:"fingerprint"`
	At          time.Time `json:"at"`
}

// Lock is a lock row held for unkeyed calls.
type Lock struct {
	Identity   string    `json:"identity"`
	Owner      string    `json:"owner"`
	Fence      int64     `json:"fence"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// Clock is the gateway's clock.
type Clock struct {
	Now    time.Time `json:"now"`
	Frozen bool      `json:"frozen"`
}

// Fault arms a fault point.
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

// FaultState is a fault's progress.
type FaultState struct {
	FaultID  string `json:"fault_id"`
	Point    string `json:"point"`
	Action   string `json:"action"`
	Hits     int    `json:"hits"`
	Waiting  int    `json:"waiting"`
	Released bool   `json:"released"`
}

// Capabilities reads GET /capabilities.
func (c *Client) Capabilities(ctx context.Context) (*Capabilities, error) {
	return call[Capabilities](ctx, c, "GET", "/capabilities", nil, nil)
}

// CreateWallet makes a wallet with balance.
func (c *Client) CreateWallet(ctx context.Context, balance int64) (*Wallet, error) {
	return call[Wallet](ctx, c, "POST", "/wallets", nil, map[string]int64{"balance": balance})
}

// Credit adds amount to a wallet and returns the new balance.
func (c *Client) Credit(ctx context.Context, walletID string, amount int64) (int64, error) {
	var out struct {
		Balance int64 `json:"balance"`
	}
	err := c.do(ctx, "POST", "/wallets/"+url.PathEscape(walletID)+"/credit", nil, map[string]int64{"amount": amount}, &out)
	return out.Balance, err
}

// CreateKey makes an API key on a wallet.
func (c *Client) CreateKey(ctx context.Context, walletID string) (*Key, error) {
	return call[Key](ctx, c, "POST", "/keys", nil, map[string]string{"wallet_id": walletID})
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
	var out struct {
		PrincipalID string `json:"principal_id"`
	}
	return out.PrincipalID, c.do(ctx, "POST", "/principals", nil, p, &out)
}

// Revoke revokes a principal.
func (c *Client) Revoke(ctx context.Context, principalID string) error {
	return c.do(ctx, "POST", "/principals/"+url.PathEscape(principalID)+"/revoke", nil, nil, nil)
}

// CreateTool registers a tool and returns its name.
func (c *Client) CreateTool(ctx context.Context, t Tool) (string, error) {
	var out struct {
		Name string `json:"name"`
	}
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
	var out struct {
		Entries []judge.LedgerEntry `json:"entries"`
	}
	return out.Entries, c.do(ctx, "GET", "/wallets/"+url.PathEscape(walletID)+"/ledger", nil, nil, &out)
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
	var out struct {
		Dispatches []Dispatch `json:"dispatches"`
	}
	q := url.Values{"tool": {tool}, "wallet_id": {walletID}}
	return out.Dispatches, c.do(ctx, "GET", "/dispatches", q, nil, &out)
}

// Locks reads the lock rows held for a wallet and tool.
func (c *Client) Locks(ctx context.Context, tool, walletID string) ([]Lock, error) {
	var out struct {
		Locks []Lock `json:"locks"`
	}
	q := url.Values{"tool": {tool}, "wallet_id": {walletID}}
	return out.Locks, c.do(ctx, "GET", "/locks", q, nil, &out)
}

// Clock reads the gateway clock.
func (c *Client) Clock(ctx context.Context) (*Clock, error) {
	return call[Clock](ctx, c, "GET", "/clock", nil, nil)
}

// SetClock freezes the gateway clock at now.
func (c *Client) SetClock(ctx context.Context, now time.Time) (*Clock, error) {
	in := map[string]string{"now": now.UTC().Format(time.RFC3339Nano)}
	return call[Clock](ctx, c, "PUT", "/clock", nil, in)
}

// AdvanceClock moves the frozen clock by d.
func (c *Client) AdvanceClock(ctx context.Context, d time.Duration) (*Clock, error) {
	return call[Clock](ctx, c, "POST", "/clock/advance", nil, map[string]Duration{"by": Duration(d)})
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
	var out struct {
		FaultID string `json:"fault_id"`
	}
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
	in := struct {
		Waiting int      `json:"waiting"`
		Timeout Duration `json:"timeout"`
	}{waiting, Duration(timeout)}
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
