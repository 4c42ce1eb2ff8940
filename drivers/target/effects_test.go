package target

import (
	"encoding/json"
	"testing"
)

// TestEffectsWriteArgs: the write template takes the scenario's token, and
// the scenario's other arguments go where {extra} says or beside the
// template's members, so arguments a scenario means to differ still differ;
// what is not an object is sent as given.
func TestEffectsWriteArgs(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, args, want string
	}{
		{"token only", `{"channel":"c","text":"msg {token}"}`, `{"token":"op1-x"}`, `{"channel":"c","text":"msg op1-x"}`},
		{"extra placeholder", `{"text":"{token}|{extra}"}`, `{"token":"op1-x","note":"one"}`, `{"text":"op1-x|{\"note\":\"one\"}"}`},
		{"extra sorted", `{"text":"{token}|{extra}"}`, `{"token":"t","b":1,"a":2}`, `{"text":"t|{\"a\":2,\"b\":1}"}`},
		{"extra beside", `{"text":"{token}"}`, `{"token":"t","note":"two"}`, `{"note":"two","text":"t"}`},
		{"template wins a clash", `{"text":"{token}"}`, `{"token":"t","text":"mine"}`, `{"text":"t"}`},
		{"nested", `{"msg":{"parts":["{token}","x"]}}`, `{"token":"t"}`, `{"msg":{"parts":["t","x"]}}`},
		{"no token", `{"text":"{token}"}`, `{"meta":{"v":1}}`, `{"meta":{"v":1},"text":""}`},
		{"not an object", `{"text":"{token}"}`, `[1,2]`, `[1,2]`},
		{"quotes escaped", `{"text":"{extra}{token}"}`, `{"token":"t","q":"a\"b"}`, `{"text":"{\"q\":\"a\\\"b\"}t"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Effects{WriteArguments: json.RawMessage(tc.tmpl)}
			got, _ := e.WriteArgs(json.RawMessage(tc.args)).(json.RawMessage)
			if string(got) != tc.want {
				t.Errorf("WriteArgs(%s) = %s, want %s", tc.args, got, tc.want)
			}
		})
	}
}

// TestEffectsReadArgs: the read call names the token it counts.
func TestEffectsReadArgs(t *testing.T) {
	e := Effects{Read: EffectsRead{Arguments: json.RawMessage(`{"filter":{"contains":"{token}"},"limit":100}`)}}
	got, err := e.ReadArgs("op1-x")
	if err != nil || string(got) != `{"filter":{"contains":"op1-x"},"limit":100}` {
		t.Errorf("ReadArgs = %s, %v", got, err)
	}
}

// TestEffectsRenderOnlyWriteTool: the profile's client renders the write
// tool's arguments alone; every other tool gets the scenario's own.
func TestEffectsRenderOnlyWriteTool(t *testing.T) {
	p, err := LoadProfile("testdata/good-effects.json")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client("http://127.0.0.1:1/mcp")
	args := json.RawMessage(`{"token":"t"}`)
	if got, _ := c.Render("send_message", args).(json.RawMessage); string(got) != `{"channel":"conformance","text":"t "}` {
		t.Errorf("write tool sent %s", got)
	}
	if got, _ := c.Render("other", args).(json.RawMessage); string(got) != string(args) {
		t.Errorf("another tool sent %s", got)
	}
	if p.Has("upstream") || !p.Has(CapEffects) {
		t.Errorf("a profile with effects has upstream %v, effects %v; want false, true", p.Has("upstream"), p.Has(CapEffects))
	}
}
