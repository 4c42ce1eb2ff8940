// Package control serves the conformance control API of docs/control-api.md
// under /control/: fixtures, the effects of calls (ledger, dispatch log,
// locks), the gateway's clock, settings and fault points. It is for a test
// harness on the same machine: loopback clients only, a bearer token always.
package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/tools"
)

// Gateway is what the control API needs from the core (*gateway.Gateway).
type Gateway interface {
	Settings() gateway.Settings
	SetSettings(gateway.Settings) error
	ResetSettings()
	IssueAPIKey(ctx context.Context, walletID string) (keyID, apiKey string, err error)
	LockIdentityPrefix(walletID, tool string) string
}

// Config wires the control API.
type Config struct {
	Token     string // required
	Store     store.Store
	Gateway   Gateway
	Clock     *clock.Clock
	Faults    *faults.Registry
	StoreKind string
	Bugs      bugs.Set
	Logger    *slog.Logger
	// Servers registers upstream MCP servers (*tools.Dispatcher); nil:
	// /control/servers answers 404.
	Servers Servers
}

// Servers registers and removes upstream MCP servers.
type Servers interface {
	RegisterServer(ctx context.Context, s store.Server) ([]store.Tool, error)
	RemoveServer(ctx context.Context, name string) error
}

// Version is the control API's name in the capabilities answer.
const Version = "mcpconform/1"

// Capabilities this implementation offers.
var Capabilities = []string{"fixtures", "ledger", "dispatch_log", "clock", "faults", "principals", "upstream", "locks", "settings"}

// MaxAmount bounds one fixture credit (a new wallet's balance included) and
// MaxBalance the balance credits may reach (see package fixtures).
const (
	MaxAmount  = fixtures.MaxAmount
	MaxBalance = fixtures.MaxBalance
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

const (
	defaultAwait = 5 * time.Second
	maxAwait     = 2 * time.Minute
)

// New returns the handler for /control/.
func New(c Config) (http.Handler, error) {
	switch {
	case c.Token == "":
		return nil, errors.New("control: a token is required")
	case c.Store == nil || c.Gateway == nil || c.Clock == nil || c.Faults == nil:
		return nil, errors.New("control: store, gateway, clock and faults are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	a := &api{c: c, tokenHash: sha256.Sum256([]byte(c.Token)), local: localUpstream(c.Logger)}
	a.routes = []route{
		{"GET", "capabilities", a.capabilities},
		{"POST", "wallets", a.createWallet},
		{"GET", "wallets/{}", a.wallet},
		{"POST", "wallets/{}/credit", a.credit},
		{"GET", "wallets/{}/ledger", a.ledger},
		{"POST", "keys", a.createKey},
		{"POST", "trust", a.putTrust},
		{"POST", "principals", a.createPrincipal},
		{"POST", "principals/{}/revoke", a.revokePrincipal},
		{"POST", "tools", a.putTool},
		{"DELETE", "tools/{}", a.removeTool},
		{"POST", "servers", a.putServer},
		{"DELETE", "servers/{}", a.removeServer},
		{"POST", "permits", a.createPermit},
		{"GET", "dispatches", a.dispatches},
		{"GET", "locks", a.locks},
		{"GET", "clock", a.getClock},
		{"PUT", "clock", a.setClock},
		{"DELETE", "clock", a.resetClock},
		{"POST", "clock/advance", a.advanceClock},
		{"GET", "settings", a.getSettings},
		{"PUT", "settings", a.putSettings},
		{"DELETE", "settings", a.resetSettings},
		{"GET", "faults", a.listFaults},
		{"POST", "faults", a.armFault},
		{"DELETE", "faults", a.resetFaults},
		{"GET", "faults/{}", a.getFault},
		{"POST", "faults/{}/await", a.awaitFault},
		{"POST", "faults/{}/release", a.releaseFault},
	}
	return a, nil
}

type api struct {
	c         Config
	tokenHash [32]byte
	routes    []route
	local     http.Handler // the loopback echo upstream of "local_tool" aliases
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, args []string) error

type route struct {
	method  string
	pattern string // segments after /control/; "{}" matches one segment
	h       handlerFunc
}

// apiError is an error answer: {"error": sentence, "reason": token}.
type apiError struct {
	status int
	reason string
	msg    string
	extra  map[string]any
}

func (e *apiError) Error() string { return e.msg }

func fail(status int, reason, format string, args ...any) *apiError {
	return &apiError{status: status, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return fail(http.StatusBadRequest, "bad_request", format, args...)
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.c.Logger.Error("control panic", "panic", fmt.Sprint(v), "path", r.URL.Path)
			writeErr(w, fail(http.StatusInternalServerError, "internal_error", "internal error"))
		}
	}()
	if !loopback(r.RemoteAddr) {
		writeErr(w, fail(http.StatusForbidden, "not_loopback", "forbidden: the control API answers loopback clients only"))
		return
	}
	if r.URL.Path == LocalUpstreamPath {
		// The gateway's own upstream client dials this without the control
		// token; it only echoes, and only to loopback clients.
		a.local.ServeHTTP(w, r)
		return
	}
	if !a.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpconform-control"`)
		writeErr(w, fail(http.StatusUnauthorized, "control_token_required", "the control token is required: Authorization: Bearer <token>"))
		return
	}
	segs, ok := segments(r.URL)
	if !ok {
		writeErr(w, fail(http.StatusNotFound, "not_found", "no such control endpoint %s", r.URL.Path))
		return
	}
	var allowed []string
	for _, rt := range a.routes {
		args, ok := match(rt.pattern, segs)
		if !ok {
			continue
		}
		if rt.method != r.Method {
			allowed = append(allowed, rt.method)
			continue
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if err := rt.h(w, r, args); err != nil {
			a.answerErr(w, r, err)
		}
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeErr(w, fail(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	writeErr(w, fail(http.StatusNotFound, "not_found", "no such control endpoint %s", r.URL.Path))
}

func (a *api) answerErr(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeErr(w, ae)
		return
	}
	var inv *fixtures.Invalid
	if errors.As(err, &inv) {
		writeErr(w, fail(http.StatusBadRequest, inv.Reason, "%s", inv.Msg))
		return
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, fail(http.StatusNotFound, "not_found", "%v", err))
	case errors.Is(err, store.ErrExists):
		writeErr(w, fail(http.StatusConflict, "conflict", "%v", err))
	case errors.Is(err, store.ErrBusy):
		writeErr(w, fail(http.StatusServiceUnavailable, "busy", "the store is busy; retry: %v", err))
	default:
		a.c.Logger.Error("control", "method", r.Method, "path", r.URL.Path, "err", err)
		writeErr(w, fail(http.StatusInternalServerError, "internal_error", "internal error: %v", err))
	}
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (a *api) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1
}

// segments splits the path after /control/, unescaping each segment (a tool
// name may hold an escaped '/').
func segments(u *url.URL) ([]string, bool) {
	p, ok := strings.CutPrefix(u.EscapedPath(), "/control/")
	if !ok {
		return nil, false
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, false
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return nil, false
		}
		parts[i] = v
	}
	return parts, true
}

func match(pattern string, segs []string) ([]string, bool) {
	ps := strings.Split(pattern, "/")
	if len(ps) != len(segs) {
		return nil, false
	}
	var args []string
	for i, p := range ps {
		if p == "{}" {
			args = append(args, segs[i])
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return args, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"internal error: encoding the answer","reason":"internal_error"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeErr(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"error": e.msg, "reason": e.reason}
	for k, v := range e.extra {
		body[k] = v
	}
	writeJSON(w, e.status, body)
}

// decode reads a JSON object body into v. An empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(http.StatusRequestEntityTooLarge, "request_too_large", "the body exceeds %d bytes", MaxBodyBytes)
		}
		return badRequest("reading the body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return fail(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json, not %q", ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("the body is not the expected JSON object: %v", err)
	}
	return nil
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ---- capabilities -----------------------------------------------------------

func (a *api) capabilities(w http.ResponseWriter, r *http.Request, _ []string) error {
	caps := Capabilities
	if a.c.Servers != nil {
		caps = append(slices.Clone(caps), "servers")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"control_api":   Version,
		"capabilities":  caps,
		"fault_points":  faults.Points(),
		"fault_actions": faults.Actions(),
		"settings":      settingsJSON(a.c.Gateway.Settings()),
		"store":         a.c.StoreKind,
		"bugs":          a.c.Bugs.List(),
	})
	return nil
}

// ---- fixtures ---------------------------------------------------------------

func walletJSON(wl store.Wallet) map[string]any {
	return map[string]any{"wallet_id": wl.ID, "balance": wl.Balance}
}

func (a *api) createWallet(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		Balance int64 `json:"balance"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	id := store.NewRowID("w-")
	if _, _, err := fixtures.OpenWallet(ctx, a.c.Store, id, req.Balance, a.c.Clock.Now()); err != nil {
		return err
	}
	wl, err := a.c.Store.Wallet(ctx, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, walletJSON(wl))
	return nil
}

func (a *api) wallet(w http.ResponseWriter, r *http.Request, args []string) error {
	wl, err := a.c.Store.Wallet(r.Context(), args[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, walletJSON(wl))
	return nil
}

func (a *api) credit(w http.ResponseWriter, r *http.Request, args []string) error {
	var req struct {
		Amount int64 `json:"amount"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := fixtures.CheckAmount("amount", req.Amount, false); err != nil {
		return err
	}
	ctx := r.Context()
	cur, err := a.c.Store.Wallet(ctx, args[0])
	if err != nil {
		return err
	}
	if cur.Balance > MaxBalance-req.Amount {
		return badRequest("a balance of %d plus %d would exceed %d", cur.Balance, req.Amount, int64(MaxBalance))
	}
	if err := a.c.Store.Credit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: args[0], Kind: store.EntryCredit, Amount: req.Amount, At: a.c.Clock.Now()}); err != nil {
		return err
	}
	wl, err := a.c.Store.Wallet(ctx, args[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"wallet_id": wl.ID, "balance": wl.Balance})
	return nil
}

func (a *api) ledger(w http.ResponseWriter, r *http.Request, args []string) error {
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, args[0]); err != nil {
		return err
	}
	es, err := a.c.Store.Ledger(ctx, args[0])
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(es))
	for _, e := range es {
		out = append(out, map[string]any{"id": e.ID, "kind": e.Kind, "amount": e.Amount, "receipt": e.Receipt, "tool": e.Tool, "at": ts(e.At)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out})
	return nil
}

func (a *api) createKey(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		WalletID string `json:"wallet_id"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.WalletID == "" {
		return badRequest("wallet_id is required")
	}
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, req.WalletID); err != nil {
		return err
	}
	keyID, apiKey, err := a.c.Gateway.IssueAPIKey(ctx, req.WalletID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"key_id": keyID, "api_key": apiKey, "wallet_id": req.WalletID})
	return nil
}

func (a *api) putTrust(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req fixtures.Trust
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := fixtures.PutTrust(r.Context(), a.c.Store, req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createPrincipal registers a principal, or updates the one with the same
// provider, issuer and subject in place (fixtures.PutPrincipal).
func (a *api) createPrincipal(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req fixtures.Principal
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := fixtures.PutPrincipal(r.Context(), a.c.Store, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"principal_id": p.ID})
	return nil
}

func (a *api) revokePrincipal(w http.ResponseWriter, r *http.Request, args []string) error {
	ctx := r.Context()
	if _, err := a.c.Store.PrincipalByID(ctx, args[0]); err != nil {
		return err
	}
	if err := a.c.Store.RevokePrincipal(ctx, args[0]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// putTool registers an upstream tool or an alias, or re-prices and
// re-flags a local one (fixtures.PutTool). An alias forwards to the echo
// upstream this API serves on the address the request came in on.
func (a *api) putTool(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req fixtures.Tool
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := fixtures.PutTool(r.Context(), a.c.Store, req, localUpstreamURL(r))
	if err != nil {
		return err
	}
	out := map[string]any{"name": t.Name, "price": t.Price, "read_only": t.ReadOnly, "approval": t.Approval,
		"upstream_url": t.UpstreamURL, "upstream_tool": t.UpstreamTool}
	if req.LocalTool != "" {
		out["local_tool"] = req.LocalTool
	}
	if t.Overrides != nil {
		out["overrides"] = t.Overrides
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// serverSpec is an upstream MCP server as POST /control/servers takes it.
type serverSpec struct {
	Name     string           `json:"name"`
	URL      string           `json:"url"`
	Prefix   string           `json:"prefix"`
	Price    *int64           `json:"price"`
	Prices   map[string]int64 `json:"prices"`
	ReadOnly []string         `json:"read_only"`
}

// putServer registers an upstream MCP server: its tools, priced by the
// rule, and the relay of its prompts, resources and completion.
func (a *api) putServer(w http.ResponseWriter, r *http.Request, _ []string) error {
	if a.c.Servers == nil {
		return fail(http.StatusNotFound, "not_found", "this gateway registers no upstream servers")
	}
	var req serverSpec
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Name == "" || req.URL == "" {
		return badRequest("name and url are required")
	}
	if req.Price != nil {
		if err := store.CheckPrice(*req.Price); err != nil {
			return badRequest("%v", err)
		}
	}
	if err := fixtures.HTTPURL(req.URL); err != nil {
		return badRequest("url: %v", err)
	}
	for name, p := range req.Prices {
		if err := store.CheckPrice(p); err != nil {
			return badRequest("prices[%q]: %v", name, err)
		}
	}
	sv := store.Server{Name: req.Name, URL: req.URL, Prefix: req.Prefix, Price: 1, Prices: req.Prices, ReadOnly: req.ReadOnly}
	if req.Price != nil {
		sv.Price = *req.Price
	}
	ts, err := a.c.Servers.RegisterServer(r.Context(), sv)
	if errors.Is(err, tools.ErrUpstream) {
		return fail(http.StatusBadGateway, "upstream_unavailable", "%v", err)
	}
	if err != nil {
		return err
	}
	listed := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		listed = append(listed, map[string]any{"name": t.Name, "price": t.Price, "read_only": t.ReadOnly, "upstream_tool": t.UpstreamTool})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"name": sv.Name, "url": sv.URL, "prefix": sv.Prefix, "tools": listed})
	return nil
}

func (a *api) removeServer(w http.ResponseWriter, r *http.Request, args []string) error {
	if a.c.Servers == nil {
		return fail(http.StatusNotFound, "not_found", "this gateway registers no upstream servers")
	}
	if err := a.c.Servers.RemoveServer(r.Context(), args[0]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) removeTool(w http.ResponseWriter, r *http.Request, args []string) error {
	ctx := r.Context()
	if _, err := a.c.Store.Tool(ctx, args[0]); err != nil {
		return err
	}
	if err := a.c.Store.RemoveTool(ctx, args[0]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) createPermit(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		WalletID string `json:"wallet_id"`
		KeyID    string `json:"key_id"`
		Tool     string `json:"tool"`
		Budget   *int64 `json:"budget"`
		TTL      string `json:"ttl"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.WalletID == "" || req.KeyID == "" || req.Tool == "" {
		return badRequest("wallet_id, key_id and tool are required")
	}
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, req.WalletID); err != nil {
		return err
	}
	key, err := a.c.Store.APIKey(ctx, req.KeyID)
	if err != nil {
		return err
	}
	if key.WalletID != req.WalletID {
		return badRequest("key %s belongs to wallet %s, not %s", req.KeyID, key.WalletID, req.WalletID)
	}
	tool, err := a.c.Store.Tool(ctx, req.Tool)
	if err != nil {
		return err
	}
	budget := tool.Price
	if req.Budget != nil {
		budget = *req.Budget
	}
	if budget < 0 {
		return badRequest("budget %d: must not be negative", budget)
	}
	var ttl time.Duration
	if req.TTL != "" {
		ttl, err = time.ParseDuration(req.TTL)
		if err != nil {
			return badRequest("ttl: %v", err)
		}
	}
	if ttl < 0 {
		return badRequest("ttl %v: must not be negative", ttl)
	}
	if ttl == 0 { // omitted or "0s": the permit TTL setting
		ttl = a.c.Gateway.Settings().PermitTTL
	}
	now := a.c.Clock.Now()
	if now.After(store.MaxTime.Add(-ttl)) {
		return fail(http.StatusBadRequest, reasonTimeRange, "ttl %v: the permit would expire after %s, the last time the store keeps",
			ttl, store.MaxTime.Format(time.RFC3339))
	}
	p := store.Permit{ID: store.NewRowID("pmt-"), WalletID: req.WalletID, APIKeyID: req.KeyID, Tool: req.Tool, Budget: budget,
		ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := a.c.Store.CreatePermit(ctx, p); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"permit_id": p.ID, "expires_at": ts(p.ExpiresAt), "budget": p.Budget})
	return nil
}

// ---- effects ----------------------------------------------------------------

func (a *api) dispatches(w http.ResponseWriter, r *http.Request, _ []string) error {
	q := r.URL.Query()
	ds, err := a.c.Store.Dispatches(r.Context(), store.DispatchFilter{Tool: q.Get("tool"), WalletID: q.Get("wallet_id")})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		out = append(out, map[string]any{"id": d.ID, "tool": d.Tool, "wallet_id": d.WalletID, "fingerprint": d.Fingerprint, "at": ts(d.At)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"dispatches": out})
	return nil
}

func (a *api) locks(w http.ResponseWriter, r *http.Request, _ []string) error {
	q := r.URL.Query()
	wallet, tool := q.Get("wallet_id"), q.Get("tool")
	if wallet == "" {
		return badRequest("the query parameter wallet_id is required (tool is optional)")
	}
	prefix := a.c.Gateway.LockIdentityPrefix(wallet, tool)
	if tool == "" {
		// "<wallet>||" names the empty tool; every tool of the wallet
		// shares "<wallet>|".
		prefix = strings.TrimSuffix(prefix, "|")
	}
	ls, err := a.c.Store.Locks(r.Context(), prefix)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(ls))
	for _, l := range ls {
		out = append(out, map[string]any{"identity": l.Identity, "owner": l.Owner, "fence": l.Fence, "acquired_at": ts(l.AcquiredAt)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"locks": out})
	return nil
}

// ---- clock --------------------------------------------------------------------

func (a *api) clockJSON() map[string]any {
	return map[string]any{"now": ts(a.c.Clock.Now()), "frozen": a.c.Clock.Frozen()}
}

func (a *api) getClock(w http.ResponseWriter, r *http.Request, _ []string) error {
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

func (a *api) setClock(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		Now string `json:"now"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, req.Now)
	if err != nil {
		return badRequest("now: an RFC 3339 time is required: %v", err)
	}
	if err := a.clockInRange(t); err != nil {
		return err
	}
	a.c.Clock.Freeze(t)
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

func (a *api) advanceClock(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		By string `json:"by"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	d, err := time.ParseDuration(req.By)
	if err != nil {
		return badRequest("by: a Go duration is required (\"130s\"): %v", err)
	}
	if err := a.clockInRange(a.c.Clock.Now().Add(d)); err != nil {
		return err
	}
	a.c.Clock.Advance(d)
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

// clockInRange refuses a clock at which the settings in force would reach
// past the times a store keeps (gateway.Settings.CheckTimes).
func (a *api) clockInRange(t time.Time) error {
	if err := a.c.Gateway.Settings().CheckTimes(t); err != nil {
		return fail(http.StatusBadRequest, reasonTimeRange, "clock: %v", err)
	}
	return nil
}

// reasonTimeRange refuses a time a store cannot keep (store.TimeInRange).
const reasonTimeRange = "time_out_of_range"

func (a *api) resetClock(w http.ResponseWriter, r *http.Request, _ []string) error {
	a.c.Clock.Unfreeze()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- settings -----------------------------------------------------------------

func seconds(d time.Duration) float64 { return d.Seconds() }

func settingsJSON(s gateway.Settings) map[string]any {
	return map[string]any{
		"window_seconds":           seconds(s.Window),
		"permit_ttl_seconds":       seconds(s.PermitTTL),
		"effective_window_seconds": seconds(s.EffectiveWindow()),
		"stale_lock_seconds":       seconds(s.StaleLock),
		"lock_timeout":             s.LockTimeout.String(),
	}
}

func (a *api) getSettings(w http.ResponseWriter, r *http.Request, _ []string) error {
	writeJSON(w, http.StatusOK, settingsJSON(a.c.Gateway.Settings()))
	return nil
}

func (a *api) putSettings(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		Window    *float64 `json:"window_seconds"`
		PermitTTL *float64 `json:"permit_ttl_seconds"`
		StaleLock *float64 `json:"stale_lock_seconds"`
	}
	if err := decode(r, &req); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.reason == "bad_request" {
			ae.reason = "invalid_setting"
		}
		return err
	}
	s := a.c.Gateway.Settings()
	set := func(name string, v *float64, d *time.Duration) error {
		if v == nil {
			return nil
		}
		dur, err := gateway.SettingDuration(name, *v)
		if err != nil {
			return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
		}
		*d = dur
		return nil
	}
	if err := set("window_seconds", req.Window, &s.Window); err != nil {
		return err
	}
	if err := set("permit_ttl_seconds", req.PermitTTL, &s.PermitTTL); err != nil {
		return err
	}
	if err := set("stale_lock_seconds", req.StaleLock, &s.StaleLock); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	if err := s.CheckTimes(a.c.Clock.Now()); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	if err := a.c.Gateway.SetSettings(s); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	writeJSON(w, http.StatusOK, settingsJSON(a.c.Gateway.Settings()))
	return nil
}

func (a *api) resetSettings(w http.ResponseWriter, r *http.Request, _ []string) error {
	a.c.Gateway.ResetSettings()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- faults -------------------------------------------------------------------

func faultErr(err error) error {
	switch {
	case errors.Is(err, faults.ErrUnknownPoint):
		return fail(http.StatusBadRequest, "unknown_fault_point", "%v (points: %s)", err, strings.Join(faults.Points(), ", "))
	case errors.Is(err, faults.ErrUnknownAction):
		return fail(http.StatusBadRequest, "unknown_fault_action", "%v", err)
	case errors.Is(err, faults.ErrNotFound):
		return fail(http.StatusNotFound, "not_found", "%v", err)
	}
	return err
}

func (a *api) listFaults(w http.ResponseWriter, r *http.Request, _ []string) error {
	writeJSON(w, http.StatusOK, map[string]any{"faults": a.c.Faults.List()})
	return nil
}

func (a *api) armFault(w http.ResponseWriter, r *http.Request, _ []string) error {
	var spec faults.Spec
	if err := decode(r, &spec); err != nil {
		return err
	}
	if spec.Count < 0 {
		return badRequest("count %d: must not be negative", spec.Count)
	}
	st, err := a.c.Faults.Arm(spec)
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusCreated, st)
	return nil
}

func (a *api) resetFaults(w http.ResponseWriter, r *http.Request, _ []string) error {
	a.c.Faults.Reset()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) getFault(w http.ResponseWriter, r *http.Request, args []string) error {
	st, err := a.c.Faults.Get(args[0])
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *api) awaitFault(w http.ResponseWriter, r *http.Request, args []string) error {
	var req struct {
		Waiting *int   `json:"waiting"`
		Timeout string `json:"timeout"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	waiting := 1
	if req.Waiting != nil {
		waiting = *req.Waiting
	}
	if waiting < 0 {
		return badRequest("waiting %d: must not be negative", waiting)
	}
	timeout := defaultAwait
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil {
			return badRequest("timeout: %v", err)
		}
		timeout = d
	}
	if timeout <= 0 || timeout > maxAwait {
		return badRequest("timeout %v: must be positive and at most %v", timeout, maxAwait)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	st, err := a.c.Faults.Await(ctx, args[0], waiting)
	if err != nil {
		if errors.Is(err, faults.ErrNotFound) {
			return faultErr(err)
		}
		e := fail(http.StatusRequestTimeout, "await_timeout", "%d request(s) waiting at the fault after %v, %d wanted", st.Waiting, timeout, waiting)
		e.extra = map[string]any{"fault": st}
		return e
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *api) releaseFault(w http.ResponseWriter, r *http.Request, args []string) error {
	st, err := a.c.Faults.Release(args[0])
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
