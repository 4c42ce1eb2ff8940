// Package control serves the conformance control API of docs/control-api.md
// under /control/: fixtures, the effects of calls (ledger, dispatch log,
// locks), the gateway's clock, settings and fault points. It is for a test
// harness on the same machine: loopback clients only, a bearer token always.
package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// Gateway is what the control API needs from the core (*gateway.Gateway).
type Gateway interface {
	Settings() gateway.Settings
	SetSettings(gateway.Settings) error
	ResetSettings()
	IssueAPIKey(ctx context.Context, walletID string) (keyID, apiKey string, err error)
	LockIdentityPrefix(walletID, tool string) string
	Uncertain(ctx context.Context) ([]gateway.Uncertain, error)
	Settle(ctx context.Context, key string, s gateway.Settlement) (gateway.Uncertain, store.Record, error)
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
const Version = controlapi.Version

// Capabilities this implementation offers.
var Capabilities = []string{controlapi.CapFixtures, controlapi.CapLedger, controlapi.CapDispatchLog, controlapi.CapClock,
	controlapi.CapFaults, controlapi.CapPrincipals, controlapi.CapUpstream, controlapi.CapLocks, controlapi.CapSettings}

// MaxAmount bounds one fixture credit (a new wallet's balance included) and
// MaxBalance the balance credits may reach (see package fixtures).
const (
	MaxAmount  = fixtures.MaxAmount
	MaxBalance = fixtures.MaxBalance
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

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
	a.mux = a.newMux()
	return a, nil
}

type api struct {
	c         Config
	tokenHash [32]byte
	mux       *http.ServeMux
	local     http.Handler // the loopback echo upstream of "local_tool" aliases
}

// ServeHTTP checks who asks before anything is routed, so an unknown path
// tells a stranger no more than a known one.
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
		writeErr(w, notFound(r.URL.Path))
		return
	}
	a.mux.ServeHTTP(w, routable(r, segs))
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
