// Package steps holds the godog step definitions. They talk to a target only
// through drivers/ (the MCP wire, the control API, the upstream probe and the
// identity provider): nothing here may reach into reference/ internals, so the
// reference gateway is tested exactly as a vendor's.
//
// A Then step records checks; each names the capability that observes it.
// When the target lacks that capability the check is recorded as not
// observed and the scenario goes on, so everything the target does let the
// harness see is still judged. A Given or When step that cannot create its
// situation at all (no clock to move, no fault point) skips the scenario,
// naming the capability that would have let it run.
package steps

import (
	"context"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

// Unkeyed policies a target may declare.
const (
	PolicyDerived = "derived" // unkeyed mutating calls get a derived key within a window
	PolicyRefuse  = "refuse"  // unkeyed mutating calls are refused before dispatch
)

// Upstream is the harness's probe as the steps use it: in this process or
// another's (drivers/probe implements it both ways).
type Upstream interface {
	URL() string
	Count(ctx context.Context, token string) (int, error)
	Dispatches(ctx context.Context, tokenPrefix string) ([]reports.Dispatch, error)
	WaitFor(ctx context.Context, token string, n int) error
	Stall(ctx context.Context, token string) error
	Unstall(ctx context.Context, token string) error
	Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error
}

// Env is what the runner hands the steps: one target and the harness-owned
// peers, shared by every scenario of a run (scenarios run one at a time).
type Env struct {
	URLs     []string
	Profile  *target.Profile
	Controls []*control.Client // one per URL; empty when the target has no control API
	Probe    Upstream
	IdP      *idp.IdP
	// Caps are the capabilities the target offers (reports.Cap*).
	Caps     map[string]bool
	Settings control.Settings // as the target advertised them
	Catalog  map[string]catalog.Entry
	Seed     int64
	// Speaks are the MCP versions the target serves, as the preflight found.
	Speaks map[string]bool
	// Policy is the target's unkeyed policy (PolicyDerived or PolicyRefuse).
	Policy string
	// RunID prefixes every probe token of the run, so runs sharing one probe
	// never count each other's dispatches.
	RunID string
	// MaxConcurrency caps the clients of one concurrent step (--concurrency).
	MaxConcurrency int
	// CallTimeout bounds one call of a step.
	CallTimeout time.Duration
	// Settle is how long the probe must stay quiet before a scenario's
	// dispatches are final (a late duplicate dispatch is then seen).
	Settle time.Duration
	// OnResult, when set, hears of each scenario as it finishes.
	OnResult func(reports.Scenario)

	mu      sync.Mutex
	results []reports.Scenario
	trusted bool
}

// Control is the first URL's control client, or nil.
func (e *Env) Control() *control.Client {
	if len(e.Controls) == 0 {
		return nil
	}
	return e.Controls[0]
}

// Results returns the evidence of every scenario run so far.
func (e *Env) Results() []reports.Scenario {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]reports.Scenario(nil), e.results...)
}

func (e *Env) addResult(s reports.Scenario) {
	e.mu.Lock()
	e.results = append(e.results, s)
	e.mu.Unlock()
	if e.OnResult != nil {
		e.OnResult(s)
	}
}

// newWire makes a client for the URL at index i, set up as the profile says.
func (e *Env) newWire(i int) *wire.Client {
	return e.Profile.Client(e.URLs[i%len(e.URLs)])
}

// fixtures reports whether the target makes wallets, keys and tools on
// demand (a control API with fixtures); otherwise the profile's do.
func (e *Env) fixtures() bool { return e.Caps[reports.CapFixtures] && e.Control() != nil }
