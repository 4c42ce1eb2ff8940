package toolmemo

import (
	"context"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
)

// TestCacheKeepsTheNewerRead: two requests may read a tool at different
// versions and finish in either order. The later-finishing read of the
// older version must not replace the newer entry, or the requests at the
// newer version read the store again, each, until the next read puts it
// back: a replay would read a tool row after all. Neither order of the puts
// changes which entry a request at the newer version uses.
func TestCacheKeepsTheNewerRead(t *testing.T) {
	older := store.Tool{Name: "a", Price: 3}
	newer := store.Tool{Name: "a", Price: 7}
	tests := []struct {
		name string
		puts []entry // in the order the reads finish
	}{
		{"newer finishes last", []entry{{older, 1}, {newer, 2}}},
		{"older finishes last", []entry{{newer, 2}, {older, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			for _, p := range tt.puts {
				c.put(p.tool, p.version)
			}
			r := &fakeReader{tools: map[string]store.Tool{"a": newer}, version: 2}
			got, err := c.Memo(2).Tool(context.Background(), r, "a")
			if err != nil {
				t.Fatal(err)
			}
			if r.reads != 0 || got.Price != newer.Price {
				t.Errorf("a request at version 2: %d store reads, price %d; want 0 reads, price %d", r.reads, got.Price, newer.Price)
			}
		})
	}
}
