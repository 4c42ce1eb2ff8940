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
		{"extra beside", `{"text":"{token}"}`, `{"token":"t","note":"two"}`, `{"text":"t","note":"two"}`},
		{"template wins a clash", `{"text":"{token}"}`, `{"token":"t","text":"mine"}`, `{"text":"t"}`},
		{"nested", `{"msg":{"parts":["{token}","x"]}}`, `{"token":"t"}`, `{"msg":{"parts":["t","x"]}}`},
		{"no token", `{"text":"{token}"}`, `{"meta":{"v":1}}`, `{"text":"","meta":{"v":1}}`},
		// Written as the operator and the scenario wrote them: member
		// order, every digit, members sharing a name, "<" unescaped.
		{"template order kept", `{"z":"{token}","a":1,"m":[true,null]}`, `{"token":"t"}`, `{"z":"t","a":1,"m":[true,null]}`},
		{"template numbers kept", `{"text":"{token}","big":12345678901234567890,"tiny":1e-400,"f":1.50}`, `{"token":"t"}`,
			`{"text":"t","big":12345678901234567890,"tiny":1e-400,"f":1.50}`},
		{"extra numbers kept", `{"text":"{token} {extra}"}`, `{"token":"t","n":12345678901234567890}`, `{"text":"t {\"n\":12345678901234567890}"}`},
		{"beside order and numbers kept", `{"text":"{token}"}`, `{"token":"t","z":9007199254740993,"a":{"y":1,"b":2}}`,
			`{"text":"t","z":9007199254740993,"a":{"y":1,"b":2}}`},
		{"colliding names kept beside", `{"text":"{token}"}`, `{"token":"t","a":1,"a":2}`, `{"text":"t","a":1,"a":2}`},
		{"extra canonical at every depth", `{"text":"{extra}"}`, `{"token":"t","m":{"v":1,"note":"deep","l":[{"b":1.0,"a":2}]},"n":"x"}`,
			`{"text":"{\"m\":{\"l\":[{\"a\":2,\"b\":1.0}],\"note\":\"deep\",\"v\":1},\"n\":\"x\"}"}`},
		{"colliding names kept in extra", `{"text":"{extra}"}`, `{"token":"t","b":0,"a":1,"a":2}`, `{"text":"{\"a\":1,\"a\":2,\"b\":0}"}`},
		{"colliding template names kept", `{"text":"{token}","text":"x"}`, `{"token":"t"}`, `{"text":"t","text":"x"}`},
		{"no html escapes", `{"text":"<{token}> & co"}`, `{"token":"t"}`, `{"text":"<t> & co"}`},
		{"empty template", `{}`, `{"token":"t","a":1}`, `{"a":1}`},
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
	for _, tc := range []struct{ tmpl, want string }{
		{`{"filter":{"contains":"{token}"},"limit":100}`, `{"filter":{"contains":"op1-x"},"limit":100}`},
		{`{"z":"{token}","a":[1.0,{"q":"{token}"}],"big":18446744073709551617}`, `{"z":"op1-x","a":[1.0,{"q":"op1-x"}],"big":18446744073709551617}`},
	} {
		e := Effects{Read: EffectsRead{Arguments: json.RawMessage(tc.tmpl)}}
		got, err := e.ReadArgs("op1-x")
		if err != nil || string(got) != tc.want {
			t.Errorf("ReadArgs(%s) = %s, %v; want %s", tc.tmpl, got, err, tc.want)
		}
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
