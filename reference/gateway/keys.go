package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/idemkey"
	"github.com/mcpconform/mcpconform/reference/store"
)

// Prefixes of the key strings a client sees in its receipt.
const (
	// DerivedKeyPrefix starts every derived key of an unkeyed mutating call.
	DerivedKeyPrefix = "mcp-retry-"
	// PermitKeyPrefix starts the key of an unkeyed call under an explicit permit.
	PermitKeyPrefix = "permit:"
	// randomKeyPrefix exists only for the random-unkeyed-key bug switch.
	randomKeyPrefix = "mcp-auto-"
)

// keyPlan is step 3's answer: under which idempotency record this call runs.
type keyPlan struct {
	kind      string        // store.KindClient, KindPermit or KindDerived
	clientKey string        // as sent, "permit:<id>", or (derived) filled in with the slot key
	key       string        // the record's primary key (client and permit kinds)
	permit    *store.Permit // the explicit permit, already checked; nil for an auto permit
	// permitExpired is the refusal for an explicit permit past its life:
	// it bars new work under the permit, not the replay of work done.
	permitExpired *Refusal

	// Derived only.
	identity  string        // lock identity: prefix + hash of the identity material
	principal string        // the principal key bound into the identity ("" under principal-unbound)
	window    time.Duration // W
	bucket    int64         // floor(now / W)
}

// digest hashes fields unambiguously: each one is length-prefixed, so no
// choice of field contents can make two different tuples hash alike (a
// wallet "a|b" with tool "c" is not wallet "a" with tool "b|c").
func digest(fields ...string) string {
	h := sha256.New()
	var n [20]byte
	for _, f := range fields {
		h.Write(strconv.AppendInt(n[:0], int64(len(f)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(f))
		h.Write([]byte{';'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// principalKey is "" without a principal, else a digest of its three parts.
func principalKey(p *PrincipalRef) string {
	if p == nil {
		return ""
	}
	return digest("mcpconform/principal/v1", p.Provider, p.Issuer, p.Subject)
}

// recordKey is the primary key of an idempotency record: the key the client
// (or the gateway) chose, scoped to who called which tool. The kind is part of
// it, so a client key spelled "permit:pmt-1" can never land on the record of
// a call under permit pmt-1.
func recordKey(kind, walletID, apiKeyID, principal, tool, key string) string {
	return digest("mcpconform/record/v1", kind, walletID, apiKeyID, principal, tool, key)
}

// clientRecordKey is the record key of a call under a client key: the key
// scoped to the wallet, the API key, the principal and the tool, so the same
// key string from another caller or on another tool is another operation.
func (g *Gateway) clientRecordKey(c *callState, key string) string {
	wallet, apiKey, tool := c.r.Caller.WalletID, c.r.Caller.APIKeyID, c.tool.Name
	switch {
	case g.bugs.On(bugs.KeyScopeWallet):
		wallet, apiKey = "", "" // BUG key-scope-wallet: any caller's key lands on the same record
	case g.bugs.On(bugs.KeyScopeAPIKey):
		apiKey = "" // BUG key-scope-apikey: every key of a wallet shares its records
	}
	if g.bugs.On(bugs.KeyScopeTool) {
		tool = "" // BUG key-scope-tool: the same key on every tool is one record
	}
	if g.bugs.On(bugs.KeyedRecordsPerProcess) {
		key = g.instance + "/" + key // BUG keyed-records-per-process: a keyspace of this process's own, as an in-memory cache has
	}
	return recordKey(store.KindClient, wallet, apiKey, c.principalKey, tool, key)
}

// principalUnbound: a principal-unbound bug switch leaves the verified
// principal out of this call's derived key and its replay check
// (principal-unbound-stateless on the stateless wire only,
// large-args-unbound for arguments over 2 KiB).
func (g *Gateway) principalUnbound(c *callState) bool {
	return g.bugs.On(bugs.PrincipalUnbound) || (g.bugs.On(bugs.PrincipalUnboundStateless) && c.r.Stateless) ||
		(g.bugs.On(bugs.LargeArgsUnbound) && len(c.canon) > 2048)
}

// slotKey is the derived key of one slot: the identity, the window it was
// cut with, the bucket and the attempt. W is in it so a changed window never
// lands on a slot cut with another one.
func slotKey(p keyPlan, attempt int) string {
	return DerivedKeyPrefix + digest("mcpconform/slot/v1", p.identity,
		strconv.FormatInt(int64(p.window), 10), strconv.FormatInt(p.bucket, 10), strconv.Itoa(attempt))
}

// floorDiv is floor(a/b) for b > 0, also for times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// resolveKey is step 3. Every refusal here comes before any permit,
// reservation, dispatch or charge: nothing has been written yet.
func (g *Gateway) resolveKey(ctx context.Context, c *callState) (keyPlan, error) {
	r := c.r
	wallet, keyID := r.Caller.WalletID, r.Caller.APIKeyID
	switch {
	case r.ClientKey != "":
		// The wire layer validated it already; checked again because a key
		// outside the grammar would be stored and echoed in receipts.
		if err := idemkey.Validate(r.ClientKey); err != nil {
			return keyPlan{}, Refuse(ReasonKeyInvalid, "%v", err)
		}
		p := keyPlan{kind: store.KindClient, clientKey: r.ClientKey, key: g.clientRecordKey(c, r.ClientKey)}
		if r.PermitID != "" {
			pm, expired, err := g.explicitPermit(ctx, c)
			if err != nil {
				return keyPlan{}, err
			}
			p.permit, p.permitExpired = &pm, expired
		}
		return p, nil
	case r.PermitID != "":
		// A call under an explicit permit never gets a derived key (the
		// CodeRabbit finding): the permit itself names the operation. It is
		// still unkeyed: a read-only tool would replay one stale read for the
		// permit's life, and the approval gate wants a key a human can see.
		if !g.bugs.On(bugs.PermitSkipsKeyRules) { // BUG permit-skips-key-rules: the permit stands in for a key
			if err := needsClientKey(c, "under a permit with no Idempotency-Key"); err != nil {
				return keyPlan{}, err
			}
		}
		pm, expired, err := g.explicitPermit(ctx, c)
		if err != nil {
			return keyPlan{}, err
		}
		k := PermitKeyPrefix + pm.ID
		return keyPlan{kind: store.KindPermit, clientKey: k, permit: &pm, permitExpired: expired,
			key: recordKey(store.KindPermit, wallet, keyID, c.principalKey, c.tool.Name, k)}, nil
	}

	// Unkeyed.
	collapsed := c.tool.ReadOnly && !c.tool.Approval && g.bugs.On(bugs.ReadonlyCollapsed) // BUG readonly-collapsed: read-only tools fall through to a derived key
	if err := needsClientKey(c, "without a key"); err != nil && !collapsed {
		return keyPlan{}, err
	}
	if c.set.Window == 0 {
		return keyPlan{}, Refuse(ReasonKeyRequired, "unkeyed calls are turned off (retry window 0): send an Idempotency-Key")
	}
	if g.bugs.On(bugs.RandomUnkeyedKey) {
		// BUG random-unkeyed-key (the original SEL-498 double charge): a
		// fresh key per attempt, so a retry is a new operation.
		k := randomKeyPrefix + uuid.NewString()
		return keyPlan{kind: store.KindClient, clientKey: k,
			key: recordKey(store.KindClient, wallet, keyID, c.principalKey, c.tool.Name, k)}, nil
	}
	return g.derivedPlan(c), nil
}

// needsClientKey refuses a call with no client key to a tool that needs one.
// Approval-gated tools need a human-visible key; read-only tools are metered
// but must not replay a stale read for a whole window or a permit's life
// (the "read-only tools are collapsed" blocker), so both are refused rather
// than given a key the gateway made up.
func needsClientKey(c *callState, how string) *Refusal {
	if c.tool.Approval {
		return Refuse(ReasonKeyRequired, "tool %q is approval-gated: it is not called %s; send an Idempotency-Key", c.tool.Name, how)
	}
	if c.tool.ReadOnly {
		return Refuse(ReasonKeyRequired, "tool %q is read-only: a read %s is not collapsed into a replay; send an Idempotency-Key", c.tool.Name, how)
	}
	return nil
}

// derivedPlan is step 4's identity and bucket (SEL-498). The JSON-RPC id is
// not in it: retries arrive with fresh ids.
func (g *Gateway) derivedPlan(c *callState) keyPlan {
	// The effective window is min(window, permit TTL): a retry later than the
	// auto permit's life could not replay, so the slot must not promise it.
	w := c.set.EffectiveWindow()
	if g.bugs.On(bugs.WindowIgnoresTTL) {
		w = c.set.Window // BUG window-ignores-ttl: the advertised window though permits expire sooner
	}
	// The verified principal is bound in, so another principal on the same
	// API key with identical arguments gets another slot (the cross-principal
	// replay blocker).
	principal := c.principalKey
	if g.principalUnbound(c) {
		principal = "" // BUG principal-unbound, principal-unbound-stateless
	}
	r := c.r
	material := digest("mcpconform/identity/v1", r.Caller.WalletID, r.Caller.APIKeyID, principal, c.tool.Name, string(c.canon))
	return keyPlan{
		kind:      store.KindDerived,
		identity:  g.LockIdentityPrefix(r.Caller.WalletID, c.tool.Name) + material,
		principal: principal,
		window:    w,
		bucket:    floorDiv(c.now.UnixNano(), int64(w)),
	}
}

// explicitPermit checks a permit the client named: it must exist and be
// this wallet's, this key's and this tool's. Past its life it comes back
// with the permit_expired refusal, which bars new work only: a retry of an
// operation the permit already ran still gets its stored outcome (a client
// whose response was lost cannot otherwise learn what it paid for). Its
// budget is checked when it is spent (store.Charge), so a replay under a
// spent permit still replays too.
func (g *Gateway) explicitPermit(ctx context.Context, c *callState) (store.Permit, *Refusal, error) {
	r := c.r
	pm, err := g.store.Permit(ctx, r.PermitID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Permit{}, nil, Refuse(ReasonPermitInvalid, "no permit %q", r.PermitID)
	}
	if err != nil {
		return store.Permit{}, nil, g.storeErr("read permit", err)
	}
	// BUG permit-unscoped: a permit is looked up by its id alone.
	if !g.bugs.On(bugs.PermitUnscoped) && (pm.WalletID != r.Caller.WalletID || pm.APIKeyID != r.Caller.APIKeyID || pm.Tool != c.tool.Name) {
		return store.Permit{}, nil, Refuse(ReasonPermitInvalid, "permit %q is not for this wallet, API key and tool", r.PermitID)
	}
	if !c.now.Before(pm.ExpiresAt) {
		expired := Refuse(ReasonPermitExpired, "permit %q expired at %s", r.PermitID, pm.ExpiresAt.Format(time.RFC3339Nano))
		if g.bugs.On(bugs.PermitExpiryBlocksReplay) {
			return store.Permit{}, nil, expired // BUG permit-expiry-blocks-replay: refused before any stored outcome is looked at
		}
		return pm, expired, nil
	}
	return pm, nil, nil
}

// chooseSlot is step 4's slot choice, run under the identity's lock. It
// returns the record to join, or the attempt number of a new slot in the
// current bucket.
//
// Join: the newest non-refunded record that is in the current bucket, was
// created less than W ago, or is still in progress. The second arm is the
// previous-bucket join: a retry 1 ms past a boundary (or a twin straddling
// it) finds the first call's slot instead of dispatching again. The third
// joins an operation still running whatever its age: it may have been
// charged and be at its tool, and a charged operation is never run again
// (an uncharged stale one is taken over, which runs it once). A refunded
// record is never joined: its failure was proven effect-free and refunded,
// so the retry must really run.
//
// New slot: attempt 0, or one past the newest record of the current bucket
// when that one was refunded (the retry after a pre-dispatch failure).
func (g *Gateway) chooseSlot(recs []store.Record, p keyPlan, now time.Time) (join *store.Record, attempt int) {
	floor := g.bugs.On(bugs.FloorBucket) // BUG floor-bucket: only the current bucket is looked at
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		if rec.State == store.StateFailedRefunded {
			continue
		}
		running := rec.State == store.StateInProgress && !floor && !g.bugs.On(bugs.RunningSlotExpires) // BUG running-slot-expires: only inside the window
		if rec.Bucket == p.bucket || (!floor && g.slotAge(rec, now) < p.window) || running {
			return &rec, 0
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Bucket == p.bucket {
			return nil, recs[i].Attempt + 1 // refunded: a non-refunded one was joined above
		}
	}
	return nil, 0
}

// slotAge is how long ago a slot was cut, to the nanosecond: the window's
// last second is as much inside it as its first.
func (g *Gateway) slotAge(rec store.Record, now time.Time) time.Duration {
	if g.bugs.On(bugs.WindowWholeSeconds) {
		return time.Duration(now.Unix()-rec.CreatedAt.Unix()) * time.Second // BUG window-whole-seconds: both times truncated to the second
	}
	return now.Sub(rec.CreatedAt)
}

// newRecord is the reservation written in step 4 or 5.
func (g *Gateway) newRecord(c *callState, p keyPlan, owner string) store.Record {
	r := c.r
	g.ownedHere(owner) // BUG stale-reservation-kept
	return store.Record{
		Key:         p.key,
		Kind:        p.kind,
		ClientKey:   p.clientKey,
		WalletID:    r.Caller.WalletID,
		APIKeyID:    r.Caller.APIKeyID,
		Principal:   c.principal, // who really called, whatever the key binds
		Tool:        c.tool.Name,
		Fingerprint: c.fp,
		State:       store.StateInProgress,
		Owner:       owner,
		CreatedAt:   c.now,
		UpdatedAt:   c.now,
	}
}

// autoPermit is the permit minted with a reservation: budget one call of the
// tool, life PermitTTL, bound to the record so a retry resolves to it.
func (g *Gateway) autoPermit(c *callState, recKey string) store.Permit {
	r := c.r
	return store.Permit{
		ID:        store.NewRowID("pmt-"),
		WalletID:  r.Caller.WalletID,
		APIKeyID:  r.Caller.APIKeyID,
		Tool:      c.tool.Name,
		Budget:    c.tool.Price,
		ExpiresAt: autoExpiry(c.now, c.set.PermitTTL),
		Auto:      true,
		RecordKey: recKey,
		CreatedAt: c.now,
	}
}

// autoExpiry is an auto permit's expiry. The control API refuses a clock or
// a TTL that would put it past store.MaxTime (Settings.CheckTimes); should
// the two still meet (each checked against the other's old value), the
// permit lives until the last time a store keeps, never a wrapped one.
func autoExpiry(now time.Time, ttl time.Duration) time.Time {
	if now.After(store.MaxTime.Add(-ttl)) {
		return store.MaxTime
	}
	return now.Add(ttl)
}
