package wire

import (
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessionsPerKey bounds the live 2025-11-25 sessions one API key
// holds in one gateway process. Each session lives in memory until a DELETE
// or its idle timeout, so without a bound one key could fill the process's
// memory with initializes; the bound is far above what a client opening a
// session per task needs.
const DefaultMaxSessionsPerKey = 1024

// sessionCount counts each API key's live sessions, and the initializes
// that may yet open one: a slot is reserved before the SDK sees the
// initialize, so two racing initializes cannot both take the last slot.
type sessionCount struct {
	mu sync.Mutex
	n  map[string]int // API key id -> sessions open or opening
}

// reserve takes a slot of key's, unless it holds max already.
func (c *sessionCount) reserve(key string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= max {
		return false
	}
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[key]++
	return true
}

// release gives a slot of key's back.
func (c *sessionCount) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key) // a key with no session costs nothing
	}
}

// live is how many slots key holds.
func (c *sessionCount) live(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// sessionSlot is an initialize's reserved slot: the session it opened
// keeps it until the session ends; an initialize that opened none gives it
// back when its request ends.
type sessionSlot struct {
	key     string
	claimed atomic.Bool
}

// settleSession is called once an initialize was answered. A session the
// middleware saw initialized holds its slot already. Any other gives it
// back: the SDK closes a session whose initialize failed (go-sdk #578),
// though it sent its id, so no session is left holding the slot.
func (h *handler) settleSession(slot *sessionSlot) {
	if slot.claimed.CompareAndSwap(false, true) {
		h.sessions.release(slot.key)
	}
}

// claimSession hands an initialize's slot to the session it opened, which
// gives it back once it ends (a DELETE, its idle timeout, the server's end).
func (h *handler) claimSession(req mcp.Request) {
	extra := req.GetExtra()
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if extra == nil || !ok || ss == nil {
		return
	}
	if st := h.state(extra.Header); st != nil && st.session != nil {
		h.holdSlot(st.session, ss)
	}
}

// holdSlot makes ss the holder of slot until ss ends.
func (h *handler) holdSlot(slot *sessionSlot, ss *mcp.ServerSession) {
	if !slot.claimed.CompareAndSwap(false, true) {
		return
	}
	key := slot.key
	go func() {
		_ = ss.Wait()
		h.sessions.release(key)
		if f := h.sessionEnded; f != nil {
			f(key)
		}
	}()
}
