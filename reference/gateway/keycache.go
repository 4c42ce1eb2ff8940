package gateway

import (
	"sync"

	"github.com/mcpconform/mcpconform/reference/store"
)

// keyCacheSize bounds the API keys a gateway keeps in memory.
const keyCacheSize = 4096

// keyCache keeps API keys read from the store, so a call need not read its
// key again. It is correct across processes because a stored key never
// changes: the store can create a key and nothing else (no update, no
// delete, no revocation), and a key id stored once keeps its wallet and
// secret hash (ImportAPIKey refuses another). Only keys found are kept: a
// key another process creates is read from the store at its first use here.
// Whatever may change while a process runs, a tool, a principal, a
// wallet's balance, is read from the store on every call. A revocation of
// keys, if one is ever added, must come with this cache's end or a check
// against the store on every call.
type keyCache struct {
	mu sync.RWMutex
	m  map[string]store.APIKey
}

func (c *keyCache) get(id string) (store.APIKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.m[id]
	return k, ok
}

func (c *keyCache) put(k store.APIKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]store.APIKey)
	}
	if len(c.m) >= keyCacheSize {
		for id := range c.m { // full: make room by dropping any one
			delete(c.m, id)
			break
		}
	}
	c.m[k.ID] = k
}
