package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// lookupCounter counts the store's API key lookups.
type lookupCounter struct {
	store.Store
	lookups atomic.Int64
}

func (s *lookupCounter) APIKey(ctx context.Context, id string) (store.APIKey, error) {
	s.lookups.Add(1)
	return s.Store.APIKey(ctx, id)
}

// TestAuthenticateBounds: a key whose id or secret no stored key could have
// is refused as any wrong key is, without a store lookup.
func TestAuthenticateBounds(t *testing.T) {
	st, _ := sqliteBackend().open(t)
	counter := &lookupCounter{Store: st}
	g, err := gateway.New(gateway.Options{Store: counter, Dispatcher: &fakeDispatcher{}})
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name    string
		key     string
		lookups int64
	}{
		{"900 KB key id", "mcpk_" + strings.Repeat("k", 900<<10) + "_" + secret, 0},
		{"65-character key id", "mcpk_" + strings.Repeat("k", 65) + "_" + secret, 0},
		{"key id outside the grammar", "mcpk_k/../x_" + secret, 0},
		{"key id with a space", "mcpk_k 1_" + secret, 0},
		{"129-character secret", "mcpk_k-1_" + strings.Repeat("a", 129), 0},
		{"unknown key in bounds", "mcpk_" + strings.Repeat("k", 64) + "_" + strings.Repeat("a", 128), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := counter.lookups.Load()
			if _, err := g.Authenticate(t.Context(), c.key); reason(err) != gateway.ReasonUnauthenticated {
				t.Fatalf("Authenticate = %v, want unauthenticated", err)
			}
			if n := counter.lookups.Load() - before; n != c.lookups {
				t.Fatalf("%d store lookups, want %d", n, c.lookups)
			}
		})
	}
}
