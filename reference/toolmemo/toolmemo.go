// Package toolmemo lets the reads of one request share one store read of
// the tool it names.
//
// A 2026-07-28 tools/call needs its tool twice: the wire's Mcp-Param header
// check lists it, then the gateway core meters it. A Memo made for the
// request and carried in its context makes the second read reuse the first.
// It lives only as long as the request: a tool changed or removed between
// two requests is read afresh by the second, in this process as in any
// other, so it needs no story across processes.
package toolmemo

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpconform/mcpconform/reference/store"
)

// Reader is the store read a Memo shares.
type Reader interface {
	Tool(ctx context.Context, name string) (store.Tool, error)
}

// Memo is one request's read of a tool. The zero value is ready; a nil
// *Memo reads through to the store every time.
type Memo struct {
	mu   sync.Mutex
	read bool
	name string
	tool store.Tool
	err  error // nil, or a store.ErrNotFound: an unknown tool is read once too
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

// Tool reads name from st, or returns what the request's first read of name
// found. Only a found tool and store.ErrNotFound are kept: any other error
// leaves the next read to try the store again. The Tool returned shares its
// Overrides with the other readers of the request, which must not modify it.
func (m *Memo) Tool(ctx context.Context, st Reader, name string) (store.Tool, error) {
	if m == nil {
		return st.Tool(ctx, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read && m.name == name {
		return m.tool, m.err
	}
	t, err := st.Tool(ctx, name)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		m.read, m.name, m.tool, m.err = true, name, t, err
	}
	return t, err
}
