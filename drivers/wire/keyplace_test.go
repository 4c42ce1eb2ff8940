package wire

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Each placement puts the key in one place and nowhere else; the arguments
// of an argument placement keep the caller's member order and numbers around the key.
func TestKeyPlacement(t *testing.T) {
	var mu sync.Mutex
	var gotBody []byte
	var gotHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBody, gotHeader = b, r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name      string
		client    carrier
		args      any
		wantArgs  string // the arguments as sent
		wantParam string // the params member holding the key, "" for none
		wantMeta  string // the _meta member holding the key, "" for none
		wantHdr   string // the header holding the key, "" for none
	}{
		{"header by default", carrier{}, map[string]any{"token": "t"}, `{"token":"t"}`, "", "", "Idempotency-Key"},
		{"header named", carrier{KeyInHeader, "x-request-key"}, map[string]any{"token": "t"}, `{"token":"t"}`, "", "", "X-Request-Key"},
		{"meta", carrier{KeyInMeta, ""}, map[string]any{"token": "t"}, `{"token":"t"}`, "", "idempotencyKey", ""},
		{"meta named", carrier{KeyInMeta, "io.acme/key"}, nil, `{}`, "", "io.acme/key", ""},
		{"params", carrier{KeyInParams, ""}, map[string]any{"token": "t"}, `{"token":"t"}`, "idempotencyKey", "", ""},
		{"params named", carrier{KeyInParams, "requestKey"}, nil, `{}`, "requestKey", "", ""},
		{"argument", carrier{KeyInArgument, ""}, map[string]any{"token": "t"}, `{"idempotency_key":"k-1","token":"t"}`, "", "", ""},
		{"argument into no arguments", carrier{KeyInArgument, ""}, nil, `{"idempotency_key":"k-1"}`, "", "", ""},
		{"argument into an empty object", carrier{KeyInArgument, ""}, json.RawMessage(` { } `), `{"idempotency_key":"k-1"}`, "", "", ""},
		{"argument keeps the bytes", carrier{KeyInArgument, ""},
			json.RawMessage(`{ "z": 1.0, "a" :[1,2] }`), `{"idempotency_key":"k-1","z":1.0,"a":[1,2]}`, "", "", ""},
		{"argument nested into a new object", carrier{KeyInArgument, "meta.idempotency_key"},
			json.RawMessage(`{"token":"t"}`), `{"meta":{"idempotency_key":"k-1"},"token":"t"}`, "", "", ""},
		{"argument nested into an existing object", carrier{KeyInArgument, "meta.idempotency_key"},
			json.RawMessage(`{"token":"t","meta":{"v":1, "note":"deep"}}`), `{"token":"t","meta":{"idempotency_key":"k-1","v":1,"note":"deep"}}`, "", "", ""},
		{"argument nested, the last of a repeated member", carrier{KeyInArgument, "m.k"},
			json.RawMessage(`{"m":{},"m":{"x":1}}`), `{"m":{},"m":{"k":"k-1","x":1}}`, "", "", ""},
		{"argument with a bracketed member", carrier{KeyInArgument, "['io.acme/req'].key"},
			nil, `{"io.acme/req":{"key":"k-1"}}`, "", "", ""},
		// Where the key cannot go, the arguments go as given, keyless.
		{"argument not an object", carrier{KeyInArgument, ""}, json.RawMessage(`[1]`), `[1]`, "", "", ""},
		{"argument path through a string", carrier{KeyInArgument, "meta.k"},
			json.RawMessage(`{"meta":"{x}"}`), `{"meta":"{x}"}`, "", "", ""},
		{"argument already there", carrier{KeyInArgument, ""},
			json.RawMessage(`{"idempotency_key":"mine"}`), `{"idempotency_key":"mine"}`, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client.client(srv.URL)
			if _, err := c.CallTool(testCtx(t), Call{Tool: "w", Arguments: tt.args, IdempotencyKey: "k-1", NoHandshake: true}); err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			var msg struct {
				Params map[string]json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(gotBody, &msg); err != nil {
				t.Fatalf("body %s: %v", gotBody, err)
			}
			if got := string(msg.Params["arguments"]); got != tt.wantArgs {
				t.Errorf("arguments sent %s, want %s", got, tt.wantArgs)
			}
			for name, v := range msg.Params {
				if name != "name" && name != "arguments" && name != "_meta" && (name != tt.wantParam || string(v) != `"k-1"`) {
					t.Errorf("params.%s = %s, want none", name, v)
				}
			}
			if tt.wantParam != "" && string(msg.Params[tt.wantParam]) != `"k-1"` {
				t.Errorf("params.%s = %s, want the key", tt.wantParam, msg.Params[tt.wantParam])
			}
			var meta map[string]any
			_ = json.Unmarshal(msg.Params["_meta"], &meta)
			if tt.wantMeta != "" && meta[tt.wantMeta] != "k-1" {
				t.Errorf("_meta %v: want the key at %q", meta, tt.wantMeta)
			}
			if tt.wantMeta == "" && len(meta) > 0 {
				t.Errorf("_meta %v, want none", meta)
			}
			for name, vs := range gotHeader {
				if strings.Contains(strings.Join(vs, ","), "k-1") && name != tt.wantHdr {
					t.Errorf("header %s carries the key", name)
				}
			}
			if tt.wantHdr != "" && gotHeader.Get(tt.wantHdr) != `"k-1"` {
				t.Errorf("header %s = %q, want the key as a Structured Field string", tt.wantHdr, gotHeader.Get(tt.wantHdr))
			}
		})
	}
}

// carrier is a placement and the name of its carrier ("" the default).
type carrier struct{ placement, name string }

func (k carrier) client(url string) *Client {
	c := &Client{BaseURL: url, ProtocolVersion: V20251125, KeyPlacement: k.placement}
	switch k.placement {
	case KeyInHeader:
		c.KeyHeader = k.name
	case KeyInMeta:
		c.KeyMetaField = k.name
	case KeyInParams:
		c.KeyParam = k.name
	case KeyInArgument:
		c.KeyArgument = k.name
	}
	return c
}

// The caller's arguments are not changed by placing the key in them: they
// are what the history records as the operation's arguments.
func TestArgumentPlacementLeavesTheCallersArguments(t *testing.T) {
	c := &Client{KeyPlacement: KeyInArgument, KeyArgument: "meta.idempotency_key"}
	args := map[string]any{"token": "t", "meta": map[string]any{"v": 1}}
	raw := json.RawMessage(`{"token":"t"}`)
	c.argumentsWithKey("k", args)
	c.argumentsWithKey("k", raw)
	if len(args) != 2 || len(args["meta"].(map[string]any)) != 1 || string(raw) != `{"token":"t"}` {
		t.Errorf("arguments changed: %v %s", args, raw)
	}
}

func TestCheckKeyArgument(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // the error's text, "" for none
	}{
		{"idempotency_key", ""},
		{"meta.idempotency_key", ""},
		{"['io.acme/request'].key", ""},
		{"", "empty"},
		{"meta..k", "empty segment"},
		{"['']", "an empty member name"},
	} {
		_, err := CheckKeyArgument(tt.in)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckKeyArgument(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
