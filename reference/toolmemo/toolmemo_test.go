package toolmemo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
)

// fakeReader answers from tools at version, or with fail while it is set,
// and counts reads.
type fakeReader struct {
	tools   map[string]store.Tool
	version int64
	fail    error
	reads   int
}

func (r *fakeReader) VersionedTool(_ context.Context, name string) (store.Tool, int64, error) {
	r.reads++
	if r.fail != nil {
		return store.Tool{}, 0, r.fail
	}
	t, ok := r.tools[name]
	if !ok {
		return store.Tool{}, r.version, fmt.Errorf("tool %s: %w", name, store.ErrNotFound)
	}
	return t, r.version, nil
}

func TestMemo(t *testing.T) {
	busy := errors.New("busy")
	type read struct {
		name      string
		fail      error // the store's answer to this read, if it is asked
		wantReads int   // the store's reads so far
		wantErr   error
	}
	tests := []struct {
		name  string
		memo  bool
		reads []read
	}{
		{"no memo reads every time", false, []read{{"a", nil, 1, nil}, {"a", nil, 2, nil}}},
		{"the second read of a name is the first's", true, []read{{"a", nil, 1, nil}, {"a", nil, 1, nil}, {"a", nil, 1, nil}}},
		{"another name is read", true, []read{{"a", nil, 1, nil}, {"b", nil, 2, nil}, {"b", nil, 2, nil}}},
		{"an unknown tool is read once", true, []read{{"gone", nil, 1, store.ErrNotFound}, {"gone", nil, 1, store.ErrNotFound}}},
		{"a failed read is not kept", true, []read{{"a", busy, 1, busy}, {"a", nil, 2, nil}, {"a", nil, 2, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeReader{tools: map[string]store.Tool{"a": {Name: "a", Price: 3}, "b": {Name: "b", Price: 5}}}
			ctx := context.Background()
			if tt.memo {
				ctx = With(ctx, new(Memo))
			}
			for i, rd := range tt.reads {
				r.fail = rd.fail
				got, err := From(ctx).Tool(ctx, r, rd.name)
				if !errors.Is(err, rd.wantErr) {
					t.Fatalf("read %d of %s: err %v, want %v", i, rd.name, err, rd.wantErr)
				}
				if want := r.tools[rd.name]; err == nil && (got.Name != want.Name || got.Price != want.Price) {
					t.Fatalf("read %d of %s: %+v, want %+v", i, rd.name, got, want)
				}
				if r.reads != rd.wantReads {
					t.Fatalf("after read %d of %s: %d store reads, want %d", i, rd.name, r.reads, rd.wantReads)
				}
			}
		})
	}
}

// TestCache: requests share an entry only at the registry version it was
// read at. Each step is one request: the registry's version its API key was
// read with, what the store holds then, and whether the store was read.
func TestCache(t *testing.T) {
	type request struct {
		version  int64 // the request's authentication version; the store's too unless storeAt
		storeAt  int64 // the store's version by the time of the tool read, if later
		price    int64 // the tool's price in the store at the read
		removed  bool
		wantRead bool
		want     int64 // the price the request gets
	}
	tests := []struct {
		name     string
		requests []request
	}{
		{"the same version reads once", []request{{1, 0, 3, false, true, 3}, {1, 0, 3, false, false, 3}, {1, 0, 3, false, false, 3}}},
		{"a change in another process is read at once", []request{{1, 0, 3, false, true, 3}, {2, 0, 7, false, true, 7}, {2, 0, 7, false, false, 7}}},
		{"a removal is read and kept removed", []request{{1, 0, 3, false, true, 3}, {2, 0, 3, true, true, 3}, {2, 0, 3, true, false, 3}}},
		{"an unknown version reads, and keeps what it read", []request{{0, 0, 3, false, true, 3}, {0, 0, 3, false, true, 3}}},
		{"a change between authentication and the read: the newer tool, kept at its own version",
			[]request{{1, 0, 3, false, true, 3}, {1, 2, 7, false, false, 3}, {2, 0, 7, false, true, 7}, {2, 0, 7, false, false, 7}}},
		{"an entry read late is not replaced by an older read", []request{{1, 3, 9, false, true, 9}, {3, 0, 9, false, false, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			r := &fakeReader{tools: map[string]store.Tool{}}
			for i, rq := range tt.requests {
				r.version = max(rq.version, rq.storeAt)
				r.tools["a"] = store.Tool{Name: "a", Price: rq.price, Removed: rq.removed}
				before := r.reads
				m := c.Memo(rq.version)
				got, err := m.Tool(context.Background(), r, "a")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if read := r.reads > before; read != rq.wantRead {
					t.Errorf("request %d at version %d: store read %v, want %v", i, rq.version, read, rq.wantRead)
				}
				if got.Price != rq.want || (rq.wantRead && got.Removed != rq.removed) {
					t.Errorf("request %d at version %d: %+v, want price %d", i, rq.version, got, rq.want)
				}
				if _, err := m.Tool(context.Background(), r, "a"); err != nil || r.reads > before+1 {
					t.Errorf("request %d: a second read in the request went to the store", i)
				}
			}
		})
	}
	t.Run("an unknown tool is not kept across requests", func(t *testing.T) {
		c := NewCache()
		r := &fakeReader{tools: map[string]store.Tool{}, version: 1}
		for i := range 2 {
			if _, err := c.Memo(1).Tool(context.Background(), r, "made.up"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		if r.reads != 2 || len(c.entries) != 0 {
			t.Errorf("reads %d, entries %d; want 2 reads and nothing kept", r.reads, len(c.entries))
		}
	})
}
