package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// Where a client puts a call's idempotency key (Client.KeyPlacement).
const (
	// KeyInHeader: an HTTP header (Client.KeyHeader), the value a
	// Structured Field string as the IETF Idempotency-Key draft writes it.
	KeyInHeader = "header"
	// KeyInMeta: params._meta[Client.KeyMetaField].
	KeyInMeta = "meta"
	// KeyInParams: a member of the tools/call params beside name and
	// arguments (Client.KeyParam), as a proposed MCP extension had it.
	KeyInParams = "params"
	// KeyInArgument: a member inside the tool's arguments
	// (Client.KeyArgument), where servers whose tools take the key as an
	// input of their own read it.
	KeyInArgument = "argument"
)

// KeyPlacements are the placements a client knows, in the order the
// profile documents them.
var KeyPlacements = []string{KeyInHeader, KeyInMeta, KeyInParams, KeyInArgument}

// The default name of each placement's carrier.
const (
	DefaultKeyHeader   = "Idempotency-Key"
	DefaultKeyMeta     = "idempotencyKey"
	DefaultKeyParam    = "idempotencyKey"
	DefaultKeyArgument = "idempotency_key"
)

// ReservedParams are the tools/call params of MCP itself (both revisions
// the client speaks): a key placed in one of them would change the call.
var ReservedParams = []string{"name", "arguments", "_meta", "task", "inputResponses", "requestState"}

// ReservedHeaders are headers the client sets itself on every call, or a
// call's permit; a key header of the same name would replace one of them.
var ReservedHeaders = []string{
	"Accept", "Content-Type", "Content-Length", "Host", "Mcp-Session-Id", "Mcp-Protocol-Version",
	"Mcp-Method", "Mcp-Name", "X-Permit-Id",
}

// CheckKeyArgument checks a key_argument path: every segment names an
// object member (created when the arguments lack it), so none may be empty.
func CheckKeyArgument(s string) (Path, error) {
	p, err := ParsePath(s)
	if err != nil {
		return nil, err
	}
	if slices.Contains(p, "") {
		return nil, fmt.Errorf("path %q: an empty member name", s)
	}
	return p, nil
}

// placeKey puts key where the client's placement says, into the call's
// params, _meta or headers, and returns the arguments to send: args itself
// unless the key goes inside them. The caller's arguments are never
// changed, so what a call records as its arguments (the history the judge
// reads) stays the operation's arguments without the key, which is also
// what a server must fingerprint.
func (c *Client) placeKey(key string, args any, params, meta map[string]any, h http.Header) any {
	switch c.KeyPlacement {
	case KeyInMeta:
		meta[c.keyField()] = key
	case KeyInParams:
		name := c.KeyParam
		if name == "" {
			name = DefaultKeyParam
		}
		params[name] = key
	case KeyInArgument:
		return c.argumentsWithKey(key, args)
	default:
		h.Set(c.keyHeader(), SFString(key))
	}
	return args
}

func (c *Client) keyHeader() string {
	if c.KeyHeader == "" {
		return DefaultKeyHeader
	}
	return http.CanonicalHeaderKey(c.KeyHeader)
}

// argumentsWithKey is args with key spliced in at KeyArgument. The rest of
// the arguments is sent as given (member order, numbers as written; the
// request's encoder drops whitespace, as it does for any call), since scenarios about argument fingerprints depend
// on those bytes. Arguments that are not an object, or whose path runs
// into a member that is not one, cannot hold the key: they are sent as
// given, keyless. So are arguments that hold a member at the path already:
// a scenario that wrote one means it.
func (c *Client) argumentsWithKey(key string, args any) any {
	path := c.KeyArgument
	if path == "" {
		path = DefaultKeyArgument
	}
	p, err := CheckKeyArgument(path)
	if err != nil {
		return args
	}
	raw, ok := args.(json.RawMessage)
	if !ok {
		if raw, err = json.Marshal(args); err != nil {
			return args
		}
	}
	val, _ := json.Marshal(key)
	out, ok := spliceMember(raw, p, val)
	if !ok {
		return args
	}
	return json.RawMessage(out)
}

// spliceMember inserts the member at path, holding val, as the first
// member of its object in raw, creating the objects on the way that raw
// lacks. It reports false when raw is not an object, a member on the way
// is not one, or the member is there already.
func spliceMember(raw []byte, path Path, val []byte) ([]byte, bool) {
	open := bytes.IndexByte(raw, '{')
	if open < 0 || len(bytes.TrimSpace(raw[:open])) > 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	empty := !dec.More()
	// Of a repeated member the last counts, as servers decoding into a
	// map read it.
	start, end := -1, -1
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		from := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if t == path[0] {
			to := int(dec.InputOffset())
			start = int(from) + bytes.Index(raw[from:to], bytes.TrimSpace(v))
			end = start + len(bytes.TrimSpace(v))
		}
	}
	if start >= 0 {
		if len(path) == 1 {
			return nil, false
		}
		inner, ok := spliceMember(raw[start:end], path[1:], val)
		if !ok {
			return nil, false
		}
		return slices.Concat(raw[:start], inner, raw[end:]), true
	}
	member := val
	for i := len(path) - 1; i >= 1; i-- {
		name, _ := json.Marshal(path[i])
		member = slices.Concat([]byte("{"), name, []byte(":"), member, []byte("}"))
	}
	name, _ := json.Marshal(path[0])
	member = slices.Concat(name, []byte(":"), member)
	if !empty {
		member = append(member, ',')
	}
	return slices.Concat(raw[:open+1], member, raw[open+1:]), true
}
