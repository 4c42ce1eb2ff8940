package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// Options build a Gateway.
type Options struct {
	Store      store.Store
	Clock      *clock.Clock     // nil: real time
	Faults     *faults.Registry // nil: an empty registry (no fault ever fires)
	Dispatcher Dispatcher
	// Settings are the start-up values; the zero value means DefaultSettings.
	Settings  Settings
	Bugs      bugs.Set
	StoreKind string // "sqlite" or "postgres"; informational (logs, capabilities)
	Logger    *slog.Logger
}

// Gateway applies the tools/call rules. It is safe for concurrent use, and
// several Gateways (in one process or many) may share one store: every
// decision that must be exclusive is taken in the store, never in memory.
type Gateway struct {
	store     store.Store
	given     store.Store // Options.Store, undecorated: the bug switches' unconditional writes are asserted on it
	clock     *clock.Clock
	faults    *faults.Registry
	disp      Dispatcher
	bugs      bugs.Set
	storeKind string
	log       *slog.Logger

	late    sync.WaitGroup // the late-debit bug's background debits, the replay-revalidates bug's dispatches
	callsMu sync.Mutex
	asked   map[string][]byte // record key -> input-required result, for the rounds-store-question bug
	unsent  map[string]bool   // record keys whose outcome's response was never written, for the replay-unmarked-undelivered bug
	// instance names this gateway's keyspace for the keyed-records-per-process bug.
	instance string
	// owners are the reservation owners this process made, for the
	// stale-reservation-kept bug (a lease tracked in process memory).
	owners sync.Map

	// tools are the tool entries this process read, each with the
	// registry version it was read at (toolmemo.Cache).
	tools *toolmemo.Cache

	// lastSweep is the gateway time (Unix ns) of the last retention sweep.
	lastSweep atomic.Int64

	mu       sync.RWMutex
	settings Settings
	initial  Settings
}

// New checks the options. A negative window (or another invalid setting)
// fails here, at start-up, rather than silently meaning something else.
func New(o Options) (*Gateway, error) {
	if o.Store == nil {
		return nil, errors.New("gateway: no store")
	}
	if o.Dispatcher == nil {
		return nil, errors.New("gateway: no dispatcher")
	}
	s := o.Settings
	if s == (Settings{}) {
		s = DefaultSettings()
	}
	if s.Retention == 0 {
		s.Retention = DefaultRetention // start-up settings that leave it out
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("gateway settings: %w", err)
	}
	for _, name := range o.Bugs.List() {
		if bugs.Lookup(name) == nil {
			return nil, fmt.Errorf("gateway: unknown bug switch %q", name)
		}
	}
	g := &Gateway{
		store:     o.Store,
		given:     o.Store,
		clock:     o.Clock,
		faults:    o.Faults,
		disp:      o.Dispatcher,
		bugs:      o.Bugs,
		storeKind: o.StoreKind,
		log:       o.Logger,
		settings:  s,
		initial:   s,
		instance:  uuid.NewString(),
		tools:     toolmemo.NewCache(),
	}
	g.tools.AnyVersion = o.Bugs.On(bugs.ToolEntriesUnversioned) // BUG tool-entries-unversioned
	if g.clock == nil {
		g.clock = clock.New()
	}
	if err := s.CheckTimes(g.clock.Now()); err != nil {
		return nil, fmt.Errorf("gateway settings: %w", err)
	}
	if g.faults == nil {
		g.faults = faults.New()
	}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := g.withEffectBugs(); err != nil {
		return nil, err
	}
	if len(o.Bugs.List()) > 0 {
		g.log.Warn("gateway running with bug switches on", "bugs", o.Bugs.List(), "store", o.StoreKind)
	}
	return g, nil
}

// Settings returns the settings in force.
func (g *Gateway) Settings() Settings {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.settings
}

// SetSettings replaces the settings; invalid ones are refused and change nothing.
func (g *Gateway) SetSettings(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := s.CheckTimes(g.clock.Now()); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settings = s
	return nil
}

// ResetSettings restores the start-up settings.
func (g *Gateway) ResetSettings() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settings = g.initial
}

// Bugs returns the bug switches the gateway runs with, sorted.
func (g *Gateway) Bugs() []string { return g.bugs.List() }

// StoreKind is the store the gateway was built on ("sqlite" or "postgres").
func (g *Gateway) StoreKind() string { return g.storeKind }

// API keys are "mcpk_<key id>_<secret>". Key ids are "k-" plus a uuid and
// secrets are hex, so neither holds the '_' separator.
const apiKeyPrefix = "mcpk_"

// Authenticate resolves an API key to its caller. Only the sha256 of the
// secret is stored; it is compared in constant time so the answer's timing
// says nothing about how much of a guessed secret was right.
func (g *Gateway) Authenticate(ctx context.Context, apiKey string) (Caller, error) {
	deny := Refuse(ReasonUnauthenticated, "missing or invalid API key")
	rest, ok := strings.CutPrefix(apiKey, apiKeyPrefix)
	if !ok {
		return Caller{}, deny
	}
	keyID, secret, ok := strings.Cut(rest, "_")
	if !ok || keyID == "" || secret == "" {
		return Caller{}, deny
	}
	// No stored key is outside these bounds (IssueAPIKey, ParseAPIKey), so a
	// key that is cannot match one: it is refused without a query, and a
	// client cannot make the store look up a 900 KB id.
	if len(keyID) > maxKeyIDLen || !alnum(keyID, '-') || len(secret) > maxKeySecretLen {
		return Caller{}, deny
	}
	// Read on every request, never kept in memory: a key revoked through
	// any process's control API is refused by every process on its next
	// request, as a removed tool or a revoked principal is. A cache would
	// need that same read to stay correct, so it would save nothing.
	k, err := g.store.APIKey(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, deny
	}
	if err != nil {
		return Caller{}, g.storeErr("authenticate", err)
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], k.SecretHash) != 1 {
		return Caller{}, deny
	}
	// Said only to the holder of the secret, so a guesser learns nothing
	// of which key ids exist.
	if k.Revoked {
		return Caller{}, Refuse(ReasonUnauthenticated, "API key %s is revoked", k.ID)
	}
	return Caller{WalletID: k.WalletID, APIKeyID: k.ID, ToolsVersion: k.ToolsVersion}, nil
}

// ToolMemo returns the Memo of one request of c: its reads of a tool share
// one store read, and use this process's entry read at the registry version
// c authenticated with, if it has one.
func (g *Gateway) ToolMemo(c Caller) *toolmemo.Memo { return g.tools.Memo(c.ToolsVersion) }

// IssueAPIKey creates an API key for an existing wallet. The whole key is
// returned once; only the hash of its secret is stored.
func (g *Gateway) IssueAPIKey(ctx context.Context, walletID string) (keyID, apiKey string, err error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("issue api key: %w", err)
	}
	secret := hex.EncodeToString(raw[:])
	keyID = "k-" + uuid.NewString()
	if err := g.putAPIKey(ctx, walletID, keyID, secret); err != nil {
		return "", "", fmt.Errorf("issue api key: %w", err)
	}
	return keyID, apiKeyPrefix + keyID + "_" + secret, nil
}

// Bounds of an imported key's parts. An issued key has a 38-character id
// and a 64-character hex secret; the secret's floor keeps an operator from
// importing a guessable one.
const (
	maxKeyIDLen     = 64
	minKeySecretLen = 32
	maxKeySecretLen = 128
)

// ParseAPIKey checks a whole API key in the gateway's format,
// "mcpk_<key id>_<secret>": a key id of 1 to 64 letters, digits and '-', and
// a secret of 32 to 128 letters and digits. Its errors never quote the
// secret.
func ParseAPIKey(apiKey string) (keyID, secret string, err error) {
	rest, ok := strings.CutPrefix(apiKey, apiKeyPrefix)
	if !ok {
		return "", "", fmt.Errorf("api key: want %s<key id>_<secret>", apiKeyPrefix)
	}
	keyID, secret, ok = strings.Cut(rest, "_")
	switch {
	case !ok:
		return "", "", fmt.Errorf("api key: want %s<key id>_<secret>, found no '_' after the key id", apiKeyPrefix)
	case keyID == "" || len(keyID) > maxKeyIDLen || !alnum(keyID, '-'):
		return "", "", fmt.Errorf("api key: the key id must be 1 to %d letters, digits or '-'", maxKeyIDLen)
	case len(secret) < minKeySecretLen || len(secret) > maxKeySecretLen || !alnum(secret, 0):
		return "", "", fmt.Errorf("api key %s%s_…: the secret must be %d to %d letters or digits (it has %d characters)",
			apiKeyPrefix, keyID, minKeySecretLen, maxKeySecretLen, len(secret))
	}
	return keyID, secret, nil
}

// alnum reports whether s holds only ASCII letters, digits and extra.
func alnum(s string, extra byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || extra != 0 && c == extra) {
			return false
		}
	}
	return true
}

// ImportAPIKey stores a key an operator chose (a fixtures file) for an
// existing wallet, keeping only the hash of its secret, as for an issued
// key. Importing the same key again for the same wallet changes nothing
// (created false), so a restart may import it again; a key id already
// stored with another secret or for another wallet is refused.
func (g *Gateway) ImportAPIKey(ctx context.Context, walletID, apiKey string) (keyID string, created bool, err error) {
	keyID, secret, err := ParseAPIKey(apiKey)
	if err != nil {
		return "", false, err
	}
	err = g.putAPIKey(ctx, walletID, keyID, secret)
	if !errors.Is(err, store.ErrExists) {
		if err != nil {
			return "", false, fmt.Errorf("import api key %s: %w", keyID, err)
		}
		return keyID, true, nil
	}
	k, err := g.store.APIKey(ctx, keyID)
	if err != nil {
		return "", false, fmt.Errorf("import api key %s: %w", keyID, err)
	}
	sum := sha256.Sum256([]byte(secret))
	if k.WalletID != walletID || subtle.ConstantTimeCompare(sum[:], k.SecretHash) != 1 {
		return "", false, fmt.Errorf("import api key %s: the key id is already stored with another secret or wallet", keyID)
	}
	return keyID, false, nil
}

// putAPIKey stores a key of an existing wallet: its id and the sha256 of
// its secret. store.ErrExists when the key id is taken.
func (g *Gateway) putAPIKey(ctx context.Context, walletID, keyID, secret string) error {
	if _, err := g.store.Wallet(ctx, walletID); err != nil {
		return fmt.Errorf("wallet %q: %w", walletID, err)
	}
	sum := sha256.Sum256([]byte(secret))
	return g.store.CreateAPIKey(ctx, store.APIKey{ID: keyID, WalletID: walletID, SecretHash: sum[:], CreatedAt: g.clock.Now()})
}

// LockIdentityPrefix is the start of every lock identity of one wallet and
// tool ("<wallet>|<tool>|"), so store.Locks can list them. '%' and '|' are
// escaped in both parts, so a tool named "a|b" can never fall under the
// prefix of a tool named "a".
func (g *Gateway) LockIdentityPrefix(walletID, tool string) string {
	return escapeIdentityPart(walletID) + "|" + escapeIdentityPart(tool) + "|"
}

var identityEscaper = strings.NewReplacer("%", "%25", "|", "%7C")

func escapeIdentityPart(s string) string { return identityEscaper.Replace(s) }
