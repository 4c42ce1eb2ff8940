// Package toolmemo lets the reads of one request share one store read of
// the tool it names, and requests share the entries a process read before.
//
// A 2026-07-28 tools/call needs its tool twice: the wire's Mcp-Param header
// check lists it, then the gateway core meters it. A Memo made for the
// request and carried in its context makes the second read reuse the first.
//
// Across requests, a Cache keeps each tool entry with the tool registry's
// version it was read at (store.VersionedTool). A request's Memo knows the
// version its API key was read with (store.APIKey.ToolsVersion, the same
// statement): an entry of that version is the registry as it was at the
// request's own authentication, so it is used with no read of its own.
// Every tool write in any process raises the version, so a request after it
// never uses an entry read before it: correct across processes without a
// message between them, at the cost of a read per tool after each change.
package toolmemo

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpconform/mcpconform/reference/store"
)

// Reader is the store read a Memo shares.
type Reader interface {
	VersionedTool(ctx context.Context, name string) (store.Tool, int64, error)
}

// Memo is one request's read of a tool. The zero value is ready and keeps
// nothing past its request; a nil *Memo reads through to the store every
// time.
type Memo struct {
	cache   *Cache // nil: no entries shared with other requests
	version int64  // the registry's version at the request's authentication; 0 unknown

	mu   sync.Mutex
	read bool
	name string
	tool store.Tool
	err  error // nil, or a store.ErrNotFound: an unknown tool is read once too
}

// Cache is a process's tool entries, each with the registry version it was
// read at. Only tools found are kept (removed ones included): the registry
// bounds its size, which names clients make up cannot grow. Safe for
// concurrent use; a nil *Cache keeps nothing.
type Cache struct {
	mu      sync.RWMutex
	entries map[string]entry
	// AnyVersion uses an entry whatever version it was read at: the
	// tool-entries-unversioned bug switch, a cache with no invalidation.
	AnyVersion bool
}

type entry struct {
	tool    store.Tool
	version int64
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{entries: map[string]entry{}} }

// Memo returns a request's Memo sharing c's entries, for a request whose
// API key was read at the registry's version (0: unknown, so every entry is
// read afresh, and kept for later requests).
func (c *Cache) Memo(version int64) *Memo { return &Memo{cache: c, version: version} }

// get returns name's entry read at version.
func (c *Cache) get(name string, version int64) (store.Tool, bool) {
	if c == nil || version == 0 {
		return store.Tool{}, false
	}
	c.mu.RLock()
	e, ok := c.entries[name]
	c.mu.RUnlock()
	return e.tool, ok && (e.version == version || c.AnyVersion)
}

// put keeps t read at version, unless a later read of it is kept already.
func (c *Cache) put(t store.Tool, version int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if e, ok := c.entries[t.Name]; !ok || e.version < version {
		c.entries[t.Name] = entry{tool: t, version: version}
	}
	c.mu.Unlock()
}

type ctxKey struct{}

// With returns ctx carrying m.
func With(ctx context.Context, m *Memo) context.Context {
	return context.WithValue(ctx, ctxKey{}, m)
}

// From returns the Memo ctx carries, nil if none.
func From(ctx context.Context) *Memo {
	m, _ := ctx.Value(ctxKey{}).(*Memo)
	return m
}

// Tool returns what the request's first read of name found, else the
// process's entry of name read at the request's registry version, else reads
// it from st (and keeps it for later requests). Only a found tool and
// store.ErrNotFound are kept for the request: any other error leaves the
// next read to try the store again. The Tool returned shares its Overrides
// with the other readers of the request and of the cache, which must not
// modify it.
func (m *Memo) Tool(ctx context.Context, st Reader, name string) (store.Tool, error) {
	if m == nil {
		t, _, err := st.VersionedTool(ctx, name)
		return t, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read && m.name == name {
		return m.tool, m.err
	}
	t, ok := m.cache.get(name, m.version)
	var err error
	if !ok {
		var v int64
		t, v, err = st.VersionedTool(ctx, name)
		if err == nil {
			m.cache.put(t, v)
		}
	}
	if err == nil || errors.Is(err, store.ErrNotFound) {
		m.read, m.name, m.tool, m.err = true, name, t, err
	}
	return t, err
}
