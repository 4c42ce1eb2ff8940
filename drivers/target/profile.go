package target

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Profile describes an external gateway: where its endpoints are, where the
// key goes, how it spells refusals, what it offers, and the credentials the
// operator created when it has no control API. See
// testdata/profile.example.json.
type Profile struct {
	Name            string              `json:"name,omitempty"`
	Comment         string              `json:"comment,omitempty"`
	URLs            []string            `json:"urls,omitempty"`
	ProtocolVersion string              `json:"protocol_version,omitempty"` // default 2025-11-25
	KeyPlacement    string              `json:"key_placement,omitempty"`    // "header" (default) | "meta"
	KeyMetaField    string              `json:"key_meta_field,omitempty"`   // default "idempotencyKey"
	ReceiptPath     string              `json:"receipt_path,omitempty"`     // wire.Path syntax
	Reasons         map[string][]Reason `json:"reasons,omitempty"`
	Auth            Auth                `json:"auth,omitzero"`
	ControlURL      string              `json:"control_url,omitempty"`
	ControlToken    string              `json:"control_token,omitempty"`
	// Capabilities the gateway offers. Empty with a control_url: read them
	// from GET /capabilities (Target.ResolveCapabilities).
	Capabilities []string    `json:"capabilities,omitempty"`
	Credentials  Credentials `json:"credentials,omitzero"`
	// UpstreamTool is a tool the operator pointed at the harness probe
	// (--probe-addr); setting it implies the "upstream" capability.
	UpstreamTool string `json:"upstream_tool,omitempty"`
}

// Auth says how the API key and principal token are sent.
type Auth struct {
	Header          string  `json:"header,omitempty"`           // default "Authorization"
	Prefix          *string `json:"prefix,omitempty"`           // default "Bearer " with Authorization, "" otherwise
	PrincipalHeader string  `json:"principal_header,omitempty"` // default "X-Principal-Token"
}

// Credentials are fixtures the operator made by hand.
type Credentials struct {
	APIKeys  []string `json:"api_keys,omitempty"`
	WalletID string   `json:"wallet_id,omitempty"`
	// PrincipalTokens maps a subject to a token the gateway accepts.
	PrincipalTokens map[string]string `json:"principal_tokens,omitempty"`
}

// Reason is one way a gateway spells a refusal: its data.reason string, or
// a JSON-RPC error code (written as a JSON number).
type Reason struct {
	Reason string
	Code   int
	IsCode bool
}

// UnmarshalJSON accepts a string (a reason) or an integer (a code).
func (r *Reason) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &r.Reason); err != nil {
			return err
		}
		if r.Reason == "" {
			return errors.New("empty reason")
		}
		return nil
	}
	if err := json.Unmarshal(b, &r.Code); err != nil {
		return fmt.Errorf("reason %s: want a string or an integer code", b)
	}
	r.IsCode = true
	return nil
}

// MarshalJSON writes the reason back as it was read.
func (r Reason) MarshalJSON() ([]byte, error) {
	if r.IsCode {
		return json.Marshal(r.Code)
	}
	return json.Marshal(r.Reason)
}

// KnownReasons are the reasons of docs/wire.md, both tables, in its order; a
// profile may map only these (TestKnownReasonsMatchDocs holds the two
// together).
var KnownReasons = []string{
	"idempotency_key_required", "idempotency_in_progress", "idempotency_key_reused",
	"unauthenticated", "principal_invalid", "principal_denied", "insufficient_funds",
	"permit_invalid", "permit_exhausted", "permit_expired", "dispatch_failed",
	"response_failed", "unknown_tool", "invalid_arguments", "idempotency_key_invalid",
	"batch_not_supported", "parse_error", "request_too_large", "internal_error",
	// Transport reasons: refusals of requests that never reached a gateway's
	// core, which a vendor's HTTP layer may spell its own way.
	"unsupported_media_type", "not_acceptable", "method_not_allowed", "host_forbidden",
	"session_required", "session_not_found", "session_forbidden", "session_not_initialized",
	"request_id_in_flight", "resumption_unsupported", "stream_conflict", "invalid_request",
	"method_not_found", "invalid_params", "protocol_version_unsupported", "protocol_meta_invalid",
	"protocol_headers_missing", "protocol_headers_mismatch", "client_capabilities_missing",
	"protocol_error",
}

// controlCaps are the capabilities that only a control API can provide.
var controlCaps = []string{
	control.CapFixtures, control.CapLedger, control.CapDispatchLog, control.CapClock,
	control.CapFaults, control.CapPrincipals, control.CapLocks, control.CapSettings,
}

// KnownCapabilities are every capability name a profile may list.
var KnownCapabilities = append(slices.Clone(controlCaps), control.CapUpstream)

// LoadProfile reads and validates a profile file; an unknown field is an
// error, so a typo cannot silently drop a setting.
func LoadProfile(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// ParseProfile decodes, validates and fills the defaults of a profile.
func ParseProfile(b []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: data after the profile object")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Profile) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for i, u := range p.URLs {
		if err := checkURL(u); err != nil {
			bad("urls[%d]: %v", i, err)
		}
	}
	switch p.ProtocolVersion {
	case "":
		p.ProtocolVersion = wire.V20251125
	case wire.V20251125, wire.V20260728:
	default:
		bad("protocol_version %q: want %q or %q", p.ProtocolVersion, wire.V20251125, wire.V20260728)
	}
	switch p.KeyPlacement {
	case "":
		p.KeyPlacement = "header"
	case "header", "meta":
	default:
		bad("key_placement %q: want \"header\" or \"meta\"", p.KeyPlacement)
	}
	if p.KeyMetaField == "" {
		p.KeyMetaField = "idempotencyKey"
	}
	if p.ReceiptPath == "" {
		p.ReceiptPath = wire.DefaultReceiptPath
	} else if _, err := wire.ParsePath(p.ReceiptPath); err != nil {
		bad("receipt_path: %v", err)
	}
	for name, rs := range p.Reasons {
		if !slices.Contains(KnownReasons, name) {
			bad("reasons: unknown reason %q (known: %s)", name, strings.Join(KnownReasons, ", "))
		}
		if len(rs) == 0 {
			bad("reasons.%s: empty list", name)
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
	for _, c := range p.Capabilities {
		switch {
		case !slices.Contains(KnownCapabilities, c):
			bad("capabilities: unknown capability %q (known: %s)", c, strings.Join(KnownCapabilities, ", "))
		case p.ControlURL == "" && slices.Contains(controlCaps, c):
			bad("capabilities: %q needs a control_url", c)
		case c == control.CapUpstream && p.ControlURL == "" && p.UpstreamTool == "":
			bad("capabilities: \"upstream\" without a control API needs upstream_tool")
		}
	}
	if p.ControlURL == "" && len(p.Credentials.APIKeys) == 0 {
		bad("credentials.api_keys: needed when the gateway has no control_url (nothing could call it)")
	}
	for i, k := range p.Credentials.APIKeys {
		if strings.TrimSpace(k) == "" {
			bad("credentials.api_keys[%d]: empty", i)
		}
	}
	return errors.Join(errs...)
}

// DefaultProfile is the reference gateway's wire: key in the Idempotency-Key
// header, receipt at DefaultReceiptPath, reasons as in docs/wire.md,
// protocol 2025-11-25. It has no URLs or credentials; Reference fills them.
func DefaultProfile() *Profile {
	return &Profile{
		Name: "reference", ProtocolVersion: wire.V20251125, KeyPlacement: "header",
		KeyMetaField: "idempotencyKey", ReceiptPath: wire.DefaultReceiptPath,
	}
}

// ReasonsFor lists how the gateway spells our reason name: its reasons, and
// its codes as decimal strings ("-32005"); without a mapping, just name.
func (p *Profile) ReasonsFor(name string) []string {
	rs, ok := p.Reasons[name]
	if !ok {
		return []string{name}
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		if r.IsCode {
			out = append(out, strconv.Itoa(r.Code))
		} else {
			out = append(out, r.Reason)
		}
	}
	return out
}

// Has reports whether the profile offers capability name.
func (p *Profile) Has(name string) bool {
	if name == control.CapUpstream && p.UpstreamTool != "" {
		return true
	}
	return slices.Contains(p.Capabilities, name)
}

// ReasonMatches reports whether a refusal with data.reason got and code
// means our reason want. Without a mapping, the reason must be want itself.
func (p *Profile) ReasonMatches(want, got string, code int) bool {
	rs, ok := p.Reasons[want]
	if !ok {
		return got == want
	}
	for _, r := range rs {
		if r.IsCode && r.Code == code && code != 0 || !r.IsCode && r.Reason == got && got != "" {
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
		KeyMetaField: p.KeyMetaField, ReceiptPath: p.ReceiptPath,
		AuthHeader: p.Auth.Header, PrincipalHeader: p.Auth.PrincipalHeader,
	}
	if p.Auth.Prefix != nil {
		c.AuthPrefix = *p.Auth.Prefix
	}
	if len(p.Credentials.APIKeys) > 0 {
		c.APIKey = p.Credentials.APIKeys[0]
	}
	return c
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
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
