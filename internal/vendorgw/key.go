package vendorgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where the gateway reads a call's idempotency key (KeyAt.Placement).
const (
	KeyInHeader   = "header"   // an HTTP header, Idempotency-Key unless named
	KeyInParams   = "params"   // a member of the tools/call params beside name and arguments
	KeyInArgument = "argument" // a member inside the tool's arguments
)

// KeyAt says where the gateway reads the key, as public MCP servers differ
// on it.
type KeyAt struct {
	Placement string // "" is KeyInHeader
	// Name is the header (default Idempotency-Key), the params member
	// (default idempotencyKey), or the path of the argument member, its
	// object members joined by dots (default idempotency_key).
	Name string
}

// Check says whether the placement and name are ones a server can read.
func (k KeyAt) Check() error {
	switch k.Placement {
	case "", KeyInHeader, KeyInParams:
	case KeyInArgument:
		for _, seg := range strings.Split(k.name(), ".") {
			if seg == "" {
				return fmt.Errorf("key argument %q: want members joined by dots", k.Name)
			}
		}
	default:
		return fmt.Errorf("key placement %q: want %q, %q or %q", k.Placement, KeyInHeader, KeyInParams, KeyInArgument)
	}
	return nil
}

// KeyName is the header, params member or argument path the key is read
// at, its default when Name is empty.
func (k KeyAt) KeyName() string { return k.name() }

func (k KeyAt) name() string {
	switch {
	case k.Name != "":
		return k.Name
	case k.Placement == KeyInParams:
		return "idempotencyKey"
	case k.Placement == KeyInArgument:
		return "idempotency_key"
	}
	return "Idempotency-Key"
}

// where names the placement in a refusal's message.
func (k KeyAt) where() string {
	switch k.Placement {
	case KeyInParams:
		return "params member"
	case KeyInArgument:
		return "argument"
	}
	return "header"
}

// liftedHeader carries a params key from the HTTP layer to the tool
// handler: go-sdk decodes tools/call params into a struct that drops
// members it does not know, and hands the handler the request's headers.
const liftedHeader = "X-Acme-Lifted-Key"

// LiftParamsKey copies the params key of a tools/call into liftedHeader,
// once per occurrence, after removing any copy a client sent. A server
// reading the key from params (KeyInParams) serves through it, so that
// Take finds the key go-sdk's decoding drops.
func (k KeyAt) LiftParamsKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(liftedHeader)
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "acme: read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string                     `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			if v, ok := msg.Params[k.name()]; ok {
				// Kept raw: the handler refuses what is not a JSON string.
				r.Header.Set(liftedHeader, string(v))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Take reads the call's key where the server looks for it, and the
// arguments the tool gets: with the key inside them, without it (as they
// were, on an error). keys is empty for an unkeyed call; more than one is
// malformed.
func (k KeyAt) Take(req *mcp.CallToolRequest) (keys []string, args json.RawMessage, err error) {
	args = req.Params.Arguments
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	switch k.Placement {
	case KeyInParams:
		for _, v := range h.Values(liftedHeader) {
			key, err := jsonKey(json.RawMessage(v))
			if err != nil {
				return nil, args, fmt.Errorf("params.%s: %w", k.name(), err)
			}
			keys = append(keys, key)
		}
		return keys, args, nil
	case KeyInArgument:
		raw, stripped, found, err := cutMember(args, splitPath(k.name()))
		if err != nil || !found {
			return nil, args, err
		}
		key, err := jsonKey(raw)
		if err != nil {
			return nil, args, fmt.Errorf("arguments.%s: %w", k.name(), err)
		}
		return []string{key}, stripped, nil
	}
	for _, v := range h.Values(k.name()) {
		key, err := parseKey(v)
		if err != nil {
			return nil, args, fmt.Errorf("%s: %w", k.name(), err)
		}
		keys = append(keys, key)
	}
	return keys, args, nil
}

// jsonKey reads a key written as a JSON string: 1 to 255 characters.
func jsonKey(raw json.RawMessage) (string, error) {
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", errors.New("want a JSON string")
	}
	if key == "" || len(key) > 255 {
		return "", fmt.Errorf("want 1 to 255 characters, got %d", len(key))
	}
	return key, nil
}

// cutMember finds the member at path in the arguments object and returns
// its value and the arguments without it. Arguments that are not an
// object, or a path through something else, hold no key: found is false
// and canonical judges the arguments as usual.
func cutMember(args json.RawMessage, path []string) (val, rest json.RawMessage, found bool, err error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, args, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var root any
	if dec.Decode(&root) != nil {
		return nil, args, false, nil
	}
	obj, ok := root.(map[string]any)
	for _, seg := range path[:len(path)-1] {
		if !ok {
			return nil, args, false, nil
		}
		obj, ok = obj[seg].(map[string]any)
	}
	if !ok {
		return nil, args, false, nil
	}
	v, ok := obj[path[len(path)-1]]
	if !ok {
		return nil, args, false, nil
	}
	delete(obj, path[len(path)-1])
	if val, err = json.Marshal(v); err != nil {
		return nil, nil, false, fmt.Errorf("arguments: %w", err)
	}
	if rest, err = json.Marshal(root); err != nil {
		return nil, nil, false, fmt.Errorf("arguments: %w", err)
	}
	return val, rest, true, nil
}

func splitPath(s string) []string { return strings.Split(s, ".") }
