package toolmemo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
)

// fakeReader answers from tools, or with fail while it is set, and counts reads.
type fakeReader struct {
	tools map[string]store.Tool
	fail  error
	reads int
}

func (r *fakeReader) Tool(_ context.Context, name string) (store.Tool, error) {
	r.reads++
	if r.fail != nil {
		return store.Tool{}, r.fail
	}
	t, ok := r.tools[name]
	if !ok {
		return store.Tool{}, fmt.Errorf("tool %s: %w", name, store.ErrNotFound)
	}
	return t, nil
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
