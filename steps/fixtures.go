package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func registerFixtures(sc *godog.ScenarioContext) {
	sc.Step(`^a wallet with (\d+) credits and an API key$`, aWallet)
	sc.Step(`^a wallet holding exactly (\d+) credits and an API key$`, func(ctx context.Context, balance int64) error {
		if w := getWorld(ctx); !w.env.fixtures() {
			// The operator's wallet holds what it holds: checks that count
			// on its exact balance need a wallet made to measure.
			return w.cannot(judge.CapFixtures, "a wallet of an exact balance")
		}
		return aWallet(ctx, balance)
	})
	sc.Step(`^an upstream tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, target.RoleWrite)
	})
	sc.Step(`^an upstream tool "([^"]*)" priced (\d+) credits?, more than the wallet holds$`, func(ctx context.Context, alias string, price int64) error {
		w := getWorld(ctx)
		if !w.env.fixtures() {
			// The operator's wallet holds what it holds: a price above it
			// is a fixture only a control API can make.
			return w.cannot(judge.CapFixtures, "a tool priced above the wallet's balance")
		}
		return anUpstreamTool(ctx, alias, price, target.RoleWrite)
	})
	sc.Step(`^the tool "([^"]*)" is re-priced to (\d+) credits?$`, reprice)
	sc.Step(`^a second upstream tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, target.RoleWriteOther)
	})
	sc.Step(`^an upstream read-only tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, target.RoleReadOnly)
	})
	sc.Step(`^an upstream approval-gated tool "([^"]*)" priced (\d+) credits?$`, func(ctx context.Context, alias string, price int64) error {
		return anUpstreamTool(ctx, alias, price, target.RoleApproval)
	})
	sc.Step(`^an explicit permit "([^"]*)" for "([^"]*)" with a budget of (\d+) credits?, valid for (\S+)$`, anExplicitPermit)
	sc.Step(`^client "([^"]*)" acts as principal "([^"]*)"$`, actsAsPrincipal)
	sc.Step(`^client "([^"]*)" presents a forged principal token$`, forgedPrincipal)
	sc.Step(`^client "([^"]*)" uses another API key of the same wallet$`, anotherKey)
	sc.Step(`^client "([^"]*)" uses an API key of another wallet$`, otherWalletKey)
	sc.Step(`^"([^"]*)" speaks protocol (\S+)$`, speaksProtocol)
}

// aWallet creates the scenario's wallet and key through the control API, or
// takes the operator's credentials from the profile when there is none.
func aWallet(ctx context.Context, balance int64) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		cr := w.env.Profile.Credentials
		if len(cr.APIKeys) == 0 {
			return w.cannot(judge.CapFixtures, "no control API makes a wallet and the profile names no api_keys")
		}
		w.walletID, w.apiKey = cr.WalletID, cr.APIKeys[0]
		w.noteEnv(judge.EnvValue{Kind: judge.EnvWallet})
		return w.readBaseline(ctx)
	}
	c := w.env.Control()
	wallet, err := c.CreateWallet(ctx, balance)
	if err != nil {
		return fmt.Errorf("create wallet: %w", err)
	}
	key, err := c.CreateKey(ctx, wallet.WalletID)
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	w.walletID, w.keyID, w.apiKey, w.baseline = wallet.WalletID, key.KeyID, key.APIKey, balance
	w.noteEnv(judge.EnvValue{Kind: judge.EnvWallet, Balance: &balance})
	return w.readBaseline(ctx)
}

// readBaseline reads the wallet as the scenario starts, where a ledger can
// be read: balance checks are changes from here.
func (w *world) readBaseline(ctx context.Context) error {
	if !w.has(judge.CapLedger) || w.walletID == "" {
		return nil
	}
	l, err := w.ledger(ctx)
	if err != nil {
		return err
	}
	w.evidence.LedgerBefore = l
	w.baseline = l.Balance
	return nil
}

// roleCapability is what a tool role needs from a target without fixtures.
var roleCapability = map[string]string{
	target.RoleWrite:      judge.CapUpstream,
	target.RoleWriteOther: judge.CapToolWriteOther,
	target.RoleReadOnly:   judge.CapToolReadOnly,
	target.RoleApproval:   judge.CapToolApproval,
}

// anUpstreamTool registers a tool that forwards to the harness's probe, so
// dispatches are counted by the harness, not reported by the gateway; a
// target without fixtures names its own, routed to the probe by its operator.
func anUpstreamTool(ctx context.Context, alias string, price int64, role string) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		t, ok := w.env.Profile.Tool(role)
		if !ok {
			return w.cannot(roleCapability[role], fmt.Sprintf("the profile names no %s tool for %q", role, alias))
		}
		w.tools[alias], w.prices[alias] = t.Name, t.Price
		if t.Price == 0 {
			w.prices[alias] = price
		}
		w.noteTool(t.Name, role, w.prices[alias])
		return nil
	}
	name := fmt.Sprintf("probe.%s.%s", alias, uuid.NewString()[:8])
	if err := w.putTool(ctx, name, price, role); err != nil {
		return err
	}
	w.tools[alias], w.prices[alias] = name, price
	w.noteTool(name, role, price)
	return nil
}

// putTool posts a tool whose upstream is the probe through the control
// API: a new one, or (the same name again) the same tool at another price.
func (w *world) putTool(ctx context.Context, name string, price int64, role string) error {
	upstream := "probe.write"
	if role == target.RoleReadOnly {
		upstream = "probe.read"
	}
	_, err := w.env.Control().CreateTool(ctx, control.Tool{
		Name: name, Price: control.Ptr(price), ReadOnly: control.Ptr(role == target.RoleReadOnly), Approval: control.Ptr(role == target.RoleApproval),
		UpstreamURL: w.env.Probe.URL(), UpstreamTool: upstream,
	})
	if err != nil {
		return fmt.Errorf("register upstream tool %s: %w", name, err)
	}
	return nil
}

// reprice posts the scenario's tool again at another price, while calls of
// it may be under way: each call is held to the price it was made at (the
// history records it with the call), a refund to what its call paid.
func reprice(ctx context.Context, alias string, price int64) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		return w.cannot(judge.CapFixtures, "tools are re-priced through the control API")
	}
	name := w.toolName(alias)
	w.mu.Lock()
	was := w.toolInfo[name]
	w.mu.Unlock()
	if err := w.putTool(ctx, name, price, was.role); err != nil {
		return err
	}
	w.mu.Lock()
	if w.repriced == nil {
		w.repriced = map[string][]int64{}
	}
	w.repriced[name] = append(w.repriced[name], was.price)
	w.mu.Unlock()
	w.prices[alias] = price
	w.noteTool(name, was.role, price)
	return nil
}

// noteTool keeps a tool the scenario set up, with its role and price, for
// the calls' history and in it.
func (w *world) noteTool(name, role string, price int64) {
	w.mu.Lock()
	w.toolInfo[name] = toolInfo{role: role, price: price}
	w.mu.Unlock()
	w.noteEnv(judge.EnvValue{Kind: judge.EnvTool, Tool: name, Role: role, Price: &price})
}

// anotherKey gives a client a second API key of the scenario's wallet.
func anotherKey(ctx context.Context, name string) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		keys := w.env.Profile.Credentials.APIKeys
		if len(keys) < 2 {
			return w.cannot(judge.CapSecondKey, "the profile names one API key")
		}
		return w.useKey(name, keys[1], "second-key", "")
	}
	key, err := w.env.Control().CreateKey(ctx, w.walletID)
	if err != nil {
		return fmt.Errorf("create a second api key: %w", err)
	}
	return w.useKey(name, key.APIKey, "second-key", "")
}

// otherWalletKey gives a client an API key of a wallet of its own.
func otherWalletKey(ctx context.Context, name string) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		o := w.env.Profile.Credentials.OtherWallet
		if o == nil || o.APIKey == "" {
			return w.cannot(judge.CapOtherWallet, "the profile names no other_wallet")
		}
		w.noteEnv(judge.EnvValue{Kind: judge.EnvWallet, Wallet: "other"})
		return w.useKey(name, o.APIKey, "other-wallet", "other")
	}
	c := w.env.Control()
	const otherBalance = 1000
	wallet, err := c.CreateWallet(ctx, otherBalance)
	if err != nil {
		return fmt.Errorf("create another wallet: %w", err)
	}
	balance := int64(otherBalance)
	w.noteEnv(judge.EnvValue{Kind: judge.EnvWallet, Wallet: "other", Balance: &balance})
	w.mu.Lock()
	w.otherWallet = wallet.WalletID
	w.mu.Unlock()
	key, err := c.CreateKey(ctx, wallet.WalletID)
	if err != nil {
		return fmt.Errorf("create a key of another wallet: %w", err)
	}
	return w.useKey(name, key.APIKey, "other-wallet", "other")
}

// useKey sets a client's API key before its first call; credential and
// wallet name the key and its wallet in the history.
func (w *world) useKey(name, key, credential, wallet string) error {
	c := w.clientFor(name)
	if len(c.answers) > 0 || c.pending != nil {
		return fmt.Errorf("client %s already called with another key", name)
	}
	c.wire.APIKey = key
	c.credential, c.wallet = credential, wallet
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

// actsAsPrincipal gives a client a principal token: registered through the
// control API, else signed by the harness's identity provider for a subject
// the gateway knows, else the operator's token from the profile.
func actsAsPrincipal(ctx context.Context, name, principal string) error {
	w := getWorld(ctx)
	if w.has(judge.CapPrincipals) && w.env.IdP != nil && w.env.Control() != nil {
		if err := w.ensureTrust(ctx); err != nil {
			return err
		}
		subject := principal + "-" + uuid.NewString()[:8]
		id, err := w.env.Control().CreatePrincipal(ctx, control.Principal{Provider: "harness", Issuer: w.env.IdP.Issuer(), Subject: subject})
		if err != nil {
			return fmt.Errorf("create principal %s: %w", principal, err)
		}
		tok, err := w.env.IdP.Token(subject, 10*time.Minute)
		if err != nil {
			return fmt.Errorf("sign token for %s: %w", principal, err)
		}
		w.principal[principal] = id
		w.actAs(name, principal, tok)
		return nil
	}
	id := w.env.Profile.Identity
	if id.HarnessIdP && w.env.IdP != nil {
		tok, err := w.env.IdP.Token(w.env.Profile.Subject(principal), 10*time.Minute)
		if err != nil {
			return fmt.Errorf("sign token for %s: %w", principal, err)
		}
		w.actAs(name, principal, tok)
		return nil
	}
	if tok, ok := w.env.Profile.PrincipalToken(principal); ok {
		w.actAs(name, principal, tok)
		return nil
	}
	return w.cannot(judge.CapPrincipalTokens, fmt.Sprintf("no way to act as principal %q", principal))
}

// anExplicitPermit grants a permit for the scenario's wallet, key and tool
// through the control API; calls name it with X-Permit-Id.
func anExplicitPermit(ctx context.Context, alias, tool string, budget int64, ttl string) error {
	w := getWorld(ctx)
	if !w.env.fixtures() {
		return w.cannot(judge.CapFixtures, "explicit permits are granted through the control API")
	}
	d, err := time.ParseDuration(ttl)
	if err != nil {
		return fmt.Errorf("permit %s: validity %q: %w", alias, ttl, err)
	}
	pm, err := w.env.Control().CreatePermit(ctx, control.PermitRequest{WalletID: w.walletID, KeyID: w.keyID, Tool: w.toolName(tool),
		Budget: control.Ptr(budget), TTL: d.String()})
	if err != nil {
		return fmt.Errorf("create permit %s: %w", alias, err)
	}
	w.permits[alias] = pm.PermitID
	w.noteEnv(judge.EnvValue{Kind: judge.EnvPermit, Permit: pm.PermitID, Budget: control.Ptr(budget)})
	return nil
}

func forgedPrincipal(ctx context.Context, name string) error {
	w := getWorld(ctx)
	if w.env.IdP == nil {
		return w.cannot(judge.CapPrincipalTokens, "no identity provider")
	}
	switch {
	case w.has(judge.CapPrincipals) && w.env.Control() != nil:
		if err := w.ensureTrust(ctx); err != nil {
			return err
		}
	case w.has(judge.CapPrincipalTokens):
		// The gateway verifies principal tokens against its own trust: a
		// token signed by a key nobody trusts must fail there too.
	default:
		return w.cannot(judge.CapPrincipalTokens, "the target is not known to verify principal tokens")
	}
	tok, err := w.env.IdP.ForgedToken(name + "-" + uuid.NewString()[:8])
	if err != nil {
		return fmt.Errorf("forge token: %w", err)
	}
	w.actAs(name, name, tok)
	w.clientFor(name).forged = true
	return nil
}

// actAs makes a client present a principal's token.
func (w *world) actAs(client, principal, token string) {
	c := w.clientFor(client)
	c.wire.PrincipalToken, c.principal = token, principal
}

func speaksProtocol(ctx context.Context, name, version string) error {
	w := getWorld(ctx)
	if err := w.serves(version); err != nil {
		return err
	}
	c := w.clientFor(name)
	c.wire.ProtocolVersion = version
	if err := c.wire.Connect(ctx); err != nil {
		return fmt.Errorf("connect %s on %s: %w", name, version, err)
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
	c := &client{name: name, wire: w.wireOn(name, urlIndex), url: urlIndex % max(1, len(w.env.URLs))}
	c.wire.APIKey = w.apiKey
	w.clients[name] = c
	return c
}

// wireOn makes a wire client for the named client on the URL at urlIndex,
// speaking the scenario's protocol version; w.mu is held.
func (w *world) wireOn(name string, urlIndex int) *wire.Client {
	wc := w.env.newWire(urlIndex)
	if w.dims.protocol != "" {
		wc.ProtocolVersion = w.dims.protocol
	}
	wc.Lane = name // the handshake's exchanges show in the client's own lane
	wc.Record = func(ex reports.Exchange) { w.addExchange(ex) }
	return wc
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
	w.noteLedger(l)
	return l, nil
}
