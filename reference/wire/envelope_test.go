package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sdkAgrees checks readEnvelope against the SDK's own decoder: whenever the
// SDK reads body as a request, the outer handler must see the same method,
// id and params, or its checks refuse a request the SDK would not have seen.
func sdkAgrees(body []byte) error {
	if !json.Valid(body) {
		return nil // refused as parse_error before anything is read
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil
	}
	env, err := readEnvelope(body)
	if err != nil {
		return fmt.Errorf("the SDK reads a %q request, readEnvelope fails: %v", req.Method, err)
	}
	method := ""
	if env.Method != nil {
		method = *env.Method
	}
	if method != req.Method {
		return fmt.Errorf("method %q, the SDK's %q", method, req.Method)
	}
	var id any
	if !isNull(env.ID) {
		if err := json.Unmarshal(env.ID, &id); err != nil {
			return fmt.Errorf("id %s: %v", env.ID, err)
		}
	}
	if got, err := jsonrpc.MakeID(id); err != nil || got != req.ID {
		return fmt.Errorf("id %s, the SDK's %v", env.ID, req.ID.Raw())
	}
	if !(isNull(env.Params) && isNull(req.Params)) && !bytes.Equal(env.Params, req.Params) {
		return fmt.Errorf("params %s, the SDK's %s", env.Params, req.Params)
	}
	return nil
}

// TestMemberNamesAsTheSDKReadsThem: the outer handler's checks read a
// request's members with exact names and keep the last of duplicates, as the
// SDK does, so a mixed-case or repeated member neither hides a bad params
// from them nor makes them refuse params the SDK would never see. Each
// comment names the answer encoding/json's case-insensitive reading gave.
func TestMemberNamesAsTheSDKReadsThem(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	hdr := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125}
	cases := []struct {
		name   string
		body   string
		status int
		code   int64  // 0: no JSON-RPC answer
		reason string // "" with code 0
		id     string
		tool   string // the tool the core was called with, "" if none
	}{
		// was 200, invalid_params: the check read "Params"
		{"Params hides a bad params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5},"Params":{"name":"ok"}}`,
			400, -32602, "unknown_tool", "1", ""},
		// was 400, invalid_arguments
		{"Params is not the params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"},"Params":5}`,
			200, -32602, "unknown_tool", "1", "nope"},
		// was 200, invalid_params: the check saw tools/list
		{"Method hides a tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5},"Method":"tools/list"}`,
			400, -32602, "unknown_tool", "1", ""},
		// was 400, invalid_arguments: the SDK reads a response, not a call
		{"Method is not a method", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":[1]}`,
			202, 0, "", "", ""},
		// was 400, invalid_request, id null
		{"Method is not a string", `{"jsonrpc":"2.0","id":1,"Method":5}`,
			202, 0, "", "", ""},
		{"METHOD", `{"jsonrpc":"2.0","id":1,"METHOD":"tools/list"}`,
			202, 0, "", "", ""},
		// was id 2
		{"ID is not the id", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","params":[1]}`,
			400, -32602, "invalid_arguments", "1", ""},
		// was id 2: the SDK reads a call without an id
		{"ID alone", `{"jsonrpc":"2.0","ID":2,"method":"tools/call","params":{"name":"ok"}}`,
			400, -32600, "invalid_request", "null", ""},
		// was 400, invalid_request from the SDK
		{"Params alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"ok"}}`,
			400, -32602, "invalid_arguments", "1", ""},
		{"Name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"ok"}}`,
			400, -32602, "unknown_tool", "1", ""},
		{"_Meta is not _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok","_Meta":5}}`,
			200, 0, "", "2", "ok"},
		{"escaped member name", `{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":[]}`,
			400, -32602, "invalid_arguments", "1", ""},
		// was 200, invalid_params: the SDK fails on the first name
		{"a bad name then a good one", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"name":"ok"}}`,
			400, -32602, "unknown_tool", "1", ""},
		{"a null name keeps the name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok","name":null}}`,
			200, 0, "", "3", "ok"},
		// was 200, invalid_params
		{"a bad _meta then a good one", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":3,"_meta":{},"name":"ok"}}`,
			400, -32602, "invalid_arguments", "1", ""},
		{"the last method counts", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"ok","_meta":[]}}`,
			400, -32602, "invalid_arguments", "1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := sdkAgrees([]byte(c.body)); err != nil {
				t.Fatalf("readEnvelope and the SDK differ: %v", err)
			}
			before := core.count()
			resp, r, raw := post(t, url, hdr, c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, raw)
			}
			var code int64
			var reason any = ""
			if r.Error != nil {
				code, reason = r.Error.Code, r.Error.Data["reason"]
			}
			if code != c.code || reason != c.reason || string(r.ID) != c.id {
				t.Fatalf("code %d reason %v id %s, want %d %q %s: %.300s", code, reason, r.ID, c.code, c.reason, c.id, raw)
			}
			tool := ""
			if core.count() > before {
				tool = core.last(t).Tool
			}
			if tool != c.tool {
				t.Fatalf("core called with tool %q, want %q", tool, c.tool)
			}
		})
	}
}
