package control

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/tools"
)

func TestLocalToolAlias(t *testing.T) {
	e := newEnv(t)
	m := e.must(t, "POST", "/control/tools", `{"name":"probe.write.1234","local_tool":"partner.echo","price":3}`, http.StatusCreated)
	wantURL := e.srv.URL + LocalUpstreamPath
	if m["name"] != "probe.write.1234" || m["price"] != 3.0 || m["local_tool"] != "partner.echo" ||
		m["upstream_url"] != wantURL || m["upstream_tool"] != "partner.echo" || m["read_only"] != false {
		t.Fatalf("alias answer %v; want price 3, local_tool partner.echo, upstream %s", m, wantURL)
	}
	ctx := context.Background()
	tool, err := e.st.Tool(ctx, "probe.write.1234")
	if err != nil {
		t.Fatal(err)
	}
	// Flags given are kept; the built-in partner.echo is left as it was.
	e.must(t, "POST", "/control/tools", `{"name":"probe.read.1234","local_tool":"partner.echo","price":1,"read_only":true}`, http.StatusCreated)
	if ro, _ := e.st.Tool(ctx, "probe.read.1234"); !ro.ReadOnly {
		t.Errorf("read-only alias stored as %+v", ro)
	}
	if echo, _ := e.st.Tool(ctx, tools.Echo); echo.Price != 1 || echo.UpstreamURL != "" {
		t.Errorf("partner.echo changed by aliasing: %+v", echo)
	}

	// The gateway's own upstream client reaches the echo without the token.
	d := tools.New(e.st, tools.Options{CallTimeout: 5 * time.Second})
	defer d.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := d.Dispatch(dctx, gateway.DispatchRequest{Tool: tool, Arguments: json.RawMessage(`{"token":"op1-x","note":"hello"}`), WalletID: "w-1"})
	if err != nil {
		t.Fatalf("dispatch the alias: %v", err)
	}
	var out struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.IsError || out.StructuredContent["token"] != "op1-x" {
		t.Fatalf("alias result %s (err %v): want the arguments echoed", res, err)
	}
}

func TestLocalToolAliasErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ body, reason string }{
		{`{"name":"x.1","local_tool":"partner.notes.write"}`, "unknown_local_tool"},
		{`{"name":"x.1","local_tool":"nope"}`, "unknown_local_tool"},
		{`{"name":"partner.echo","local_tool":"partner.echo"}`, "bad_request"},
		{`{"name":"x.1","local_tool":"partner.echo","upstream_url":"http://127.0.0.1:9/mcp"}`, "bad_request"},
		{`{"name":"x.1","local_tool":"partner.echo","price":-1}`, "bad_request"},
	} {
		got, m := e.do(t, "POST", "/control/tools", tc.body)
		if got != http.StatusBadRequest || m["reason"] != tc.reason {
			t.Errorf("%s: %d %v, want 400 %s", tc.body, got, m, tc.reason)
		}
	}
	// The echo upstream answers loopback clients without the token, and
	// nothing else under /control/ does.
	resp, err := http.Post(e.srv.URL+LocalUpstreamPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("the echo upstream wants the control token")
	}
	if got, _ := e.doAuth(t, "GET", "/control/local", "", ""); got != http.StatusUnauthorized {
		t.Errorf("GET /control/local without a token: %d, want 401", got)
	}
}
