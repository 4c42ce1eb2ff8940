package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// The outer handler reads a request before the SDK does, and its checks are
// only right if it reads the request the SDK will act on. encoding/json
// matches struct fields case-insensitively ("Method" fills a "method" field),
// go-sdk's decoder does not; for a duplicated member both keep the last, but
// when the SDK decodes a member into a typed field it decodes every
// occurrence and fails on any it cannot decode. So requests are read here
// through maps or member by member, never through tagged structs.

// member is one member of a JSON object, its name unescaped.
type member struct {
	name  string
	value json.RawMessage
}

// members returns the members of the JSON object raw in document order,
// duplicates included (a map would keep only the last); false if raw is not
// a JSON object.
func members(raw []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, ok := t.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{name: name, value: v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // a second value after the object
	}
	return ms, true
}

// envelope is the part of a JSON-RPC message the outer handler reads.
type envelope struct {
	ID json.RawMessage
	// Method is nil when the member is absent or null.
	Method *string
	Params json.RawMessage
}

// readEnvelope reads id, method and params as the SDK does: exact member
// names (a map's keys are never matched by case), the last of duplicated
// members. It fails only when body is not a JSON object or its method is
// neither a string nor null.
func readEnvelope(body []byte) (envelope, error) {
	var ms map[string]json.RawMessage
	if err := json.Unmarshal(body, &ms); err != nil {
		return envelope{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if ms == nil {
		return envelope{}, errors.New("not a JSON object")
	}
	env := envelope{ID: ms["id"], Params: ms["params"]}
	if method := ms["method"]; !isNull(method) {
		var s string
		if err := json.Unmarshal(method, &s); err != nil {
			return envelope{}, fmt.Errorf("method: %w", err)
		}
		env.Method = &s
	}
	return env, nil
}

// checkCallParams refuses tools/call params the SDK would reject with an
// unhelpful error (invalid_params, at HTTP 200 on 2025-11-25): not an object,
// a name that is not a string, a _meta that is not an object. Like the SDK it
// looks at every occurrence of a duplicated member (one bad occurrence fails
// the call) and takes the last string name; a null leaves the name as it was.
// That name, the tool the SDK will look up, is returned.
func checkCallParams(raw json.RawMessage) (string, *gateway.Refusal) {
	ms, ok := members(raw)
	if !ok {
		return "", gateway.Refuse(gateway.ReasonInvalidArguments, "tools/call params must be a JSON object")
	}
	name, nameOK, metaOK := "", true, true
	for _, m := range ms {
		switch {
		case isNull(m.value):
		case m.name == "name":
			if err := json.Unmarshal(m.value, &name); err != nil {
				nameOK = false
			}
		case m.name == "_meta":
			// m.value is one valid JSON value: an object if it opens with '{'.
			if m.value[0] != '{' {
				metaOK = false
			}
		}
	}
	if !nameOK || name == "" {
		return "", gateway.Refuse(gateway.ReasonUnknownTool, "tools/call params.name must be a non-empty string")
	}
	if !metaOK {
		return "", gateway.Refuse(gateway.ReasonInvalidArguments, "tools/call params._meta must be a JSON object")
	}
	return name, nil
}
