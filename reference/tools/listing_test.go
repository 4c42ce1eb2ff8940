package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/store"
)

// schema2020 uses the JSON Schema 2020-12 keywords a proxy tends to strip.
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"n":{"$anchor":"num","type":"number","minimum":0}},
 "properties":{"a":{"$ref":"#num"},"b":{"type":"string"}},
 "additionalProperties":false,"allOf":[{"required":["a"]}],
 "if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"not":{"required":["b"]}}}`

const outSchema = `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`

func boolPtr(b bool) *bool { return &b }

// metaUpstream serves one richly described tool; add registers another and
// thereby sends notifications/tools/list_changed to its sessions.
func metaUpstream(t *testing.T, stateless bool) (url string, add func(name string)) {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	s.AddTool(&mcp.Tool{Name: "add", Title: "Add", Description: "Adds a to b.",
		InputSchema: json.RawMessage(schema2020), OutputSchema: json.RawMessage(outSchema),
		Annotations: &mcp.ToolAnnotations{Title: "Adder", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: boolPtr(false)},
		Meta:        mcp.Meta{"vendor/x": "y"}}, noop)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(srv.Close)
	return srv.URL, func(name string) {
		s.AddTool(&mcp.Tool{Name: name, Description: "new", InputSchema: map[string]any{"type": "object"}}, noop)
	}
}

// jsonOf is v as generic JSON, so key order and spacing do not matter.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// listed is name's tools/list entry, which ListTool must give alone too.
func listed(t *testing.T, d *Dispatcher, name string) map[string]any {
	t.Helper()
	ts, err := d.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	one, ok, err := d.ListTool(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if tl.Name == name {
			got := jsonOf(t, tl).(map[string]any)
			if diff := cmp.Diff(got, jsonOf(t, one)); !ok || diff != "" {
				t.Errorf("ListTool(%q) = %v and (-ListTools' entry +its own):\n%s", name, ok, diff)
			}
			return got
		}
	}
	if ok {
		t.Errorf("ListTool(%q) found a tool ListTools does not list", name)
	}
	return nil
}

// A removed or unknown tool has no entry, one by one as in the list.
func TestListToolNotListed(t *testing.T) {
	st := newMemStore()
	st.tools["gone"] = store.Tool{Name: "gone", Price: 1, Removed: true}
	d := New(st, Options{})
	defer d.Close()
	for _, name := range []string{"gone", "nonexistent"} {
		if got := listed(t, d, name); got != nil {
			t.Errorf("%s listed as %v", name, got)
		}
	}
}

func TestListToolsUpstreamMetadata(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			url, _ := metaUpstream(t, stateless)
			st := newMemStore()
			st.tools["calc.add"] = store.Tool{Name: "calc.add", Price: 2, UpstreamURL: url, UpstreamTool: "add"}
			d := New(st, Options{})
			defer d.Close()

			got := listed(t, d, "calc.add")
			want := map[string]any{
				"name": "calc.add", "title": "Add", "description": "Adds a to b.",
				"inputSchema":  jsonOf(t, json.RawMessage(schema2020)),
				"outputSchema": jsonOf(t, json.RawMessage(outSchema)),
				// readOnlyHint is the registry's read_only flag: the gateway
				// meters the tool as mutating, whatever the upstream hints.
				"annotations": map[string]any{"title": "Adder", "idempotentHint": true, "destructiveHint": false, "readOnlyHint": false},
				"_meta": map[string]any{"vendor/x": "y",
					MetaKey: map[string]any{"price": 2.0, "read_only": false, "approval": false, "upstream": true}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("tools/list entry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListToolsOperatorOverrides(t *testing.T) {
	url, _ := metaUpstream(t, true)
	st := newMemStore()
	st.tools["calc.add"] = store.Tool{Name: "calc.add", Description: "Operator's words.", Price: 1, ReadOnly: true,
		UpstreamURL: url, UpstreamTool: "add",
		Overrides: json.RawMessage(`{"title":"Sum","inputSchema":{"type":"object","required":["x"]},"outputSchema":{"type":"object"},"annotations":{"openWorldHint":false}}`)}
	d := New(st, Options{})
	defer d.Close()
	got := listed(t, d, "calc.add")
	delete(got, "_meta")
	want := map[string]any{"name": "calc.add", "title": "Sum", "description": "Operator's words.",
		"inputSchema":  map[string]any{"type": "object", "required": []any{"x"}},
		"outputSchema": map[string]any{"type": "object"},
		"annotations":  map[string]any{"openWorldHint": false, "readOnlyHint": true, "idempotentHint": false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tools/list entry (-want +got):\n%s", diff)
	}
}

func TestListToolsUnreachableUpstream(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	st := newMemStore()
	st.tools["gone.x"] = store.Tool{Name: "gone.x", Description: "registered", UpstreamURL: srv.URL}
	d := New(st, Options{})
	defer d.Close()
	got := listed(t, d, "gone.x")
	if got["description"] != "registered" || cmp.Diff(map[string]any{"type": "object"}, got["inputSchema"]) != "" {
		t.Fatalf("an unreachable upstream's tool is listed as %v", got)
	}
}

func TestListToolsRefreshedOnListChanged(t *testing.T) {
	url, add := metaUpstream(t, false)
	st := newMemStore()
	st.tools["calc.later"] = store.Tool{Name: "calc.later", UpstreamURL: url, UpstreamTool: "later"}
	d := New(st, Options{})
	defer d.Close()
	changed := make(chan string, 4)
	d.listings.changed = func(u string) { changed <- u }

	if got := listed(t, d, "calc.later"); got["description"] != nil {
		t.Fatalf("before the upstream has the tool: %v", got)
	}
	add("later")
	if u := <-changed; u != url {
		t.Fatalf("list_changed from %q, want %q", u, url)
	}
	if got := listed(t, d, "calc.later"); got["description"] != "new" {
		t.Fatalf("after notifications/tools/list_changed: %v", got)
	}
}

// A failing upstream is not asked again by the next tools/list: each would
// otherwise wait out a connect timeout on an unreachable one.
func TestListToolsFailingUpstreamLeftAlone(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	st := newMemStore()
	st.tools["down.x"] = store.Tool{Name: "down.x", UpstreamURL: srv.URL}
	d := New(st, Options{})
	defer d.Close()
	listed(t, d, "down.x")
	first := hits.Load()
	listed(t, d, "down.x")
	if first == 0 || hits.Load() != first {
		t.Fatalf("the upstream got %d requests on the first tools/list and %d on the second, want some and then none", first, hits.Load()-first)
	}
}
