package gateway

import (
	"encoding/json"
	"time"

	"github.com/mcpconform/mcpconform/reference/canonical"
	"github.com/mcpconform/mcpconform/reference/store"
)

// IdentityForTest is the lock identity an unkeyed call of tool with args by c
// would have now, so tests can read its lock row and records.
func (g *Gateway) IdentityForTest(c Caller, tool string, args json.RawMessage) string {
	canon, err := canonical.JSON(args)
	if err != nil {
		panic(err)
	}
	cs := &callState{r: CallRequest{Caller: c}, tool: store.Tool{Name: tool}, canon: canon,
		set: g.Settings(), now: g.clock.Now(), principal: c.Principal.String(), principalKey: principalKey(c.Principal)}
	return g.derivedPlan(cs).identity
}

// WaitLateForTest waits for the late-debit bug's background debits and the
// replay-revalidates bug's background dispatches.
func (g *Gateway) WaitLateForTest() { g.late.Wait() }

// The bug switches' real-time lease is short in tests, which wait it out.
func init() { bugLease = 50 * time.Millisecond }

// BugLeaseForTest is the claim-lapses and finished-key-expires lease.
func BugLeaseForTest() time.Duration { return bugLease }
