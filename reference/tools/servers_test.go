package tools

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpconform/mcpconform/reference/store"
)

func (m *memStore) RemoveTool(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tools[name]
	if !ok {
		return store.ErrNotFound
	}
	t.Removed = true
	m.tools[name] = t
	return nil
}

func (m *memStore) PutServer(_ context.Context, s store.Server) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = slices.DeleteFunc(m.servers, func(o store.Server) bool { return o.Name == s.Name })
	m.servers = append(m.servers, s)
	return nil
}

func (m *memStore) Servers(context.Context) ([]store.Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.servers), nil
}

func (m *memStore) RemoveServer(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.servers)
	m.servers = slices.DeleteFunc(m.servers, func(o store.Server) bool { return o.Name == name })
	if len(m.servers) == n {
		return store.ErrNotFound
	}
	return nil
}

func liveTools(t *testing.T, st *memStore) []store.Tool {
	t.Helper()
	ts, err := st.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ts, func(a, b store.Tool) int { return strings.Compare(a.Name, b.Name) })
	return ts
}

func TestRegisterServerFollowsItsList(t *testing.T) {
	url, add := metaUpstream(t, false)
	st := newMemStore()
	st.tools["other.add"] = store.Tool{Name: "other.add", UpstreamURL: "http://elsewhere/mcp"}
	d := New(st, Options{})
	defer d.Close()
	changed := make(chan string, 4)
	d.listings.changed = func(u string) { changed <- u }
	ctx := context.Background()

	sv := store.Server{Name: "m", URL: url, Prefix: "m.", Price: 2, Prices: map[string]int64{"later": 5}, ReadOnly: []string{"add"}}
	if _, err := d.RegisterServer(ctx, store.Server{Name: "clash", URL: url, Prefix: "other."}); err == nil {
		t.Fatal("a server whose tool name is taken by another upstream's tool was registered")
	}
	if svs, _ := st.Servers(ctx); len(svs) != 0 {
		t.Fatalf("a refused registration stored %v", svs)
	}
	got, err := d.RegisterServer(ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Tool{{Name: "m.add", Price: 2, ReadOnly: true, UpstreamURL: url, UpstreamTool: "add"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("registered (-want +got):\n%s", diff)
	}

	add("later")
	<-changed
	want = append(want, store.Tool{Name: "m.later", Price: 5, UpstreamURL: url, UpstreamTool: "later"})
	if diff := cmp.Diff(append(want, st.tools["other.add"]), liveTools(t, st)); diff != "" {
		t.Fatalf("registry after the upstream's list changed (-want +got):\n%s", diff)
	}

	if err := d.RemoveServer(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Tool{st.tools["other.add"]}, liveTools(t, st)); diff != "" {
		t.Fatalf("registry after the server's removal (-want +got):\n%s", diff)
	}
}
