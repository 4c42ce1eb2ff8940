package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/reports"
)

func registerFixtures(sc *godog.ScenarioContext) {
	sc.Step(`^a wallet with (\d+) credits and an API key$`, aWallet)
	sc.Step(`^an upstream tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, false, false)
	})
	sc.Step(`^an upstream read-only tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, true, false)
	})
	sc.Step(`^an upstream approval-gated tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, false, true)
	})
	sc.Step(`^an explicit permit "([^"]*)" for "([^"]*)" with a budget of (\d+) credits?, valid for (\S+)$`, anExplicitPermit)
	sc.Step(`^client "([^"]*)" acts as principal "([^"]*)"$`, actsAsPrincipal)
	sc.Step(`^client "([^"]*)" presents a forged principal token$`, forgedPrincipal)
	sc.Step(`^"([^"]*)" speaks protocol (\S+)$`, speaksProtocol)
}

// aWallet creates the scenario's wallet and key through the control API, or
// takes the operator's credentials from the profile when there is none.
func aWallet(ctx context.Context, balance int64) error {
	w := getWorld(ctx)
	c := w.env.Control()
	if c == nil {
		cr := w.env.Profile.Credentials
		if len(cr.APIKeys) == 0 {
			return fmt.Errorf("the target has no control API and the profile names no api_keys: %w", godog.ErrSkip)
		}
		w.walletID, w.apiKey = cr.WalletID, cr.APIKeys[0]
		return nil
	}
	wallet, err := c.CreateWallet(ctx, balance)
	if err != nil {
		return fmt.Errorf("create wallet: %w", err)
	}
	key, err := c.CreateKey(ctx, wallet.WalletID)
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	w.walletID, w.keyID, w.apiKey, w.baseline = wallet.WalletID, key.KeyID, key.APIKey, balance
	if w.env.Caps[CapLedger] {
		if l, err := w.ledger(ctx); err == nil {
			w.evidence.LedgerBefore = l
			w.baseline = l.Balance
		}
	}
	return nil
}

// anUpstreamTool registers a tool that forwards to the harness's probe, so
// dispatches are counted by the harness, not reported by the gateway.
func anUpstreamTool(ctx context.Context, alias string, price int64, readOnly, approval bool) error {
	w := getWorld(ctx)
	c := w.env.Control()
	if c == nil {
		name := w.env.Profile.UpstreamTool
		if name == "" || readOnly || approval {
			return fmt.Errorf("no control API and no matching operator tool for %q: %w", alias, godog.ErrSkip)
		}
		w.tools[alias], w.prices[alias] = name, price
		return nil
	}
	name := fmt.Sprintf("probe.%s.%s", alias, uuid.NewString()[:8])
	upstream := "probe.write"
	if readOnly {
		upstream = "probe.read"
	}
	_, err := c.CreateTool(ctx, control.Tool{
		Name: name, Price: price, ReadOnly: readOnly, Approval: approval,
		UpstreamURL: w.env.Probe.URL(), UpstreamTool: upstream,
	})
	if err != nil {
		return fmt.Errorf("register upstream tool %s: %w", name, err)
	}
	w.tools[alias], w.prices[alias] = name, price
	return nil
}

func (w *world) ensureTrust(ctx context.Context) error {
	w.env.mu.Lock()
	done := w.env.trusted
	w.env.mu.Unlock()
	if done {
		return nil
	}
	for _, c := range w.env.Controls {
		if err := c.Trust(ctx, control.Trust{Provider: "harness", Issuer: w.env.IdP.Issuer(), JWKSURL: w.env.IdP.JWKSURL(), Audience: w.env.IdP.Audience()}); err != nil {
			return fmt.Errorf("trust the harness identity provider: %w", err)
		}
	}
	w.env.mu.Lock()
	w.env.trusted = true
	w.env.mu.Unlock()
	return nil
}

func actsAsPrincipal(ctx context.Context, name, principal string) error {
	w := getWorld(ctx)
	c := w.env.Control()
	if c == nil || w.env.IdP == nil {
		return fmt.Errorf("principals need the control API: %w", godog.ErrSkip)
	}
	if err := w.ensureTrust(ctx); err != nil {
		return err
	}
	subject := principal + "-" + uuid.NewString()[:8]
	id, err := c.CreatePrincipal(ctx, control.Principal{Provider: "harness", Issuer: w.env.IdP.Issuer(), Subject: subject})
	if err != nil {
		return fmt.Errorf("create principal %s: %w", principal, err)
	}
	tok, err := w.env.IdP.Token(subject, 10*time.Minute)
	if err != nil {
		return fmt.Errorf("sign token for %s: %w", principal, err)
	}
	w.principal[principal] = id
	w.clientFor(name).wire.PrincipalToken = tok
	return nil
}

// anExplicitPermit grants a permit for the scenario's wallet, key and tool
// through the control API; calls name it with X-Permit-Id.
func anExplicitPermit(ctx context.Context, alias, tool string, budget int64, ttl string) error {
	w := getWorld(ctx)
	c := w.env.Control()
	if c == nil {
		return fmt.Errorf("explicit permits are granted through the control API: %w", godog.ErrSkip)
	}
	d, err := time.ParseDuration(ttl)
	if err != nil {
		return fmt.Errorf("permit %s: validity %q: %w", alias, ttl, err)
	}
	pm, err := c.CreatePermit(ctx, control.PermitRequest{WalletID: w.walletID, KeyID: w.keyID, Tool: w.toolName(tool),
		Budget: budget, TTL: control.Duration(d)})
	if err != nil {
		return fmt.Errorf("create permit %s: %w", alias, err)
	}
	w.permits[alias] = pm.PermitID
	return nil
}

func forgedPrincipal(ctx context.Context, name string) error {
	w := getWorld(ctx)
	if w.env.IdP == nil {
		return fmt.Errorf("no identity provider: %w", godog.ErrSkip)
	}
	if err := w.ensureTrust(ctx); err != nil {
		return err
	}
	tok, err := w.env.IdP.ForgedToken(name + "-" + uuid.NewString()[:8])
	if err != nil {
		return fmt.Errorf("forge token: %w", err)
	}
	w.clientFor(name).wire.PrincipalToken = tok
	return nil
}

func speaksProtocol(ctx context.Context, name, version string) error {
	w := getWorld(ctx)
	c := w.clientFor(name)
	c.wire.ProtocolVersion = version
	if err := c.wire.Initialize(ctx); err != nil {
		return fmt.Errorf("initialize %s on %s: %w", name, version, err)
	}
	return nil
}

// clientFor returns the named client, creating it on the first URL.
func (w *world) clientFor(name string) *client {
	return w.clientOn(name, 0)
}

func (w *world) clientOn(name string, urlIndex int) *client {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.clients[name]; ok {
		return c
	}
	wc := w.env.newWire(urlIndex)
	wc.APIKey = w.apiKey
	wc.Record = func(ex reports.Exchange) { w.addExchange(ex) }
	c := &client{name: name, wire: wc}
	w.clients[name] = c
	return c
}

// toolName maps a feature's alias to the registered tool; an alias nobody
// registered is sent as is (the unknown-tool scenario), made unique.
func (w *world) toolName(alias string) string {
	if n, ok := w.tools[alias]; ok {
		return n
	}
	if strings.Contains(alias, ".") {
		return alias
	}
	return alias + "." + uuid.NewString()[:8]
}

func (w *world) ledger(ctx context.Context) (*reports.Ledger, error) {
	c := w.env.Control()
	if c == nil {
		return nil, fmt.Errorf("no control API")
	}
	l, err := c.Snapshot(ctx, w.walletID)
	if err != nil {
		return nil, fmt.Errorf("read wallet %s: %w", w.walletID, err)
	}
	return l, nil
}
