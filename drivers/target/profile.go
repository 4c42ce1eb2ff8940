package target

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Profile describes an external gateway: where its endpoints are, where the
// key goes, how it spells refusals, what it offers, and the credentials and
// tools the operator set up when it has no control API. See
// testdata/profile.example.json and docs/profile.md; docs/profile.schema.json
// states the same rules as JSON Schema.
type Profile struct {
	Name    string   `json:"name,omitempty"`
	Comment string   `json:"comment,omitempty"`
	URLs    []string `json:"urls,omitempty"`
	// ProtocolVersion pins the MCP revision ("2025-11-25" or "2026-07-28");
	// "" means negotiate the newest the target supports.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// KeyPlacement is where the idempotency key goes (wire.KeyPlacements):
	// "header" (default), "meta", "params" or "argument". Each has the
	// name of its carrier: KeyHeader, KeyMetaField, KeyParam, KeyArgument.
	KeyPlacement string `json:"key_placement,omitempty"`
	KeyHeader    string `json:"key_header,omitempty"`     // header placement; default "Idempotency-Key"
	KeyMetaField string `json:"key_meta_field,omitempty"` // default "idempotencyKey"
	KeyParam     string `json:"key_param,omitempty"`      // params placement; default "idempotencyKey"
	// KeyArgument is the argument placement's path inside the arguments
	// (wire.Path syntax, every segment an object member); default
	// "idempotency_key". The harness leaves that member out of the
	// arguments it records and compares, as the gateway must leave it out
	// of its fingerprint.
	KeyArgument string `json:"key_argument,omitempty"`
	ReceiptPath string `json:"receipt_path,omitempty"` // wire.Path syntax
	// RefusalReceiptPath is where a refusal names the receipt of the debit
	// it is about (outcome_unknown's), in the JSON-RPC message; default
	// wire.DefaultRefusalReceiptPath.
	RefusalReceiptPath string              `json:"refusal_receipt_path,omitempty"`
	Reasons            map[string][]Reason `json:"reasons,omitempty"`
	Auth               Auth                `json:"auth,omitzero"`
	ControlURL         string              `json:"control_url,omitempty"`
	ControlToken       string              `json:"control_token,omitempty"`
	// Capabilities the gateway offers. Empty with a control_url: read them
	// from GET /capabilities (Target.ResolveCapabilities).
	Capabilities []string    `json:"capabilities,omitempty"`
	Credentials  Credentials `json:"credentials,omitzero"`
	// UpstreamTool is the legacy spelling of Tools.Write.Name; after
	// validation the two agree, so callers may read either.
	UpstreamTool string `json:"upstream_tool,omitempty"`
	// UnkeyedPolicy is what the gateway does with a mutating call that has
	// no idempotency key: UnkeyedDerived (default) or UnkeyedRefuse.
	UnkeyedPolicy string `json:"unkeyed_policy,omitempty"`
	Tools         Tools  `json:"tools,omitzero"`
	// BodyLimit is the gateway's request body limit in bytes; default
	// DefaultBodyLimit.
	BodyLimit int64    `json:"body_limit_bytes,omitempty"`
	Identity  Identity `json:"identity,omitzero"`
	// RetryAfter says the gateway sends a Retry-After header on every
	// in-progress answer (IETF draft-ietf-httpapi-idempotency-key-header's
	// 409): an in-progress answer without one is then a violated check.
	// The harness honours a Retry-After whether or not this is set.
	RetryAfter bool `json:"retry_after,omitempty"`
	// ReplayMarker is how the gateway marks a replayed result; nil leaves
	// the receipt's own "replayed" member, when it has one, as the mark.
	ReplayMarker *wire.ReplayMarker `json:"replay_marker,omitempty"`
	// Effects says how the target's own read tool shows a write's
	// effects, for a target whose write tool is the side effect (no
	// upstream to put the probe behind): the dispatch checks are then
	// made by calling it (capability "effects").
	Effects *Effects `json:"effects,omitempty"`
}

// Effects is the read-tool observer: the write tool's arguments, with
// TokenPlaceholder where the harness puts each operation's fresh token,
// and the read call that tells how many effects carry a token.
type Effects struct {
	// WriteArguments replace a scenario's arguments for tools.write: every
	// TokenPlaceholder in its strings becomes the operation's token, every
	// ExtraPlaceholder the scenario's other arguments as compact JSON
	// (without one, those are added as members of their own), so two
	// calls the scenario means to differ still differ.
	WriteArguments json.RawMessage `json:"write_arguments"`
	Read           EffectsRead     `json:"read"`
}

// EffectsRead is one call of the target's read tool.
type EffectsRead struct {
	Tool string `json:"tool"`
	// Arguments, with TokenPlaceholder in a string: the read of one token.
	Arguments json.RawMessage `json:"arguments"`
	// Count locates, in the JSON-RPC response (wire.Path syntax, like
	// receipt_path), a number of effects or a list whose length is that
	// number.
	Count string `json:"count"`
	// LagMS is how long after a write's answer its effect may take to
	// show in the read (a replica, a queue); nil: DefaultEffectsLag. A
	// count below the writes answered is re-read until it has passed, and
	// a rise within it is the lag's, not a late dispatch.
	LagMS *int `json:"lag_ms,omitempty"`
}

// DefaultEffectsLag is effects.read.lag_ms left out; MaxEffectsLagMS the
// most it may be.
const (
	DefaultEffectsLag = 2 * time.Second
	MaxEffectsLagMS   = 60000
)

// Lag is how long a write's effect may take to show in the read.
func (e *Effects) Lag() time.Duration {
	if e == nil {
		return 0
	}
	if e.Read.LagMS == nil {
		return DefaultEffectsLag
	}
	return time.Duration(*e.Read.LagMS) * time.Millisecond
}

// Placeholders of the effects templates.
const (
	TokenPlaceholder = "{token}"
	ExtraPlaceholder = "{extra}"
)

// WriteArgs renders the write template for a scenario's arguments: their
// "token" member fills TokenPlaceholder, the rest ExtraPlaceholder (or is
// added beside the template's members). Arguments that are not an object
// are sent as given: a scenario about malformed arguments means them.
//
// Nothing goes through map[string]any: the template keeps its member
// order, every number its digits, every member its place even when two
// share a name; the scenario's members added beside the template's come in
// the scenario's order, as written. ExtraPlaceholder's text is the one
// place members are sorted (by name, stably): it is one text per set of
// arguments, so a retry that sends them in another order is the same
// write, as a gateway's fingerprint must hold it.
func (e *Effects) WriteArgs(args any) any {
	raw, ok := args.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			return args
		}
		raw = b
	}
	in, err := members(raw)
	if err != nil {
		return args
	}
	token := ""
	var rest []member
	for _, m := range in {
		if m.name == "token" {
			if token == "" {
				_ = json.Unmarshal(m.value, &token)
			}
			continue
		}
		rest = append(rest, m)
	}
	extra := ""
	if len(rest) > 0 {
		extra = string(canonical(object(rest)))
	}
	var beside []member
	if !bytes.Contains(e.WriteArguments, []byte(ExtraPlaceholder)) {
		beside = rest
	}
	out, err := fillTemplate(e.WriteArguments, token, extra, beside)
	if err != nil {
		return args
	}
	return json.RawMessage(out)
}

// ReadArgs are the read call's arguments for token.
func (e *Effects) ReadArgs(token string) (json.RawMessage, error) {
	b, err := fillTemplate(e.Read.Arguments, token, "", nil)
	if err != nil {
		return nil, fmt.Errorf("effects.read.arguments: %w", err)
	}
	return b, nil
}

// member is one member of a JSON object, its value as written (compacted).
type member struct {
	name  string
	value json.RawMessage
}

// members are the members of a JSON object in their order, duplicates
// kept; an error for anything but an object.
func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("member name: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("member %v: %w", k, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return nil, fmt.Errorf("member %v: %w", k, err)
		}
		out = append(out, member{name: k.(string), value: c.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("object end: %w", err)
	}
	return out, nil
}

// canonical is a JSON value with the members of every object in it sorted
// by name (stably: members sharing a name keep their order), everything
// else as written: the same arguments in another member order, at any
// depth, are one text, and no number loses a digit.
func canonical(raw []byte) []byte {
	switch t := bytes.TrimSpace(raw); {
	case len(t) > 0 && t[0] == '{':
		ms, err := members(t)
		if err != nil {
			return raw
		}
		for i := range ms {
			ms[i].value = canonical(ms[i].value)
		}
		slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
		return object(ms)
	case len(t) > 0 && t[0] == '[':
		var elems []json.RawMessage
		if json.Unmarshal(t, &elems) != nil {
			return raw
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(canonical(e))
		}
		b.WriteByte(']')
		return b.Bytes()
	}
	return raw
}

// object writes members as a compact JSON object, in their order.
func object(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(m.name))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// jsonString is s as a JSON string, without encoding/json's HTML escapes
// (a template's "<" stays "<").
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// fillTemplate writes the template with the placeholders of its string
// values replaced, token by token, so nothing of it but those strings
// changes; beside are members appended to a top-level object whose own
// members do not name them.
func fillTemplate(tmpl []byte, token, extra string, beside []member) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(tmpl))
	dec.UseNumber()
	type level struct {
		object bool
		n      int // values (or members) written so far
		key    bool
	}
	var stack []*level
	var out bytes.Buffer
	own := map[string]bool{} // the top-level object's member names
	replace := strings.NewReplacer(TokenPlaceholder, token, ExtraPlaceholder, extra)
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && !top.key && t != json.Delim('}')
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			if d == '}' && len(stack) == 1 {
				for _, m := range beside {
					if own[m.name] {
						continue // the template's member wins
					}
					if top.n > 0 {
						out.WriteByte(',')
					}
					out.Write(jsonString(m.name))
					out.WriteByte(':')
					out.Write(m.value)
					top.n++
				}
			}
			out.WriteRune(rune(d))
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].n++
			}
			continue
		}
		// The separator before this token: a comma between values or
		// members, a colon between a member's name and its value.
		if top != nil {
			switch {
			case top.object && top.key:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
		}
		switch v := t.(type) {
		case json.Delim:
			out.WriteRune(rune(v))
			if top != nil && top.object {
				top.key = false
			}
			stack = append(stack, &level{object: v == '{'})
			continue
		case string:
			if isKey {
				out.Write(jsonString(v))
				top.key = true
				if len(stack) == 1 {
					own[v] = true
				}
				continue
			}
			out.Write(jsonString(replace.Replace(v)))
		case json.Number:
			out.WriteString(v.String())
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
		if top != nil {
			top.key = false
			top.n++
		}
	}
	return out.Bytes(), nil
}

// validateEffects checks the read-tool observer: both templates objects
// holding TokenPlaceholder, a read tool of its own, a count path.
func (p *Profile) validateEffects(bad func(string, ...any)) {
	e := p.Effects
	if e == nil {
		if slices.Contains(p.Capabilities, CapEffects) {
			bad("capabilities: %q needs an effects block", CapEffects)
		}
		return
	}
	template := func(at string, raw *json.RawMessage) {
		var obj map[string]any
		// Compacted, so a profile reads back as written (whitespace is
		// never part of a template's meaning).
		var b bytes.Buffer
		if json.Compact(&b, *raw) == nil {
			*raw = b.Bytes()
		}
		switch raw := *raw; {
		case len(bytes.TrimSpace(raw)) == 0:
			bad("%s: missing (an object with %q where the token goes)", at, TokenPlaceholder)
		case json.Unmarshal(raw, &obj) != nil || obj == nil:
			bad("%s: want a JSON object", at)
		case !bytes.Contains(raw, []byte(TokenPlaceholder)):
			// Without the token, the read counts every write, not the
			// operation's: a count of one operation could not be made.
			bad("%s: holds no %q: every operation must be told apart by its token", at, TokenPlaceholder)
		}
	}
	template("effects.write_arguments", &e.WriteArguments)
	template("effects.read.arguments", &e.Read.Arguments)
	switch {
	case strings.TrimSpace(e.Read.Tool) == "":
		bad("effects.read.tool: empty")
	case p.Tools.Write != nil && e.Read.Tool == p.Tools.Write.Name:
		bad("effects.read.tool %q is tools.write: the read must be a tool of its own", e.Read.Tool)
	}
	if e.Read.Count == "" {
		bad("effects.read.count: empty (a path to a number, or to a list whose length counts)")
	} else if _, err := wire.ParsePath(e.Read.Count); err != nil {
		bad("effects.read.count: %v", err)
	}
	if p.Tools.Write == nil {
		bad("effects: needs tools.write (the tool whose effects the read shows)")
	}
	if slices.Contains(p.Capabilities, control.CapUpstream) {
		// One observer per run: a write tool that reached the probe would
		// not need its effects read back, and the counts must not mix.
		bad("effects: and capability \"upstream\" both given; the write tool either reaches the probe or shows its effects")
	}
}

// Unkeyed policies: a gateway derives a key for an unkeyed mutating call
// (so a retry inside its window replays), or refuses the call.
const (
	UnkeyedDerived = "derived"
	UnkeyedRefuse  = "refuse"
)

// DefaultBodyLimit is the reference gateway's request body limit (1 MiB).
const DefaultBodyLimit int64 = 1 << 20

// Tools are the gateway's tools the scenarios use, by role; each routes to
// the harness's upstream probe (probe.write for write, write_other and
// approval, probe.read for read_only), so the harness counts dispatches
// itself.
type Tools struct {
	Write      *ToolRef `json:"write,omitempty"`       // a mutating tool
	WriteOther *ToolRef `json:"write_other,omitempty"` // a second mutating tool (key-scope scenarios)
	ReadOnly   *ToolRef `json:"read_only,omitempty"`   // a read-only tool the gateway meters
	Approval   *ToolRef `json:"approval,omitempty"`    // an approval-gated mutating tool
}

// ToolRef is one gateway tool.
type ToolRef struct {
	Name  string `json:"name"`
	Price int64  `json:"price,omitempty"` // credits per call, when the operator knows it
}

// Tool roles, the JSON names of Tools' fields.
const (
	RoleWrite      = "write"
	RoleWriteOther = "write_other"
	RoleReadOnly   = "read_only"
	RoleApproval   = "approval"
)

// roles pairs each role with its slot, in the order of Tools.
func (t *Tools) roles() []struct {
	role string
	ref  **ToolRef
} {
	return []struct {
		role string
		ref  **ToolRef
	}{{RoleWrite, &t.Write}, {RoleWriteOther, &t.WriteOther}, {RoleReadOnly, &t.ReadOnly}, {RoleApproval, &t.Approval}}
}

// Tool is the operator's tool for role (RoleWrite, ...). RoleWrite falls
// back to UpstreamTool for a profile built in Go without validation.
func (p *Profile) Tool(role string) (ToolRef, bool) {
	for _, r := range p.Tools.roles() {
		if r.role == role && *r.ref != nil {
			return **r.ref, true
		}
	}
	if role == RoleWrite && p.UpstreamTool != "" {
		return ToolRef{Name: p.UpstreamTool}, true
	}
	return ToolRef{}, false
}

// Auth says how the API key and principal token are sent.
type Auth struct {
	Header          string  `json:"header,omitempty"`           // default "Authorization"
	Prefix          *string `json:"prefix,omitempty"`           // default "Bearer " with Authorization, "" otherwise
	PrincipalHeader string  `json:"principal_header,omitempty"` // default "X-Principal-Token"
}

// Credentials are fixtures the operator made by hand.
type Credentials struct {
	// APIKeys all belong to WalletID; a second one enables the same-wallet
	// key-scope scenario.
	APIKeys  []string `json:"api_keys,omitempty"`
	WalletID string   `json:"wallet_id,omitempty"`
	// PrincipalTokens maps a scenario principal name ("alice") to a token
	// the gateway accepts for it.
	PrincipalTokens map[string]string `json:"principal_tokens,omitempty"`
	// OtherWallet is a key of a second wallet (key-scope scenarios).
	OtherWallet *WalletCredentials `json:"other_wallet,omitempty"`
}

// WalletCredentials is an API key and the wallet it belongs to.
type WalletCredentials struct {
	WalletID string `json:"wallet_id,omitempty"`
	APIKey   string `json:"api_key"`
}

// Identity says where principal tokens come from besides
// credentials.principal_tokens.
type Identity struct {
	// HarnessIdP: the gateway trusts the harness's identity provider
	// (started with a pinned --idp-addr and --idp-key), so the harness signs
	// principal tokens itself for the subjects below.
	HarnessIdP bool `json:"harness_idp,omitempty"`
	// Subjects maps a scenario principal name ("alice") to the subject the
	// gateway knows.
	Subjects map[string]string `json:"subjects,omitempty"`
}

// PrincipalToken is the operator's token for scenario principal name, from
// credentials.principal_tokens.
func (p *Profile) PrincipalToken(name string) (string, bool) {
	t, ok := p.Credentials.PrincipalTokens[name]
	return t, ok && t != ""
}

// Subject is the subject the harness signs into principal name's token
// under identity.harness_idp: its identity.subjects entry, else the name.
func (p *Profile) Subject(name string) string {
	if s, ok := p.Identity.Subjects[name]; ok {
		return s
	}
	return name
}

// Reason is one way a gateway spells a refusal: its data.reason string, a
// JSON-RPC error code (written as a JSON number), or an HTTP status
// (written {"http": 400}) for refusals a gateway's HTTP stack answers before
// any JSON-RPC, such as a batch or malformed JSON. An HTTP status may name
// a text its body must hold too ({"http": 409, "body": "busy"}): gateways
// that follow the IETF idempotency-key draft answer several refusals with
// one status (a 400 for a missing key and for a malformed one), so the
// status alone would mistake one for the other.
type Reason struct {
	Reason     string
	Code       int
	IsCode     bool
	HTTPStatus int
	// Body, with HTTPStatus, is a substring the answer's body must contain
	// (the raw bytes as received, an event stream's framing included).
	Body string
}

// UnmarshalJSON accepts a string (a reason), an integer (a code) or
// {"http": status} with an optional "body".
func (r *Reason) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		if err := json.Unmarshal(b, &r.Reason); err != nil {
			return err
		}
		if r.Reason == "" {
			return errors.New("empty reason")
		}
		return nil
	case len(b) > 0 && b[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		raw, ok := m["http"]
		body, hasBody := m["body"]
		if len(m) != 1+btoi(hasBody) || !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return fmt.Errorf("reason %s: want {\"http\": status} with an optional \"body\" and nothing else", b)
		}
		if err := json.Unmarshal(raw, &r.HTTPStatus); err != nil {
			return fmt.Errorf("reason %s: http status: want an integer", b)
		}
		if hasBody {
			// A body text that is not a string, or empty, would match
			// every answer of the status: refused rather than ignored.
			if err := json.Unmarshal(body, &r.Body); err != nil || r.Body == "" {
				return fmt.Errorf("reason %s: body: want a non-empty string the answer's body contains", b)
			}
		}
		return nil
	case bytes.Equal(b, []byte("null")):
		// encoding/json would leave a zero code behind, which matches nothing.
		return errors.New("reason null: want a string, an integer code or {\"http\": status}")
	}
	if err := json.Unmarshal(b, &r.Code); err != nil {
		return fmt.Errorf("reason %s: want a string, an integer code or {\"http\": status}", b)
	}
	r.IsCode = true
	return nil
}

// MarshalJSON writes the reason back as it was read.
func (r Reason) MarshalJSON() ([]byte, error) {
	switch {
	case r.IsCode:
		return json.Marshal(r.Code)
	case r.Reason == "" && r.Body != "":
		return json.Marshal(map[string]any{"http": r.HTTPStatus, "body": r.Body})
	case r.Reason == "":
		return json.Marshal(map[string]int{"http": r.HTTPStatus})
	}
	return json.Marshal(r.Reason)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// KnownReasons are the reasons of docs/wire.md, both tables, in its order; a
// profile may map only these (TestKnownReasonsMatchDocs holds the two
// together).
var KnownReasons = []string{
	"idempotency_key_required", "idempotency_in_progress", "idempotency_key_reused",
	"unauthenticated", "principal_invalid", "principal_denied", "insufficient_funds",
	"permit_invalid", "permit_exhausted", "permit_expired", "dispatch_failed",
	"response_failed", "outcome_unknown", "unknown_tool", "invalid_arguments", "idempotency_key_invalid",
	"batch_not_supported", "parse_error", "request_too_large", "internal_error",
	// Transport reasons: refusals of requests that never reached a gateway's
	// core, which a vendor's HTTP layer may spell its own way.
	"unsupported_media_type", "not_acceptable", "method_not_allowed", "host_forbidden",
	"session_required", "session_not_found", "session_forbidden", "session_not_initialized",
	"request_id_in_flight", "resumption_unsupported", "stream_conflict", "invalid_request",
	"method_not_found", "invalid_params", "protocol_version_unsupported", "protocol_meta_invalid",
	"protocol_headers_missing", "protocol_headers_mismatch", "client_capabilities_missing",
	"request_timeout", "session_limit_reached",
	"protocol_error",
}

// contractReasons are the answers of the retry contract itself (docs/wire.md's
// table of reason codes): what each tells a client (retry, give up, a
// receipt to keep) is its own, so an HTTP status must never stand for one
// of them and anything else.
var contractReasons = []string{
	"idempotency_key_required", "idempotency_in_progress", "idempotency_key_reused",
	"unauthenticated", "principal_invalid", "principal_denied", "insufficient_funds",
	"permit_invalid", "permit_exhausted", "permit_expired", "dispatch_failed",
	"response_failed", "outcome_unknown",
}

// retryableTransport are the transport refusals a client sends again.
var retryableTransport = []string{"request_id_in_flight", "request_timeout", "session_limit_reached"}

// Stable reasons of the HTTP mapping problems, at the end of each message
// (errors.Is finds them in ParseProfile's error).
var (
	// ErrHTTPOverlap: one answer would match HTTP mappings of two meanings.
	ErrHTTPOverlap = errors.New("reason_http_overlap")
	// ErrHTTP5xx: a contract answer mapped to an HTTP 5xx.
	ErrHTTP5xx = errors.New("reason_http_5xx")
)

// meaning is what an answer of reason name tells a client: a contract
// answer its own; the other refusals of a request that never reached the
// gateway's core only whether to send it again, so a gateway's HTTP stack
// may answer a batch and malformed JSON with one bare 400.
func meaning(name string) string {
	switch {
	case slices.Contains(contractReasons, name):
		return name
	case slices.Contains(retryableTransport, name):
		return "a retryable refusal"
	}
	return "a final refusal"
}

// validateHTTPReasons refuses HTTP mappings no answer can be judged by: a
// contract answer at a 5xx status (what a crash, or a proxy in front,
// answers: a crash would pass for the refusal) and two mappings of
// different meanings one answer matches both of (the same status, and no
// body text, or one text inside the other): that answer would pass for
// either, so a check expecting one could not fail on the other. Each
// problem names the mapping's line and column in b.
func (p *Profile) validateHTTPReasons(b []byte, bad func(string, ...any)) {
	type mapping struct {
		name string
		i    int
		r    Reason
	}
	var ms []mapping
	for _, name := range slices.Sorted(maps.Keys(p.Reasons)) {
		for i, r := range p.Reasons[name] {
			if !r.IsCode && r.Reason == "" {
				ms = append(ms, mapping{name, i, r})
			}
		}
	}
	at := func(m mapping) string {
		return position(b, nil, valueAt(b, "reasons", m.name, m.i)+1)
	}
	spell := func(m mapping) string {
		if m.r.Body != "" {
			return fmt.Sprintf("reasons.%s[%d] {\"http\": %d, \"body\": %q}", m.name, m.i, m.r.HTTPStatus, m.r.Body)
		}
		return fmt.Sprintf("reasons.%s[%d] {\"http\": %d}", m.name, m.i, m.r.HTTPStatus)
	}
	for k, m := range ms {
		if m.r.HTTPStatus >= 500 && slices.Contains(contractReasons, m.name) {
			bad("%s: %s: a 5xx for an answer of the retry contract: any crash or proxy in front answers a 5xx, which would pass for %s; map the gateway's own reason or code instead (%w)",
				at(m), spell(m), m.name, ErrHTTP5xx)
		}
		for _, o := range ms[:k] {
			if o.r.HTTPStatus != m.r.HTTPStatus || meaning(o.name) == meaning(m.name) || !bodiesOverlap(o.r.Body, m.r.Body) {
				continue
			}
			bad("%s: %s overlaps %s: one answer would match both, and pass for %s and for %s; give each a body text of its own (%w)",
				at(m), spell(m), spell(o), meaning(m.name), meaning(o.name), ErrHTTPOverlap)
		}
	}
}

// bodiesOverlap: an answer holding one body text holds the other (no text
// matches any body).
func bodiesOverlap(a, b string) bool {
	return strings.Contains(a, b) || strings.Contains(b, a)
}

// valueAt is the offset in b of the first byte of the value at path
// (member names and element indexes), or of the document's end when b
// has no such value: where a problem of that value is shown.
func valueAt(b []byte, path ...any) int64 {
	dec := json.NewDecoder(bytes.NewReader(b))
	start := func() int64 {
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.IndexByte(" \t\r\n:,", b[off]) >= 0 {
			off++
		}
		return off
	}
	var skip func() bool
	skip = func() bool { // one value; false at a decoding error
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
			for dec.More() {
				if d == '{' {
					if _, err := dec.Token(); err != nil {
						return false
					}
				}
				if !skip() {
					return false
				}
			}
			_, err := dec.Token()
			return err == nil
		}
		return true
	}
	for _, seg := range path {
		t, err := dec.Token()
		if err != nil {
			return int64(len(b))
		}
		found := false
		switch d, _ := t.(json.Delim); {
		case d == '{':
			name, _ := seg.(string)
			for !found && dec.More() {
				k, err := dec.Token()
				if err != nil {
					return int64(len(b))
				}
				if found = k == name; !found && !skip() {
					return int64(len(b))
				}
			}
		case d == '[':
			idx, _ := seg.(int)
			for i := 0; !found && dec.More(); i++ {
				if found = i == idx; !found && !skip() {
					return int64(len(b))
				}
			}
		}
		if !found {
			return int64(len(b))
		}
	}
	return start()
}

// controlCaps are the capabilities that only a control API can provide.
var controlCaps = []string{
	control.CapFixtures, control.CapLedger, control.CapDispatchLog, control.CapClock,
	control.CapFaults, control.CapPrincipals, control.CapLocks, control.CapSettings,
}

// CapPrincipalTokens: the harness holds principal tokens the gateway
// accepts (credentials.principal_tokens, or identity.harness_idp), so
// scenarios with several principals can run without a control API.
const CapPrincipalTokens = "principal-tokens"

// CapEffects: the profile's effects block says how the target's read tool
// shows its write tool's effects.
const CapEffects = "effects"

// KnownCapabilities are every capability name a profile may list.
var KnownCapabilities = append(slices.Clone(controlCaps), control.CapUpstream, CapPrincipalTokens, CapEffects)

// LoadProfile reads and validates a profile file; an unknown field is an
// error, so a typo cannot silently drop a setting.
func LoadProfile(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// position is where in b a decoding error is, as "line L, column C": the
// error's own offset where it has one, else how far the decoder read.
func position(b []byte, err error, read int64) string {
	off := read
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	// The offset counts the bytes read, the offending one (or the value's
	// last) included.
	at := min(max(off-1, 0), int64(len(b)))
	line := 1 + bytes.Count(b[:at], []byte("\n"))
	col := at - int64(bytes.LastIndexByte(b[:at], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// ParseProfile decodes, validates and fills the defaults of a profile. A
// profile with several problems gets them all, joined (errors.Join).
func ParseProfile(b []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", position(b, err, dec.InputOffset()), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: data after the profile object")
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	checkMembers(doc, reflect.TypeFor[Profile](), "", bad)
	given, _ := doc.(map[string]any)
	p.validate(given, bad)
	p.validateHTTPReasons(b, bad)
	if p.Effects != nil && p.Effects.Read.LagMS != nil {
		if ms := *p.Effects.Read.LagMS; ms < 0 || ms > MaxEffectsLagMS {
			bad("%s: effects.read.lag_ms %d: want 0..%d (milliseconds)", position(b, nil, valueAt(b, "effects", "read", "lag_ms")+1), ms, MaxEffectsLagMS)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &p, nil
}

// checkMembers walks the document beside the Go type it filled, for what
// encoding/json forgives and the schema does not: a member name in another
// case ("URLS" fills urls) and null (it leaves a field unset, so a template
// left half filled in would pass).
func checkMembers(v any, t reflect.Type, at string, bad func(string, ...any)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := at
	if name == "" {
		name = "profile"
	}
	if v == nil {
		bad("%s: null (leave the member out instead)", name)
		return
	}
	if t == reflect.TypeFor[Reason]() {
		return // its UnmarshalJSON reads it strictly
	}
	switch t.Kind() {
	case reflect.Struct:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			f, ok := jsonField(t, k)
			if !ok {
				where := ""
				if at != "" {
					where = at + ": "
				}
				if f, ok := jsonFieldFold(t, k); ok {
					bad("%sunknown field %q (member names are case-sensitive: %q)", where, k, f)
				} else {
					bad("%sunknown field %q", where, k)
				}
				continue
			}
			checkMembers(m[k], f.Type, join(at, k), bad)
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			checkMembers(m[k], t.Elem(), join(at, k), bad)
		}
	case reflect.Slice:
		s, _ := v.([]any)
		for i, e := range s {
			checkMembers(e, t.Elem(), fmt.Sprintf("%s[%d]", name, i), bad)
		}
	}
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// jsonField is the field of struct t whose JSON name is exactly name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range fields(t) {
		if jsonName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func jsonFieldFold(t reflect.Type, name string) (string, bool) {
	for f := range fields(t) {
		if strings.EqualFold(jsonName(f), name) {
			return jsonName(f), true
		}
	}
	return "", false
}

func fields(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && jsonName(f) != "-" && !yield(f) {
				return
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// validate checks the profile and fills its defaults; given is the decoded
// document, to tell a member written as 0 from one left out.
func (p *Profile) validate(given map[string]any, bad func(string, ...any)) {
	for i, u := range p.URLs {
		if err := checkURL(u); err != nil {
			bad("urls[%d]: %v", i, err)
		}
	}
	switch p.ProtocolVersion {
	case "", wire.V20251125, wire.V20260728: // "": negotiated
	default:
		bad("protocol_version %q: want %q or %q, or leave it out to negotiate", p.ProtocolVersion, wire.V20251125, wire.V20260728)
	}
	p.validateKey(bad)
	if p.ReceiptPath == "" {
		p.ReceiptPath = wire.DefaultReceiptPath
	} else if _, err := wire.ParsePath(p.ReceiptPath); err != nil {
		bad("receipt_path: %v", err)
	}
	if p.RefusalReceiptPath == "" {
		p.RefusalReceiptPath = wire.DefaultRefusalReceiptPath
	} else if _, err := wire.ParsePath(p.RefusalReceiptPath); err != nil {
		bad("refusal_receipt_path: %v", err)
	}
	switch p.UnkeyedPolicy {
	case "":
		p.UnkeyedPolicy = UnkeyedDerived
	case UnkeyedDerived, UnkeyedRefuse:
	default:
		bad("unkeyed_policy %q: want %q or %q", p.UnkeyedPolicy, UnkeyedDerived, UnkeyedRefuse)
	}
	if _, ok := given["body_limit_bytes"]; ok && p.BodyLimit <= 0 {
		bad("body_limit_bytes %d: want a positive number of bytes", p.BodyLimit)
	} else if p.BodyLimit == 0 {
		p.BodyLimit = DefaultBodyLimit
	}
	for _, name := range slices.Sorted(maps.Keys(p.Reasons)) {
		rs := p.Reasons[name]
		if !slices.Contains(KnownReasons, name) {
			bad("reasons: unknown reason %q (known: %s)", name, strings.Join(KnownReasons, ", "))
		}
		if len(rs) == 0 {
			bad("reasons.%s: empty list", name)
		}
		for i, r := range rs {
			switch {
			case r.IsCode && (r.Code < math.MinInt32 || r.Code > math.MaxInt32):
				bad("reasons.%s[%d]: code %d: want a 32-bit integer", name, i, r.Code)
			case !r.IsCode && r.Reason == "" && (r.HTTPStatus < 400 || r.HTTPStatus > 599):
				bad("reasons.%s[%d]: http status %d: want 400..599", name, i, r.HTTPStatus)
			}
		}
	}
	if p.Auth.Header != "" && !isToken(p.Auth.Header) {
		bad("auth.header %q: not a header name", p.Auth.Header)
	}
	if p.Auth.PrincipalHeader != "" && !isToken(p.Auth.PrincipalHeader) {
		bad("auth.principal_header %q: not a header name", p.Auth.PrincipalHeader)
	}
	if p.ControlURL != "" {
		if err := checkURL(p.ControlURL); err != nil {
			bad("control_url: %v", err)
		}
	} else if p.ControlToken != "" {
		bad("control_token without control_url")
	}
	if m := p.ReplayMarker; m != nil {
		if err := m.Check(); err != nil {
			bad("replay_marker: %v", err)
		} else if m.Value == "" {
			m.Value = wire.DefaultReplayValue
		}
	}
	p.validateTools(bad)
	p.validateEffects(bad)
	p.validateCredentials(bad)
	for _, c := range p.Capabilities {
		switch {
		case !slices.Contains(KnownCapabilities, c):
			bad("capabilities: unknown capability %q (known: %s)", c, strings.Join(KnownCapabilities, ", "))
		case p.ControlURL == "" && slices.Contains(controlCaps, c):
			bad("capabilities: %q needs a control_url", c)
		case c == control.CapUpstream && p.ControlURL == "" && p.Tools.Write == nil:
			bad("capabilities: \"upstream\" without a control API needs tools.write (or upstream_tool)")
		case c == CapPrincipalTokens && !p.Identity.HarnessIdP && len(p.Credentials.PrincipalTokens) == 0:
			bad("capabilities: %q needs identity.harness_idp or credentials.principal_tokens", c)
		}
	}
}

// validateKey checks the key placement and fills its carrier's default
// name. A carrier of another placement than the one in force is refused:
// written without key_placement, it would be ignored, and every call sent
// with its key where the gateway does not look. key_meta_field is the
// exception, always filled as it always was.
func (p *Profile) validateKey(bad func(string, ...any)) {
	if p.KeyPlacement == "" {
		p.KeyPlacement = wire.KeyInHeader
	}
	if !slices.Contains(wire.KeyPlacements, p.KeyPlacement) {
		bad("key_placement %q: want one of %s", p.KeyPlacement, quoted(wire.KeyPlacements))
	}
	for _, c := range []struct {
		member, placement string
		name              *string
	}{
		{"key_header", wire.KeyInHeader, &p.KeyHeader},
		{"key_param", wire.KeyInParams, &p.KeyParam},
		{"key_argument", wire.KeyInArgument, &p.KeyArgument},
	} {
		if *c.name != "" && p.KeyPlacement != c.placement {
			bad("%s %q: only for key_placement %q (key_placement is %q)", c.member, *c.name, c.placement, p.KeyPlacement)
		}
	}
	if p.KeyMetaField == "" {
		p.KeyMetaField = wire.DefaultKeyMeta
	}
	switch p.KeyPlacement {
	case wire.KeyInHeader:
		if p.KeyHeader == "" {
			p.KeyHeader = wire.DefaultKeyHeader
		}
		p.validateKeyHeader(bad)
	case wire.KeyInParams:
		if p.KeyParam == "" {
			p.KeyParam = wire.DefaultKeyParam
		}
		if slices.Contains(wire.ReservedParams, p.KeyParam) {
			bad("key_param %q: a tools/call param of MCP itself (%s); name another", p.KeyParam, quoted(wire.ReservedParams))
		}
	case wire.KeyInArgument:
		if p.KeyArgument == "" {
			p.KeyArgument = wire.DefaultKeyArgument
		}
		if _, err := wire.CheckKeyArgument(p.KeyArgument); err != nil {
			bad("key_argument: %v", err)
		}
	}
}

// KeyWhere says where the harness puts a call's idempotency key, as
// profile check and doctor print it.
func (p *Profile) KeyWhere() string {
	switch p.KeyPlacement {
	case wire.KeyInMeta:
		return fmt.Sprintf("params._meta[%q]", p.KeyMetaField)
	case wire.KeyInParams:
		return fmt.Sprintf("params[%q] of tools/call", p.KeyParam)
	case wire.KeyInArgument:
		return fmt.Sprintf("arguments at %s (left out of the arguments the harness compares)", p.KeyArgument)
	}
	h := p.KeyHeader
	if h == "" {
		h = wire.DefaultKeyHeader
	}
	return "header " + h
}

// validateKeyHeader refuses a key header the harness sends for something
// else: the key would replace it, or it the key. The default auth and
// principal headers are refused whatever auth says, so the schema can
// state the rule without comparing two members.
func (p *Profile) validateKeyHeader(bad func(string, ...any)) {
	h := p.KeyHeader
	if !isToken(h) {
		bad("key_header %q: not a header name", h)
		return
	}
	same := func(name string) bool { return strings.EqualFold(h, name) }
	switch {
	case same("Authorization") || same(p.Auth.Header):
		bad("key_header %q: a header of the API key (Authorization, auth.header)", h)
	case same("X-Principal-Token") || same(p.Auth.PrincipalHeader):
		bad("key_header %q: a header of the principal token (X-Principal-Token, auth.principal_header)", h)
	case slices.ContainsFunc(wire.ReservedHeaders, same):
		bad("key_header %q: a header the harness sets itself (%s)", h, strings.Join(wire.ReservedHeaders, ", "))
	}
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// validateTools fills tools.write from the legacy upstream_tool (and back)
// and checks every role names a tool of its own.
func (p *Profile) validateTools(bad func(string, ...any)) {
	switch {
	case p.UpstreamTool != "" && strings.TrimSpace(p.UpstreamTool) == "":
		bad("upstream_tool: blank")
	case p.UpstreamTool != "" && p.Tools.Write == nil:
		p.Tools.Write = &ToolRef{Name: p.UpstreamTool}
	case p.UpstreamTool != "" && p.Tools.Write.Name != p.UpstreamTool:
		bad("upstream_tool %q and tools.write.name %q differ (upstream_tool is the old spelling of tools.write.name; keep one)",
			p.UpstreamTool, p.Tools.Write.Name)
	case p.UpstreamTool == "" && p.Tools.Write != nil:
		p.UpstreamTool = p.Tools.Write.Name
	}
	roleOf := map[string]string{}
	for _, r := range p.Tools.roles() {
		t := *r.ref
		if t == nil {
			continue
		}
		if strings.TrimSpace(t.Name) == "" {
			bad("tools.%s.name: empty", r.role)
			continue
		}
		if t.Price < 0 {
			bad("tools.%s.price %d: want >= 0", r.role, t.Price)
		}
		// One tool in two roles would let a scenario that needs two
		// different tools (or a read-only and a mutating one) pass on one.
		if other, ok := roleOf[t.Name]; ok {
			bad("tools.%s: %q is tools.%s already; every role needs a tool of its own", r.role, t.Name, other)
			continue
		}
		roleOf[t.Name] = r.role
	}
}

func (p *Profile) validateCredentials(bad func(string, ...any)) {
	cr := &p.Credentials
	if p.ControlURL == "" && len(cr.APIKeys) == 0 {
		bad("credentials.api_keys: needed when the gateway has no control_url (nothing could call it)")
	}
	for i, k := range cr.APIKeys {
		switch {
		case strings.TrimSpace(k) == "":
			bad("credentials.api_keys[%d]: empty", i)
		case slices.Index(cr.APIKeys, k) < i:
			bad("credentials.api_keys[%d]: the same key as api_keys[%d]", i, slices.Index(cr.APIKeys, k))
		}
	}
	if o := cr.OtherWallet; o != nil {
		switch {
		case strings.TrimSpace(o.APIKey) == "":
			bad("credentials.other_wallet.api_key: empty")
		case slices.Contains(cr.APIKeys, o.APIKey):
			bad("credentials.other_wallet.api_key: also in credentials.api_keys; it must be a key of another wallet")
		}
		if o.WalletID != "" && o.WalletID == cr.WalletID {
			bad("credentials.other_wallet.wallet_id %q: the same as credentials.wallet_id; it must be another wallet", o.WalletID)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cr.PrincipalTokens)) {
		switch {
		case name == "":
			bad("credentials.principal_tokens: empty principal name")
		case strings.TrimSpace(cr.PrincipalTokens[name]) == "":
			bad("credentials.principal_tokens.%s: empty token", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Identity.Subjects)) {
		switch {
		case name == "":
			bad("identity.subjects: empty principal name")
		case strings.TrimSpace(p.Identity.Subjects[name]) == "":
			bad("identity.subjects.%s: empty subject", name)
		}
	}
	if len(p.Identity.Subjects) > 0 && !p.Identity.HarnessIdP {
		bad("identity.subjects without identity.harness_idp (only tokens the harness signs use them)")
	}
	// An empty map is written back as nothing; keep it nil so a profile
	// round-trips through JSON unchanged.
	if len(cr.PrincipalTokens) == 0 {
		cr.PrincipalTokens = nil
	}
	if len(p.Identity.Subjects) == 0 {
		p.Identity.Subjects = nil
	}
}

// DefaultProfile is the reference gateway's wire: key in the Idempotency-Key
// header, receipt at DefaultReceiptPath, reasons as in docs/wire.md,
// protocol 2025-11-25, derived keys for unkeyed calls, a 1 MiB body limit.
// It has no URLs or credentials; Reference fills them.
func DefaultProfile() *Profile {
	return &Profile{
		Name: "reference", ProtocolVersion: wire.V20251125, KeyPlacement: wire.KeyInHeader,
		KeyHeader: wire.DefaultKeyHeader, KeyMetaField: wire.DefaultKeyMeta, ReceiptPath: wire.DefaultReceiptPath,
		UnkeyedPolicy: UnkeyedDerived, BodyLimit: DefaultBodyLimit,
	}
}

// ReasonsFor lists how the gateway spells our reason name: its reasons, and
// its codes as decimal strings ("-32005"); without a mapping, just name.
// HTTP status forms are left out.
//
// Deprecated: use Matches, which also knows HTTP statuses.
func (p *Profile) ReasonsFor(name string) []string {
	rs, ok := p.Reasons[name]
	if !ok {
		return []string{name}
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		switch {
		case r.IsCode:
			out = append(out, strconv.Itoa(r.Code))
		case r.Reason != "":
			out = append(out, r.Reason)
		}
	}
	return out
}

// Has reports whether the profile offers capability name, listed or implied
// (upstream by tools.write, principal-tokens by identity.harness_idp or
// credentials.principal_tokens).
func (p *Profile) Has(name string) bool {
	switch {
	case name == control.CapUpstream && p.Effects != nil:
		// Its write tool is the effect: nothing of it reaches the probe.
		return false
	case name == CapEffects && p.Effects != nil:
		return true
	case name == control.CapUpstream && (p.Tools.Write != nil || p.UpstreamTool != ""):
		return true
	case name == CapPrincipalTokens && (p.Identity.HarnessIdP || len(p.Credentials.PrincipalTokens) > 0):
		return true
	}
	return slices.Contains(p.Capabilities, name)
}

// ReasonMatches reports whether a refusal with data.reason got and code
// means our reason want.
//
// Deprecated: use Matches, which also takes the HTTP status.
func (p *Profile) ReasonMatches(want, got string, code int) bool {
	return p.Matches(want, got, code, 0)
}

// Matches reports whether an answer means our reason want, given its
// data.reason, JSON-RPC code and HTTP status as received (0 when absent).
// Without a mapping for want only data.reason == want matches; a mapping
// replaces that default (list want in it to keep it).
//
// An HTTP status that names a body text never matches here, the body being
// unknown; MatchesBody takes it.
func (p *Profile) Matches(want, reason string, code, httpStatus int) bool {
	return p.MatchesBody(want, reason, code, httpStatus, nil)
}

// MatchesBody is Matches with the answer's body as received, which an HTTP
// status mapping with a body text ({"http": 409, "body": "busy"}) must
// contain as well.
func (p *Profile) MatchesBody(want, reason string, code, httpStatus int, body []byte) bool {
	rs, ok := p.Reasons[want]
	if !ok {
		return want != "" && reason == want
	}
	for _, r := range rs {
		switch {
		case r.IsCode:
			if code != 0 && r.Code == code {
				return true
			}
		case r.Reason != "":
			if r.Reason == reason {
				return true
			}
		default:
			if p.StatusMeans(want, httpStatus, body) {
				return true
			}
		}
	}
	return false
}

// NamesAnother reports whether a refusal's data.reason names a contract
// answer other than want, in our spelling or the profile's: a status the
// profile maps to want does not make such a refusal want (a final
// outcome_unknown answered at the status of in progress stays final).
func (p *Profile) NamesAnother(want, reason string) bool {
	if reason == "" {
		return false
	}
	for _, r := range contractReasons {
		if r != want && p.Matches(r, reason, 0, 0) {
			return true
		}
	}
	return false
}

// StatusMeans reports whether one of want's spellings is an HTTP status (and
// body text) that httpStatus and body match: the refusal is want by the
// status the gateway answered with, whatever its JSON-RPC error says.
func (p *Profile) StatusMeans(want string, httpStatus int, body []byte) bool {
	for _, r := range p.Reasons[want] {
		if !r.IsCode && r.Reason == "" && httpStatus != 0 && r.HTTPStatus == httpStatus && (r.Body == "" || bytes.Contains(body, []byte(r.Body))) {
			return true
		}
	}
	return false
}

// Client is a wire client for url configured as the profile says, with the
// first API key of the credentials (the caller may replace it).
func (p *Profile) Client(u string) *wire.Client {
	c := &wire.Client{
		BaseURL: u, ProtocolVersion: p.ProtocolVersion, KeyPlacement: p.KeyPlacement,
		KeyHeader: p.KeyHeader, KeyMetaField: p.KeyMetaField, KeyParam: p.KeyParam, KeyArgument: p.KeyArgument,
		ReceiptPath: p.ReceiptPath, RefusalReceiptPath: p.RefusalReceiptPath,
		AuthHeader: p.Auth.Header, PrincipalHeader: p.Auth.PrincipalHeader,
	}
	if p.ReplayMarker != nil {
		c.ReplayMarker = *p.ReplayMarker
	}
	if p.Auth.Prefix != nil {
		c.AuthPrefix = *p.Auth.Prefix
	}
	if len(p.Credentials.APIKeys) > 0 {
		c.APIKey = p.Credentials.APIKeys[0]
	}
	if e, w := p.Effects, p.Tools.Write; e != nil && w != nil {
		write := w.Name
		c.Render = func(tool string, args any) any {
			if tool != write {
				return args
			}
			return e.WriteArgs(args)
		}
	}
	return c
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%q: want an absolute http(s) URL", s)
	}
	return nil
}

func isToken(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return s != ""
}
