package tools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
)

// relayUpstream serves one prompt, one resource and one resource template.
func relayUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "relayed", Version: "1"}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	s.AddResource(&mcp.Resource{URI: "mem://a", Name: "a"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://items/{id}", Name: "item"}, read)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestListChangedDropsRoutes: a registered server's list change drops the
// routes learnt from its old list (and only its own) before it is passed
// on; an upstream of tools alone has no list to pass on.
func TestListChangedDropsRoutes(t *testing.T) {
	ctx := context.Background()
	urlM, urlN, urlTools := relayUpstream(t), relayUpstream(t), relayUpstream(t)
	st := newMemStore()
	st.tools["t.greet"] = store.Tool{Name: "t.greet", UpstreamURL: urlTools}
	d := New(st, Options{})
	defer d.Close()
	for _, sv := range []store.Server{{Name: "m", URL: urlM, Prefix: "m."}, {Name: "n", URL: urlN, Prefix: "n."}} {
		if _, err := d.RegisterServer(ctx, sv); err != nil {
			t.Fatal(err)
		}
	}
	var told []string
	d.OnListChanged(func(_ context.Context, method string) { told = append(told, method) })

	type known struct{ prompts, resources, templates map[string]string }
	routesNow := func() known {
		k := known{map[string]string{}, map[string]string{}, map[string]string{}}
		d.routes.set(func(r *routes) {
			for name, rt := range r.prompts {
				k.prompts[name] = rt.url
			}
			for uri, u := range r.resources {
				k.resources[uri] = u
			}
			for tpl, u := range r.templates {
				k.templates[tpl] = u
			}
		})
		return k
	}
	learn := func() {
		t.Helper()
		if _, err := d.ListPrompts(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ListResources(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ListResourceTemplates(ctx); err != nil {
			t.Fatal(err)
		}
	}
	changed := func(url, method string) {
		t.Helper()
		sess, err := d.session(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		d.listChanged(ctx, sess, method)
	}
	// Both servers list "mem://a" and the template: the route goes to the
	// one listed last, so only the prompts tell the servers apart there.
	learn()
	before := routesNow()
	if before.prompts["m.greet"] != urlM || before.prompts["n.greet"] != urlN {
		t.Fatalf("prompt routes %v", before.prompts)
	}

	changed(urlM, relay.PromptsListChanged)
	after := routesNow()
	delete(before.prompts, "m.greet")
	if diff := cmp.Diff(before, after, cmp.AllowUnexported(known{})); diff != "" {
		t.Fatalf("routes after m's prompts changed (-want +got):\n%s", diff)
	}

	learn()
	resourceURL := routesNow().resources["mem://a"]
	changed(resourceURL, relay.ResourcesListChanged)
	after = routesNow()
	if _, ok := after.resources["mem://a"]; ok {
		t.Errorf("resource route %v kept after its server's resources changed", after.resources)
	}
	if _, ok := after.templates["mem://items/{id}"]; ok {
		t.Errorf("template route %v kept after its server's resources changed", after.templates)
	}
	if len(after.prompts) != 2 {
		t.Errorf("prompt routes %v: a resource list change dropped them", after.prompts)
	}

	changed(urlTools, relay.PromptsListChanged)
	if diff := cmp.Diff([]string{relay.PromptsListChanged, relay.ResourcesListChanged}, told); diff != "" {
		t.Fatalf("list changes passed on (-want +got):\n%s", diff)
	}
}
