// Package steps holds the godog step definitions. They talk to a target only
// through drivers/ (the MCP wire, the control API, the upstream probe and the
// identity provider): nothing here may reach into reference/ internals, so the
// reference gateway is tested exactly as a vendor's.
package steps

import (
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

// Capabilities a scenario may need (its @needs-* tags).
const (
	CapUpstream   = "upstream"
	CapLedger     = "ledger"
	CapClock      = "clock"
	CapFaults     = "faults"
	CapPrincipals = "principals"
	CapSettings   = "settings"
	CapTwoURLs    = "two-urls"
)

// Env is what the runner hands the steps: one target and the harness-owned
// peers, shared by every scenario of a run (scenarios run one at a time).
type Env struct {
	URLs     []string
	Profile  *target.Profile
	Controls []*control.Client // one per URL; empty when the target has no control API
	Probe    *probe.Probe
	IdP      *idp.IdP
	Caps     map[string]bool
	Settings control.Settings // as the target advertised them
	Catalog  map[string]catalog.Entry
	Seed     int64
	// MaxConcurrency caps the clients of one concurrent step (--concurrency).
	MaxConcurrency int
	// CallTimeout bounds one call of a step.
	CallTimeout time.Duration

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
	defer e.mu.Unlock()
	e.results = append(e.results, s)
}

// newWire makes a client for the URL at index i, set up as the profile says.
func (e *Env) newWire(i int) *wire.Client {
	return e.Profile.Client(e.URLs[i%len(e.URLs)])
}
