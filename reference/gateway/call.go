package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/canonical"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// callState is one tools/call on its way through the pipeline.
type callState struct {
	r         CallRequest
	tool      store.Tool
	canon     []byte // canonical JSON of the arguments
	fp        string // its sha256
	set       Settings
	now       time.Time // the gateway's clock when the call arrived
	principal string    // r.Caller.Principal.String(), as records store it
	// principalKey is the principal as hashed into keys and identities: its
	// three parts length-prefixed, since the "|"-joined string is ambiguous
	// (a subject such as "auth0|123" holds the separator).
	principalKey string
}

// Call runs one tools/call. A refusal is a *Refusal (its Reason is the
// contract); any other error is internal.
//
// The pipeline, each step before the next can write anything:
//  1. the tool (a removed or unknown one still serves this call's stored
//     outcome, after the replay authorisation, and never starts work);
//  2. the principal's entitlement (IGA);
//  3. the key: client, explicit permit, or derived for an unkeyed mutating
//     call; read-only, approval-gated and window-0 unkeyed calls are refused
//     (a permit is not a client key: under one too, for the first two);
//  4. derived keys: slot choice and auto-permit mint under the identity's
//     lock row, the reservation fenced on that lock;
//  5. client and permit keys: an atomic reservation with the auto permit;
//  6. an existing record: reused key, in progress, or a replay (authorised
//     again, served whole, no dispatch, no ledger entry);
//  7. a new reservation: debit, dispatch, store the outcome with its receipt
//     (a failure before dispatch is refunded and answered retryable);
//  8. a store lock timeout anywhere is the retryable in-progress answer.
func (g *Gateway) Call(ctx context.Context, r CallRequest) (CallResponse, error) {
	resp, err := g.call(ctx, r)
	if err != nil {
		err = g.answer(err)
		var ref *Refusal
		if errors.As(err, &ref) {
			g.log.Debug("tools/call refused", "tool", r.Tool, "wallet", r.Caller.WalletID, "reason", ref.Reason, "message", ref.Message)
		} else {
			g.log.Error("tools/call internal error", "tool", r.Tool, "wallet", r.Caller.WalletID, "err", err)
		}
		return CallResponse{}, err
	}
	return resp, nil
}

// answer is step 8: a store lock timeout anywhere is the retryable
// in-progress answer, never internal_error, because the operation it would
// have run is still safe to retry and a client must not treat it as a
// failure of the tool.
func (g *Gateway) answer(err error) error {
	var ref *Refusal
	if errors.As(err, &ref) {
		return ref
	}
	if errors.Is(err, store.ErrBusy) {
		if g.bugs.On(bugs.LockTimeoutInternal) {
			return fmt.Errorf("gateway: lock timeout: %w", err) // BUG lock-timeout-internal
		}
		return Refuse(ReasonInProgress, "the store is busy with the same operation (lock timeout): retry")
	}
	return err
}

func (g *Gateway) storeErr(op string, err error) error {
	return fmt.Errorf("gateway: %s: %w", op, err)
}

func (g *Gateway) hit(ctx context.Context, point string, c *callState) string {
	return g.faults.Hit(ctx, point, faultMatch(c))
}

func faultMatch(c *callState) faults.Match {
	return faults.Match{Tool: c.r.Tool, WalletID: c.r.Caller.WalletID}
}

func (g *Gateway) call(ctx context.Context, r CallRequest) (CallResponse, error) {
	if r.Caller.WalletID == "" || r.Caller.APIKeyID == "" {
		return CallResponse{}, Refuse(ReasonUnauthenticated, "no authenticated caller")
	}
	r.ClientKey = g.bugKey(r.ClientKey) // BUG key-case-folded, key-truncated
	c := &callState{r: r, set: g.Settings(), now: g.clock.Now(),
		principal: r.Caller.Principal.String(), principalKey: principalKey(r.Caller.Principal)}
	args := r.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}") // MCP lets a client leave arguments out
	}
	canon, err := canonical.JSON(args)
	if err != nil {
		return CallResponse{}, Refuse(ReasonInvalidArguments, "arguments: %v", err)
	}
	if canon[0] != '{' {
		return CallResponse{}, Refuse(ReasonInvalidArguments, "arguments must be a JSON object")
	}
	canon = g.bugSortedLists(canon)                       // BUG fingerprint-sorted-lists
	sum := sha256.Sum256(g.bugFingerprinted(args, canon)) // BUG fingerprint-shallow, fingerprint-raw-bytes
	c.canon, c.fp = canon, hex.EncodeToString(sum[:])
	g.sweep(ctx, c)
	if g.bugs.On(bugs.RoundsFingerprinted) {
		c.fp = roundFingerprint(ctx, c.fp) // BUG rounds-fingerprinted
	}

	// Step 1: the tool. A removed or unknown tool is not answered
	// unknown_tool at once: a client retrying a call whose response it lost
	// is owed the stored outcome even if the tool went away since. The
	// request's first read of the tool (the wire's Mcp-Param header check)
	// is reused: a tool is read from the store once per request.
	memo := toolmemo.From(ctx)
	if memo == nil {
		memo = g.ToolMemo(r.Caller)
	}
	tool, err := memo.Tool(ctx, g.store, r.Tool)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.tool = store.Tool{Name: r.Tool}
		return g.missingTool(ctx, c)
	case err != nil:
		return CallResponse{}, g.storeErr("read tool", err)
	case tool.Removed && g.bugs.On(bugs.RemovedToolRuns) && r.ClientKey != "":
		c.tool = tool
		return g.removedToolRuns(ctx, c) // BUG removed-tool-runs
	case tool.Removed:
		c.tool = store.Tool{Name: r.Tool} // treated as mutating: the key it would have had
		return g.missingTool(ctx, c)
	}
	if g.bugs.On(bugs.DoublePrice) {
		tool.Price *= 2 // BUG double-price: the permit, the debit and the receipt all say twice
	}
	c.tool = tool

	// Step 2: the principal's entitlement, before anything new is reserved or
	// dispatched, and before any stored result is looked at.
	if g.bugs.On(bugs.ReplayBeforeIGA) {
		// BUG replay-before-iga: a stored result is served first, whoever asks.
		if resp, ok, err := g.peekReplay(ctx, c); ok || err != nil {
			return resp, err
		}
	}
	if err := g.entitled(ctx, r.Caller, tool.Name); err != nil {
		return CallResponse{}, err
	}
	if g.bugs.On(bugs.NoIdempotency) {
		return g.naiveCall(ctx, c) // BUG no-idempotency
	}

	// Step 3: which record this call runs under.
	p, err := g.resolveKey(ctx, c)
	if err != nil {
		return CallResponse{}, err
	}
	if g.bugs.On(bugs.RoundsReplayReruns) {
		p = g.roundAsNewWork(ctx, c, p) // BUG rounds-replay-reruns
	}
	if p.permitExpired != nil {
		// No new work under an expired permit; work it already did (or is
		// doing) is answered as any retry of it is.
		return g.existingOr(ctx, c, p, p.permitExpired)
	}

	// A finished keyed operation is served from a plain read: a completed
	// record never changes again, so its replay need not queue for the
	// store's write lock. Anything else, found or not, goes on to the atomic
	// reservation below, which decides. Unkeyed calls still join their slot
	// under the identity's lock, where the slot choice is made.
	if p.kind != store.KindDerived && !(p.kind == store.KindClient && g.bugs.On(bugs.LookupBeforeReserve)) {
		if done, found, err := g.findStored(ctx, c, p); err == nil && found && done.State == store.StateCompleted {
			return g.existing(ctx, c, done) // step 6
		}
	}

	// Steps 4 and 5: reserve the key before anything is dispatched, so a twin
	// finds the reservation instead of dispatching too (the concurrent-enqueue
	// bug), and charge it in the same commit when nothing waits between.
	if g.bugs.On(bugs.FundsBoundary) && g.atBoundary(ctx, c.r.Caller.WalletID, c.tool.Price) {
		// BUG funds-boundary: a balance check before the reservation, with > where >= belongs
		return CallResponse{}, Refuse(ReasonInsufficient, "wallet balance is below the price of %q (%d)", c.tool.Name, c.tool.Price)
	}
	receipt := newReceipt()
	charge := g.firstCharge(c, receipt)
	var rec store.Record
	var created bool
	switch {
	case p.kind == store.KindDerived:
		rec, created, err = g.reserveDerived(ctx, c, p, charge)
	case p.kind == store.KindClient && g.bugs.On(bugs.LookupBeforeReserve):
		return g.lookupThenDispatch(ctx, c, p) // BUG lookup-before-reserve
	default:
		rec, created, err = g.reserveKeyed(ctx, c, p, charge)
	}
	if err != nil {
		return CallResponse{}, g.refusedCharge(ctx, c, rec, err)
	}
	if !created {
		return g.existing(ctx, c, rec) // step 6
	}
	if g.bugs.On(bugs.FundsUnlocked) {
		if err := g.checkFundsEarly(ctx, c, rec); err != nil { // BUG funds-unlocked
			return CallResponse{}, err
		}
	}
	g.reserved(ctx, c, rec)
	return g.run(ctx, c, rec, receipt) // step 7
}

// reserved passes the reserve.done point of a reservation made without its
// charge: reserved, not yet charged.
func (g *Gateway) reserved(ctx context.Context, c *callState, rec store.Record) {
	if !rec.Charged {
		g.hit(ctx, faults.ReserveDone, c)
	}
}

func newReceipt() string { return "rcpt-" + uuid.NewString() }

// firstCharge is the debit a call's reservation carries
// (store.ReserveRequest.Charge), so that a first call commits twice (the
// reservation with its charge, then the outcome), not three times; nil
// where the call must be able to stop between its reservation and its
// charge: while a pause is armed at reserve.done (a call held there is
// reserved and not charged, which the crash, cancel and stall scenarios
// rely on), and under key-scope-billing, whose payer its store decorator
// chooses in the charge apart from the reservation.
func (g *Gateway) firstCharge(c *callState, receipt string) *store.ChargeRequest {
	if g.faults.Armed(faults.ReserveDone, faultMatch(c)) || g.bugs.On(bugs.KeyScopeBilling) || g.bugs.On(bugs.FundsUnlocked) {
		return nil
	}
	now := g.clock.Now()
	return &store.ChargeRequest{Now: now, Entry: store.LedgerEntry{ID: store.NewRowID("le-"), Kind: store.EntryDebit,
		Amount: c.tool.Price, Receipt: receipt, Tool: c.tool.Name, At: now}}
}

// refusedCharge answers a charge the store refused, made with the
// reservation rec or after it; any other error is returned as it is. Nothing
// was charged or dispatched.
func (g *Gateway) refusedCharge(ctx context.Context, c *callState, rec store.Record, err error) error {
	switch {
	case errors.Is(err, store.ErrInsufficientFunds):
		return Refuse(ReasonInsufficient, "wallet balance is below the price of %q (%d)", c.tool.Name, c.tool.Price)
	case errors.Is(err, store.ErrPermitExhausted):
		return Refuse(ReasonPermitExhausted, "permit %q has no budget left for %q", rec.PermitID, c.tool.Name)
	case errors.Is(err, store.ErrPermitExpired) && c.r.PermitID == "" && !g.bugs.On(bugs.StalledPermitExpired):
		// The call stalled between its reservation and its charge past
		// the life of the auto permit minted with it, a permit the client
		// never saw (BUG stalled-permit-expired answers permit_expired).
		// Nothing ran and the reservation is gone: a retry runs afresh.
		return Refuse(ReasonDispatchFailed, "the call stalled before its charge past its reservation's life; nothing ran: retry")
	case errors.Is(err, store.ErrPermitExpired):
		return Refuse(ReasonPermitExpired, "permit %q expired", rec.PermitID)
	}
	return err
}

// missingTool is step 1 for a removed or unknown tool: serve a stored
// outcome of this very call (after the replay authorisation), else unknown_tool.
func (g *Gateway) missingTool(ctx context.Context, c *callState) (CallResponse, error) {
	unknown := Refuse(ReasonUnknownTool, "no tool %q", c.r.Tool)
	if g.bugs.On(bugs.NoIdempotency) {
		return CallResponse{}, unknown // BUG no-idempotency: nothing is ever stored to serve
	}
	p, err := g.resolveKey(ctx, c)
	var ref *Refusal
	if errors.As(err, &ref) && ref.Reason == ReasonKeyRequired {
		return CallResponse{}, unknown // no key, so no stored outcome can be this call's
	}
	if err != nil {
		return CallResponse{}, err
	}
	return g.existingOr(ctx, c, p, unknown)
}

// existingOr answers a call that may start no new work (its tool is gone,
// its permit expired) from the operation its key already has, if any; a
// refunded attempt left nothing to answer with, so then it is refused.
func (g *Gateway) existingOr(ctx context.Context, c *callState, p keyPlan, refusal *Refusal) (CallResponse, error) {
	rec, found, err := g.findStored(ctx, c, p)
	if err != nil {
		return CallResponse{}, err
	}
	if !found || rec.State == store.StateFailedRefunded {
		return CallResponse{}, refusal // nothing ran, and nothing can run now
	}
	if rec.State == store.StateInProgress && rec.Fingerprint == c.fp && !g.bugs.On(bugs.RemovedToolTakeover) {
		// BUG removed-tool-takeover: existing would take a stale reservation
		// over and run it, with none of the checks new work gets.
		return CallResponse{}, g.neverRun(ctx, c, rec, refusal)
	}
	return g.existing(ctx, c, rec)
}

// neverRun answers, on a path that may start no new work, an operation still
// in progress. Its owner may be running it: in progress. A reservation never
// charged and older than the stale-lock threshold never reached its tool and
// its owner is presumed gone: it is dropped (conditional on that owner, whose
// charge then fails), and the call refused as if it had never been made.
func (g *Gateway) neverRun(ctx context.Context, c *callState, rec store.Record, refusal *Refusal) error {
	running := Refuse(ReasonInProgress, "the same operation is running: retry")
	if !g.stale(c, rec) || (rec.Charged && g.bugs.On(bugs.UncertainInProgress)) { // BUG uncertain-in-progress
		return running
	}
	if rec.Charged {
		return g.outcomeUnknown(ctx, rec)
	}
	err := g.store.Abandon(ctx, rec.Key, rec.Owner)
	switch {
	case errors.Is(err, store.ErrNotOwner):
		return running // its owner charged it (or a retry decided) meanwhile
	case err != nil:
		return g.storeErr("abandon stale reservation", err)
	}
	g.log.Info("stale reservation dropped: no new work on this path", "record", rec.Key, "old_owner", rec.Owner, "reason", refusal.Reason)
	return refusal
}

// findStored looks up, without writing anything, the record this call would
// resolve to: the keyed record, or the derived slot the call would join.
func (g *Gateway) findStored(ctx context.Context, c *callState, p keyPlan) (store.Record, bool, error) {
	if p.kind != store.KindDerived {
		// Twice at most: a record past its retention is purged, and what
		// the key names after that (nothing, or a reservation that
		// replaced it meanwhile) is read again.
		for range 2 {
			rec, err := g.store.Record(ctx, p.key)
			if errors.Is(err, store.ErrNotFound) {
				return store.Record{}, false, nil
			}
			if err != nil {
				return store.Record{}, false, g.storeErr("read record", err)
			}
			if purged, err := g.purgeExpired(ctx, c, rec); err != nil || !purged {
				return rec, err == nil, err
			}
		}
		return store.Record{}, false, nil
	}
	recs, err := g.slots(ctx, c, p)
	if err != nil {
		return store.Record{}, false, err
	}
	if join, _ := g.chooseSlot(recs, p, c.now); join != nil {
		return *join, true, nil
	}
	return store.Record{}, false, nil
}

// slots reads the records chooseSlot picks from: those cut less than the
// window ago, whatever window they were cut with, and every one still in
// progress.
func (g *Gateway) slots(ctx context.Context, c *callState, p keyPlan) ([]store.Record, error) {
	recs, err := g.store.RecordsByIdentity(ctx, p.identity, c.now.Add(-p.window))
	if err != nil {
		return nil, g.storeErr("read slots", err)
	}
	return g.slotsOf(recs, p), nil
}

// slotsOf is what slot choice sees of the records the store read.
func (g *Gateway) slotsOf(recs []store.Record, p keyPlan) []store.Record {
	if g.bugs.On(bugs.SlotLookupByBucket) {
		// BUG slot-lookup-by-bucket: from the previous bucket on, numbered
		// with the window in force; a slot cut under a longer window has a
		// smaller number and is missed.
		recs = slices.DeleteFunc(recs, func(r store.Record) bool { return r.Bucket < p.bucket-1 })
	}
	return recs
}

// entitled is the IGA check: a call made under a principal token is only
// served while that principal is registered, not revoked and entitled to the
// tool. It consumes nothing, so replays can run it as often as they come.
func (g *Gateway) entitled(ctx context.Context, caller Caller, tool string) error {
	p := caller.Principal
	if p == nil {
		return nil
	}
	pr, err := g.store.Principal(ctx, p.Provider, p.Issuer, p.Subject)
	if errors.Is(err, store.ErrNotFound) {
		// A valid token for a principal the gateway does not know is denied:
		// being able to sign for a subject is not an entitlement.
		return Refuse(ReasonPrincipalDenied, "principal %s is not registered", p.String())
	}
	if err != nil {
		return g.storeErr("read principal", err)
	}
	if pr.Revoked {
		return Refuse(ReasonPrincipalDenied, "principal %s is revoked", p.String())
	}
	if len(pr.Tools) > 0 && !slices.Contains(pr.Tools, tool) {
		return Refuse(ReasonPrincipalDenied, "principal %s is not entitled to tool %q", p.String(), tool)
	}
	return nil
}

// authoriseReplay runs before any stored result is served, on every path
// (the removed-tool one too): the record must have been made by this very
// principal (or, like the caller, by none), and the principal must still be
// entitled. A revoked principal or another principal never gets the result.
func (g *Gateway) authoriseReplay(ctx context.Context, c *callState, rec store.Record) error {
	if g.bugs.On(bugs.ReplayBeforeIGA) {
		return nil // BUG replay-before-iga
	}
	// A record key is scoped to its caller, so another caller reaching this
	// record is a broken key, not a replay. The key-scope switches leave
	// that scope out of the key and, as a gateway built that way would,
	// never look at it here either.
	walletOK := rec.WalletID == c.r.Caller.WalletID || g.bugs.On(bugs.KeyScopeWallet)                                // BUG key-scope-wallet
	keyOK := rec.APIKeyID == c.r.Caller.APIKeyID || g.bugs.On(bugs.KeyScopeWallet) || g.bugs.On(bugs.KeyScopeAPIKey) // BUG key-scope-apikey
	if !walletOK || !keyOK {
		return fmt.Errorf("gateway: record %s scope does not match the caller", rec.Key)
	}
	// With principal-unbound the record's principal is not compared either:
	// the seed's records did not keep it, which is what let the wrong
	// principal read the result.
	if rec.Principal != c.principal && !g.principalUnbound(c) { // BUG principal-unbound, principal-unbound-stateless
		return Refuse(ReasonPrincipalDenied, "the stored outcome was produced for another principal")
	}
	return g.entitled(ctx, c.r.Caller, rec.Tool)
}

// existing is step 6: the key already has a record.
func (g *Gateway) existing(ctx context.Context, c *callState, rec store.Record) (CallResponse, error) {
	reuseReplays := g.bugs.On(bugs.KeyReuseReplays) && rec.State == store.StateCompleted // BUG key-reuse-replays
	if rec.Fingerprint != c.fp && !reuseReplays {
		return CallResponse{}, Refuse(ReasonKeyReused, "idempotency key %q was used with other arguments", rec.ClientKey)
	}
	switch rec.State {
	case store.StateInProgress:
		if g.bugs.On(bugs.TakeoverCharged) && g.stale(c, rec) {
			return g.dispatchUnreserved(ctx, c, rec) // BUG takeover-charged
		}
		if g.bugs.On(bugs.ClaimLapses) && time.Since(rec.UpdatedAt) > bugLease {
			return g.dispatchUnreserved(ctx, c, rec) // BUG claim-lapses: a lease, not the reservation, keeps duplicates out
		}
		if !rec.Charged && g.stale(c, rec) && g.reclaimable(rec) {
			return g.takeOver(ctx, c, rec)
		}
		early := rec.Charged && g.bugs.On(bugs.UncertainEarly)                                 // BUG uncertain-early
		if (early || rec.Charged && g.stale(c, rec)) && !g.bugs.On(bugs.UncertainInProgress) { // BUG uncertain-in-progress
			return CallResponse{}, g.outcomeUnknown(ctx, rec)
		}
		return CallResponse{}, Refuse(ReasonInProgress, "the same operation is running: retry")
	case store.StateCompleted:
		if g.bugs.On(bugs.FinishedKeyExpires) && time.Since(rec.UpdatedAt) > bugLease {
			return g.dispatchUnreserved(ctx, c, rec) // BUG finished-key-expires: the key was forgotten, so this is new work
		}
		if err := g.authoriseReplay(ctx, c, rec); err != nil {
			return CallResponse{}, err
		}
		return g.replay(ctx, c, rec)
	default:
		// A refunded record the reservation did not take over: another
		// attempt is taking it over right now.
		return CallResponse{}, Refuse(ReasonInProgress, "the previous attempt was refunded and is being retried: retry")
	}
}

// bugLease is how long claim-lapses keeps an in-flight claim and
// finished-key-expires a finished key, in real time: a record's stamps are
// the gateway clock's, which is real time unless the control API moved it,
// and a moved clock only ever runs ahead, so only real time passing lapses
// them. A variable only so that this package's tests wait less.
var bugLease = time.Second

// ownedHere notes owner as one of this process's reservations, under the
// stale-reservation-kept bug (which alone needs to know).
func (g *Gateway) ownedHere(owner string) {
	if g.bugs.On(bugs.StaleReservationKept) {
		g.owners.Store(owner, true)
	}
}

// reclaimable says a stale, uncharged reservation may be taken over: any
// may, but under the stale-reservation-kept bug only one this process made,
// as a gateway that keeps its leases in process memory reclaims only its
// own: a reservation left by a process that died is never taken over.
func (g *Gateway) reclaimable(rec store.Record) bool {
	if !g.bugs.On(bugs.StaleReservationKept) {
		return true
	}
	_, mine := g.owners.Load(rec.Owner) // BUG stale-reservation-kept
	return mine
}

// stale: the record was last written at least the stale-lock threshold ago,
// so its owner is presumed gone (killed, or stalled as long as a lock holder
// that is taken over).
func (g *Gateway) stale(c *callState, rec store.Record) bool {
	return c.set.StaleLock > 0 && !c.now.Before(rec.UpdatedAt.Add(c.set.StaleLock))
}

// outcomeUnknown answers a retry of a charged operation whose owner has
// written nothing for the stale-lock threshold. The charge came before the
// dispatch, so the tool may have run; running it again could do its work
// twice, and in-progress would have the client retry for ever if the owner
// was killed. So the answer is final until an operator settles the record
// (control API, operations) or the owner, if only stalled, finishes it; the
// receipt of its debit, when it can be read, says which charge is in
// question.
func (g *Gateway) outcomeUnknown(ctx context.Context, rec store.Record) error {
	ref := Refuse(ReasonOutcomeUnknown, "the operation was charged and its tool may have run, but its outcome was never stored "+
		"(its owner stopped before it finished): an operator must settle it")
	if debit, err := g.chargeEntry(ctx, rec); err != nil {
		g.log.Warn("read the receipt of an uncertain operation", "record", rec.Key, "err", err)
	} else if debit.Receipt != "" {
		ref.Data = map[string]any{"receipt": debit.Receipt}
		if g.bugs.On(bugs.UncertainRefunded) {
			g.refundUncertain(ctx, rec, debit) // BUG uncertain-refunded
		}
	}
	g.log.Warn("tools/call answered outcome_unknown", "record", rec.Key, "owner", rec.Owner, "updated_at", rec.UpdatedAt)
	return ref
}

// takeOver runs an operation whose reservation was abandoned before its
// charge: its owner died (or stalled) after reserving, so nothing was
// debited or dispatched, and without a takeover every retry would be
// answered in-progress forever. The replacement is atomic and conditional
// on the old owner, and the old owner's charge is conditional on still
// owning the record, so at most one of them dispatches. A charged record is
// never taken over: its tool may have run (outcomeUnknown).
func (g *Gateway) takeOver(ctx context.Context, c *callState, old store.Record) (CallResponse, error) {
	rec := old
	rec.Owner, rec.State, rec.Charged = uuid.NewString(), store.StateInProgress, false
	rec.Receipt, rec.Result, rec.CreatedAt, rec.UpdatedAt = "", nil, c.now, c.now
	g.ownedHere(rec.Owner) // BUG stale-reservation-kept
	// The read that found old stale and uncharged proves nothing by the
	// time of the write, which re-checks both: the holder may have charged
	// meanwhile (a pause at takeover.read makes that race deterministic).
	g.hit(ctx, faults.TakeoverRead, c)
	req := store.ReserveRequest{ReplaceStale: &store.Stale{Owner: old.Owner, Before: c.now.Add(-c.set.StaleLock),
		OwnerOnly: g.bugs.On(bugs.TakeoverTrustsRead)}} // BUG takeover-trusts-read
	pm, err := g.store.Permit(ctx, old.PermitID)
	switch {
	case err == nil && !pm.Auto:
		// an explicit permit is used as it is
	case err == nil || errors.Is(err, store.ErrNotFound):
		// The old auto permit is deleted with the old record; the new one
		// lives from now, as it would for a fresh reservation.
		np := g.autoPermit(c, rec.Key)
		rec.PermitID, req.Permit = np.ID, &np
	default:
		return CallResponse{}, g.storeErr("read permit", err)
	}
	req.Record = rec
	got, created, err := g.store.Reserve(ctx, req)
	if err != nil {
		return CallResponse{}, g.storeErr("take over reservation", err)
	}
	if !created {
		if got.State == store.StateCompleted {
			return g.existing(ctx, c, got)
		}
		// Another retry took it over first, or the owner moved on.
		return CallResponse{}, Refuse(ReasonInProgress, "the same operation is running: retry")
	}
	g.log.Info("abandoned reservation taken over", "record", rec.Key, "old_owner", old.Owner, "owner", rec.Owner)
	// Charged apart (run): a takeover refused its charge must still end
	// with the stale record gone, so its old owner cannot charge it later.
	return g.run(ctx, c, rec, newReceipt())
}

// replay serves a stored outcome whole: no dispatch, no ledger entry.
func (g *Gateway) replay(ctx context.Context, c *callState, rec store.Record) (CallResponse, error) {
	body, rc, err := replayed(rec.Result)
	if err != nil {
		return CallResponse{}, fmt.Errorf("gateway: stored result of %s: %w", rec.Key, err)
	}
	if g.bugs.On(bugs.ReplayDebits) && rc.Charged > 0 {
		// BUG replay-debits: a replay is billed again.
		err := g.appendDebit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID,
			Kind: store.EntryDebit, Amount: rc.Charged, RecordKey: rec.Key, Receipt: rec.Receipt, Tool: rec.Tool, At: g.clock.Now()})
		if err != nil {
			return CallResponse{}, g.storeErr("append debit", err)
		}
	}
	if g.bugs.On(bugs.FreshReceiptOnReplay) {
		// BUG fresh-receipt-on-replay: the replay looks like a new operation.
		rc.ID = "rcpt-" + uuid.NewString()
		if body, err = withReceipt(body, rc); err != nil {
			return CallResponse{}, fmt.Errorf("gateway: replay receipt: %w", err)
		}
	}
	if g.bugs.On(bugs.ReplayUnmarkedUndelivered) && g.firstDelivery(rec.Key) {
		// BUG replay-unmarked-undelivered: the first answer never reached
		// the client, so this one is sent as if it were the first.
		rc.Replayed = false
		if body, err = withReceipt(body, rc); err != nil {
			return CallResponse{}, fmt.Errorf("gateway: replay receipt: %w", err)
		}
	}
	if g.bugs.On(bugs.ReplayDropsStructured) {
		body = withoutMember(body, "structuredContent") // BUG replay-drops-structured
	}
	if g.bugs.On(bugs.ReplayRevalidates) {
		g.revalidate(rec, c.r.Arguments) // BUG replay-revalidates
	}
	g.log.Info("tools/call replayed", "tool", rec.Tool, "wallet", rec.WalletID, "kind", rec.Kind, "receipt", rec.Receipt)
	return CallResponse{Result: body}, nil
}

// reserveKeyed is step 5: a client key or an explicit permit. The insert is
// atomic (insert if absent), so of two twins exactly one reserves and the
// other finds its record. ReplaceRefunded lets the retry of a refunded
// pre-dispatch failure really run again. With charge the record it creates
// is charged too; on an error the record it tried to reserve comes back
// with it (refusedCharge names its permit).
func (g *Gateway) reserveKeyed(ctx context.Context, c *callState, p keyPlan, charge *store.ChargeRequest) (store.Record, bool, error) {
	rec := g.newRecord(c, p, uuid.NewString())
	req := store.ReserveRequest{ReplaceRefunded: true, Charge: charge}
	if p.permit != nil {
		rec.PermitID = p.permit.ID // an explicit permit is used as it is
	} else {
		pm := g.autoPermit(c, rec.Key)
		rec.PermitID, req.Permit = pm.ID, &pm
	}
	req.Record = rec
	got, created, err := g.store.Reserve(ctx, req)
	if err != nil {
		return rec, false, g.storeErr("reserve", err)
	}
	return got, created, nil
}

// reserveDerived is step 4 from the lock on: slot choice and mint run under
// the identity's lock row in the database (so the rule holds across
// processes), and the reservation is a write conditional on still holding
// that lock with the fence read at acquisition. charge is as for
// reserveKeyed. Unless something must be able to stop the call between
// them (oneWrite), the lock, the choice and the reservation are one write.
func (g *Gateway) reserveDerived(ctx context.Context, c *callState, p keyPlan, charge *store.ChargeRequest) (store.Record, bool, error) {
	owner := uuid.NewString() // the new record's id; the lock is pinned to it
	// A live lock held by another call is answered from a plain read, so a
	// storm of identical unkeyed calls does not queue for the store's write
	// lock only to learn the same. AcquireLock still decides every other
	// case (no lock, a stale one, a race with the holder's release).
	if held, err := g.store.LockOf(ctx, p.identity); err == nil && c.now.Sub(held.AcquiredAt) < c.set.StaleLock {
		return g.lockHeld(ctx, c, p)
	}
	if g.oneWrite(c) {
		return g.reserveSlot(ctx, c, p, owner, charge)
	}
	lock, err := g.store.AcquireLock(ctx, p.identity, owner, c.now, c.set.StaleLock)
	if errors.Is(err, store.ErrLockHeld) {
		return g.lockHeld(ctx, c, p)
	}
	if err != nil {
		return store.Record{}, false, g.storeErr("acquire lock", err)
	}
	// A reservation made under the fence deletes the lock row itself
	// (Release), in its own commit; every other way out releases it here.
	released := false
	defer func() {
		if !released {
			g.releaseLock(ctx, p.identity, owner)
		}
	}()
	g.hit(ctx, faults.LockAcquired, c)

	recs, err := g.slots(ctx, c, p)
	if err != nil {
		// Never guess a slot on a failed read: a new slot could double a
		// dispatch that the unread one already made.
		return store.Record{}, false, err
	}
	join, attempt := g.chooseSlot(recs, p, c.now)
	if join != nil {
		return *join, false, nil // resolved like a reservation that found a record
	}
	rec, pm := g.newSlot(c, p, owner, attempt)

	fenceLost := Refuse(ReasonInProgress, "the retry lock was taken over: retry")
	var fence *store.Fence
	switch {
	case g.bugs.On(bugs.StaleLockNoFence): // BUG stale-lock-no-fence: the holder never checks its lock
	case g.bugs.On(bugs.SelectForUpdateSQLite):
		// BUG select-for-update-sqlite: a read of the lock row is the whole
		// check, and a takeover may land between it and the insert.
		cur, err := g.store.LockOf(ctx, p.identity)
		if errors.Is(err, store.ErrNotFound) {
			return store.Record{}, false, fenceLost
		}
		if err != nil {
			return store.Record{}, false, g.storeErr("read lock", err)
		}
		if cur.Owner != owner || cur.Fence != lock.Fence {
			return store.Record{}, false, fenceLost
		}
	default:
		// No read of the lock row first: it would prove nothing by the time
		// the insert runs, which is itself conditional on the fence, in one
		// transaction, and a holder that lost its lock earlier fails there.
		fence = &store.Fence{Identity: p.identity, Owner: owner, Fence: lock.Fence}
	}
	g.hit(ctx, faults.FenceRead, c)

	var afterClaim func(ctx context.Context) error
	if g.faults.Armed(faults.ClaimHeld, faultMatch(c)) {
		// Only for an armed pause point: a hook that may stall inside the
		// transaction makes SQLite commit it alone, not with the others.
		afterClaim = func(ctx context.Context) error {
			g.hit(ctx, faults.ClaimHeld, c)
			return nil
		}
	}
	release := fence != nil && !g.bugs.On(bugs.ReleaseUnpinned) // BUG release-unpinned: its own release, whoever holds the row
	got, created, err := g.store.Reserve(ctx, store.ReserveRequest{Record: rec, Permit: &pm, Fence: fence, AfterClaim: afterClaim,
		Charge: charge, Release: release})
	released = created && release
	if errors.Is(err, store.ErrFenceLost) {
		// A stale holder writes nothing: the taker-over decides the slot.
		g.log.Info("unkeyed call lost its retry lock", "identity", p.identity, "owner", owner, "fence", lock.Fence)
		return store.Record{}, false, fenceLost
	}
	if err != nil {
		return rec, false, g.storeErr("reserve", err)
	}
	return got, created, nil
}

// oneWrite: the unkeyed call c takes its lock, chooses its slot and
// reserves it in one write (reserveSlot), not two (the lock's commit, then
// the fenced reservation that releases it). The lock row is then never
// committed, so nothing can stop between taking it and the fenced claim:
// the three-commit path stays for a pause or failure armed at lock.acquired,
// fence.read or claim.held, and for the bug switches that live between
// those commits.
func (g *Gateway) oneWrite(c *callState) bool {
	m := faultMatch(c)
	for _, pt := range []string{faults.LockAcquired, faults.FenceRead, faults.ClaimHeld} {
		if g.faults.Armed(pt, m) {
			return false
		}
	}
	return !g.bugs.On(bugs.StaleLockNoFence) && !g.bugs.On(bugs.SelectForUpdateSQLite) && !g.bugs.On(bugs.ReleaseUnpinned)
}

// reserveSlot is reserveDerived in one write: the store takes the lock and
// reads the slots, chooseSlot picks one inside its transaction, and the
// reservation it makes, charged when charge is set, deletes the lock row in
// the same commit. On a refused charge the reservation it tried comes back
// (refusedCharge names its permit).
func (g *Gateway) reserveSlot(ctx context.Context, c *callState, p keyPlan, owner string,
	charge *store.ChargeRequest) (store.Record, bool, error) {
	var tried store.Record
	got, created, err := g.store.ReserveSlot(ctx, store.SlotRequest{Identity: p.identity, Owner: owner,
		Now: c.now, StaleAfter: c.set.StaleLock, Since: c.now.Add(-p.window),
		Choose: func(slots []store.Record) (*store.Record, store.ReserveRequest) {
			join, attempt := g.chooseSlot(g.slotsOf(slots, p), p, c.now)
			if join != nil {
				return join, store.ReserveRequest{}
			}
			rec, pm := g.newSlot(c, p, owner, attempt)
			tried = rec
			return nil, store.ReserveRequest{Record: rec, Permit: &pm, Charge: charge}
		}})
	if errors.Is(err, store.ErrLockHeld) {
		return g.lockHeld(ctx, c, p)
	}
	if err != nil {
		return tried, false, g.storeErr("reserve slot", err)
	}
	return got, created, nil
}

// newSlot is the reservation of a new slot (attempt of p's bucket) with
// its auto permit.
func (g *Gateway) newSlot(c *callState, p keyPlan, owner string, attempt int) (store.Record, store.Permit) {
	p.clientKey = slotKey(p, attempt)
	p.key = recordKey(store.KindDerived, c.r.Caller.WalletID, c.r.Caller.APIKeyID, p.principal, c.tool.Name, p.clientKey)
	rec := g.newRecord(c, p, owner)
	rec.Identity, rec.Bucket, rec.Attempt = p.identity, p.bucket, attempt
	pm := g.autoPermit(c, rec.Key)
	rec.PermitID = pm.ID
	return rec, pm
}

// lockHeld answers an unkeyed call whose identity's lock another call
// holds. A completed slot it would join is final, so it is served from a
// plain read, as a keyed replay is: retries of a finished call do not queue
// for the lock one at a time (each told in progress meanwhile). Anything
// else waits for the holder: the retryable in-progress answer.
func (g *Gateway) lockHeld(ctx context.Context, c *callState, p keyPlan) (store.Record, bool, error) {
	if done, found, err := g.findStored(ctx, c, p); err == nil && found && done.State == store.StateCompleted {
		return done, false, nil
	}
	return store.Record{}, false, Refuse(ReasonInProgress, "an identical unkeyed call holds the retry lock: retry")
}

// releaseLock deletes the lock row only while this call still holds it: a
// holder that was taken over must not free its successor's lock.
func (g *Gateway) releaseLock(ctx context.Context, identity, owner string) {
	if g.bugs.On(bugs.ReleaseUnpinned) {
		// BUG release-unpinned: whoever holds the row now loses it.
		if err := g.durable(ctx, func(ctx context.Context) error { return g.releaseLockAny(ctx, identity) }); err != nil {
			g.log.Warn("release retry lock", "identity", identity, "err", err)
		}
		return
	}
	var released bool
	err := g.durable(ctx, func(ctx context.Context) error {
		var err error
		released, err = g.store.ReleaseLock(ctx, identity, owner)
		return err
	})
	switch {
	case err != nil:
		// Left behind, the row goes stale and is taken over after StaleLock.
		g.log.Warn("release retry lock", "identity", identity, "owner", owner, "err", err)
	case !released:
		g.log.Debug("retry lock was taken over; the new holder's row is left alone", "identity", identity, "owner", owner)
	}
}

// durable runs a bookkeeping write that must happen even when the client has
// gone (its context is detached from cancellation) and retries it a few
// times on a lock timeout: a write lost here would leave a record in
// progress or a lock row behind.
func (g *Gateway) durable(ctx context.Context, fn func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for i := range 4 {
		if err = fn(ctx); !errors.Is(err, store.ErrBusy) {
			return err
		}
		time.Sleep(time.Duration(i+1) * 25 * time.Millisecond)
	}
	return err
}

// run is step 7: a new reservation is charged (unless it was with its
// reservation: rec.Charged), dispatched and finished. receipt is the one
// its charge names.
func (g *Gateway) run(ctx context.Context, c *callState, rec store.Record, receipt string) (CallResponse, error) {
	if !rec.Charged {
		if err := g.charge(ctx, c, rec, receipt); err != nil {
			return CallResponse{}, err
		}
	}
	charged := c.tool.Price

	if g.hit(ctx, faults.DispatchBefore, c) == faults.Fail {
		return CallResponse{}, g.refund(ctx, c, rec, receipt, charged, errors.New("fault dispatch.before"))
	}
	if settled, ok, err := g.settledMeanwhile(ctx, c, rec); ok || err != nil {
		return settled, err
	}
	dctx := ctx
	if g.bugs.On(bugs.CancelReachesUpstream) {
		var stop context.CancelFunc
		dctx, stop = cancelledWithClient(ctx, c.r.ClientDone) // BUG cancel-reaches-upstream
		defer stop()
	}
	result, err := g.dispatch(dctx, DispatchRequest{Tool: c.tool, Arguments: c.r.Arguments, WalletID: rec.WalletID, RecordKey: rec.Key})
	if p := (*dispatchPanic)(nil); errors.As(err, &p) {
		return CallResponse{}, g.crashed(ctx, c, rec, receipt, charged, p)
	}
	if ir := (*InputRequired)(nil); errors.As(err, &ir) {
		return g.inputRequired(ctx, c, rec, receipt, charged, ir)
	}
	if err != nil {
		if g.bugs.On(bugs.UpstreamErrorCharged) && !capabilityRefusal(err) {
			charged = 0 // BUG upstream-error-charged: nothing to give back, as the gateway sees it
		}
		return CallResponse{}, g.refund(ctx, c, rec, receipt, charged, err)
	}
	if (g.bugs.On(bugs.ToolErrorNotStored) && isErrorResult(result)) || (g.bugs.On(bugs.LargeArgsUnstored) && len(c.canon) > 8192) {
		return g.errorNotStored(ctx, c, rec, receipt, charged, result) // BUG tool-error-not-stored, large-args-unstored
	}
	d := g.dispatchRow(c, rec)
	if g.bugs.On(bugs.CancelForgets) && clientGone(c.r.ClientDone) {
		return CallResponse{}, g.forget(ctx, c, rec, receipt, charged, d) // BUG cancel-forgets
	}

	body, err := withReceipt(result, Receipt{ID: receipt, IdempotencyKey: rec.ClientKey, Charged: charged})
	if err != nil {
		g.logDispatch(ctx, rec, d)
		return CallResponse{}, fmt.Errorf("gateway: build result: %w", err)
	}
	stored := body
	if g.bugs.On(bugs.RoundsStoreQuestion) {
		stored = g.storedQuestion(rec, receipt, charged, body) // BUG rounds-store-question
	}
	if err := g.complete(ctx, rec, receipt, stored, d); err != nil {
		return CallResponse{}, err
	}
	g.log.Info("tools/call dispatched", "tool", c.tool.Name, "wallet", rec.WalletID, "kind", rec.Kind, "receipt", receipt, "charged", charged)

	if clientGone(c.r.ClientDone) {
		g.undelivered(rec.Key) // BUG replay-unmarked-undelivered: no one to write the answer to
	}
	switch g.hit(ctx, faults.DispatchAfter, c) {
	case faults.Fail:
		g.undelivered(rec.Key) // BUG replay-unmarked-undelivered
		return CallResponse{}, Refuse(ReasonResponseFailed, "the tool ran and its outcome is stored, but the response failed: retry to get it")
	case faults.DropResponse:
		g.undelivered(rec.Key) // BUG replay-unmarked-undelivered
		return CallResponse{Drop: true}, nil
	}
	return CallResponse{Result: body}, nil
}

// settledMeanwhile fences, before its dispatch, a call that stalled after
// its charge for the stale-lock threshold: meanwhile its operation may have
// been answered outcome_unknown and an operator, taking it for dead, may
// have settled it. The fence (store Resume) writes the record afresh only
// while it is still the call's own in progress, so either the settlement
// came first, and the tool is not run and the call is answered as any retry
// of it is (the settled result; in progress for one settled refunded, whose
// retry runs it afresh), or the fence did, and a settlement after it is
// refused not_uncertain. A call that has not stalled that long cannot have
// been settled (a settlement needs its record untouched that long, and it
// was charged after the call began), so it pays no write.
func (g *Gateway) settledMeanwhile(ctx context.Context, c *callState, rec store.Record) (CallResponse, bool, error) {
	// An operator settles by the threshold of the moment, which may have
	// been lowered while the call stalled: the lower of the two decides.
	stale := c.set.StaleLock
	if now := g.Settings().StaleLock; now > 0 && (stale <= 0 || now < stale) {
		stale = now
	}
	if stale <= 0 || g.clock.Now().Sub(c.now) < stale || g.bugs.On(bugs.SettleOverwritten) {
		return CallResponse{}, false, nil // BUG settle-overwritten: no re-read
	}
	if (g.bugs.On(bugs.KeyedTakeoverUnfenced) && rec.Kind != store.KindDerived) || g.bugs.On(bugs.TakeoverTrustsRead) {
		// BUG keyed-takeover-unfenced, takeover-trusts-read: these let a
		// charged record change hands, which nothing else does but a
		// settlement; a gateway built with them (no fence on its debit, a
		// takeover on a stale read) never asks again before its dispatch
		// either, and this read would hide the double dispatch they do.
		return CallResponse{}, false, nil
	}
	// A conditional write, not a read: once it lands the record is fresh,
	// so a settlement after it is refused (not_uncertain), and no operator
	// can settle the operation between this fence and the dispatch.
	err := g.durable(ctx, func(ctx context.Context) error { return g.store.Resume(ctx, rec.Key, rec.Owner, g.clock.Now()) })
	switch {
	case err == nil:
		return CallResponse{}, false, nil
	case !errors.Is(err, store.ErrNotOwner):
		return CallResponse{}, true, g.storeErr("resume a stalled record", err)
	}
	cur, err := g.store.Record(ctx, rec.Key)
	if err != nil {
		return CallResponse{}, true, g.storeErr("re-read a stalled record", err)
	}
	g.log.Warn("stalled call found its operation settled: not dispatched", "record", rec.Key, "state", cur.State)
	resp, err := g.existing(ctx, c, cur)
	return resp, true, err
}

// complete stores a dispatched call's outcome with its dispatch row. When
// that fails the tool ran and was paid for, but its outcome is not stored:
// the record stays in progress, so retries are answered in-progress rather
// than dispatched again. The dispatch is still logged.
func (g *Gateway) complete(ctx context.Context, rec store.Record, receipt string, body json.RawMessage, d store.Dispatch) error {
	err := g.durable(ctx, func(ctx context.Context) error {
		return g.store.Finish(ctx, rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: receipt, Result: body,
			Dispatch: &d, Now: g.clock.Now(), Overwrite: g.bugs.On(bugs.SettleOverwritten)}) // BUG settle-overwritten
	})
	if err != nil {
		g.logDispatch(ctx, rec, d)
		g.log.Error("tools/call ran but its outcome was not stored", "record", rec.Key, "receipt", receipt, "err", err)
		return g.storeErr("finish", err)
	}
	return nil
}

// dispatchPanic is a panic of the Dispatcher, recovered at the dispatch
// boundary.
type dispatchPanic struct {
	value any
	stack []byte
}

func (p *dispatchPanic) Error() string { return fmt.Sprintf("the dispatch panicked: %v", p.value) }

// dispatch runs the tool. A panic in the Dispatcher (a local tool, the
// upstream client) is returned as a *dispatchPanic: unrecovered here it would
// leave the record charged and in progress for good, since a charged record
// is never taken over.
func (g *Gateway) dispatch(ctx context.Context, r DispatchRequest) (res json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &dispatchPanic{value: v, stack: debug.Stack()}
		}
	}()
	return g.disp.Dispatch(ctx, r)
}

// crashedResult is the outcome stored for a dispatch that panicked.
const crashedResult = `{"content":[{"type":"text","text":"the tool failed while running (the gateway's dispatch crashed): whether it had any effect is unknown"}],"isError":true}`

// crashed finishes a call whose dispatch panicked. The tool may have done
// its work before the crash, so the call is finished as one whose outcome is
// unknown (docs/wire.md, Results): not refunded, its dispatch logged, an
// isError result stored under its receipt for a retry to replay, never run
// again. The caller is answered internal_error, with that receipt.
func (g *Gateway) crashed(ctx context.Context, c *callState, rec store.Record, receipt string, charged int64, p *dispatchPanic) error {
	g.log.Error("tools/call dispatch panicked", "tool", c.tool.Name, "record", rec.Key, "receipt", receipt,
		"panic", fmt.Sprint(p.value), "stack", string(p.stack))
	body, err := withReceipt(json.RawMessage(crashedResult), Receipt{ID: receipt, IdempotencyKey: rec.ClientKey, Charged: charged})
	if err != nil {
		return fmt.Errorf("gateway: build result: %w", err)
	}
	if err := g.complete(ctx, rec, receipt, body, g.dispatchRow(c, rec)); err != nil {
		return err
	}
	ref := Refuse(ReasonInternal, "the tool failed while running (the gateway's dispatch crashed); "+
		"whether it had any effect is unknown, so the call is charged and this outcome stored: a retry replays it")
	ref.Data = map[string]any{"receipt": receipt}
	return ref
}

// charge debits a reservation made without its charge, before dispatch:
// too little balance is refused before the tool runs, and the permit is
// spent in the same transaction. A free tool is charged 0: the charge is
// also the claim for dispatch, conditional on still owning the
// reservation, so a reservation taken over as abandoned (takeOver) is never
// dispatched by its old owner too.
func (g *Gateway) charge(ctx context.Context, c *callState, rec store.Record, receipt string) error {
	now := g.clock.Now()
	debit := store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryDebit,
		Amount: c.tool.Price, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	err := g.store.Charge(ctx, store.ChargeRequest{Entry: debit, RecordKey: rec.Key, Owner: rec.Owner, PermitID: rec.PermitID, Now: now})
	if errors.Is(err, store.ErrNotOwner) && g.bugs.On(bugs.KeyedTakeoverUnfenced) && rec.Kind != store.KindDerived {
		// BUG keyed-takeover-unfenced: the debit is written whoever owns the
		// reservation now, and the dispatch follows it.
		return g.durable(ctx, func(ctx context.Context) error { return g.appendDebit(ctx, debit) })
	}
	if errors.Is(err, store.ErrInsufficientFunds) && g.bugs.On(bugs.FundsUnlocked) {
		return g.chargeUnchecked(ctx, debit) // BUG funds-unlocked
	}
	if errors.Is(err, store.ErrNotOwner) {
		// A retry took the reservation over while this call stalled before
		// its charge: that retry runs the operation.
		return Refuse(ReasonInProgress, "the reservation was taken over by a retry: retry")
	}
	if err == nil {
		return nil
	}
	// Nothing was charged or dispatched: drop the reservation so a retry
	// (after a top-up, say) runs instead of finding it.
	g.dropReservation(ctx, rec)
	if ref := (*Refusal)(nil); errors.As(g.refusedCharge(ctx, c, rec, err), &ref) {
		return ref
	}
	return g.storeErr("charge", err)
}

// dropReservation deletes a reservation nothing was charged or dispatched
// for, so a retry runs instead of finding it; a failure is logged, as the
// call's answer says nothing ran either way.
func (g *Gateway) dropReservation(ctx context.Context, rec store.Record) {
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Abandon(ctx, rec.Key, rec.Owner) }); err != nil {
		g.log.Warn("abandon reservation", "record", rec.Key, "err", err)
	}
}

// refund finishes a record whose call failed before dispatch: the debit is
// given back in the same transaction (net zero), and the record is
// failed_refunded so a retry takes a fresh attempt instead of replaying the
// failure. The answer is dispatch_failed, or the Refusal cause carries (a
// Dispatcher's, such as an upstream's client_capabilities_missing).
func (g *Gateway) refund(ctx context.Context, c *callState, rec store.Record, receipt string, charged int64, cause error) error {
	now := g.clock.Now()
	o := store.Outcome{State: store.StateFailedRefunded, Receipt: receipt, Now: now,
		RefundKeepsPermitSpend: g.bugs.On(bugs.PermitRefundKept) && c.r.PermitID != ""} // BUG permit-refund-kept
	if g.bugs.On(bugs.RefundAtCurrentPrice) && charged > 0 {
		charged = g.currentPrice(ctx, c, charged) // BUG refund-at-current-price
	}
	if charged > 0 && !g.bugs.On(bugs.RefundMissing) { // BUG refund-missing: the charge is kept
		o.Refund = &store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryRefund,
			Amount: charged, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	}
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Finish(ctx, rec.Key, rec.Owner, o) }); err != nil {
		g.log.Error("refund after a pre-dispatch failure", "record", rec.Key, "err", err)
		return g.storeErr("refund", err)
	}
	g.log.Info("tools/call failed before dispatch, refunded", "tool", c.tool.Name, "record", rec.Key, "cause", cause)
	if ref := (*Refusal)(nil); errors.As(cause, &ref) {
		return ref
	}
	return Refuse(ReasonDispatchFailed, "the call failed before the tool ran and was refunded: retry")
}

// clientGone reports whether done is closed, without waiting.
func clientGone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// dispatchRow is the dispatch log row of a call that just reached its tool.
func (g *Gateway) dispatchRow(c *callState, rec store.Record) store.Dispatch {
	return store.Dispatch{ID: store.NewRowID("d-"), Tool: c.tool.Name, RecordKey: rec.Key, Fingerprint: c.fp,
		WalletID: rec.WalletID, At: g.clock.Now()}
}

// logDispatch writes a dispatch log row on its own, where no Finish carries it.
func (g *Gateway) logDispatch(ctx context.Context, rec store.Record, d store.Dispatch) {
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.LogDispatch(ctx, d) }); err != nil {
		g.log.Warn("log dispatch", "record", rec.Key, "err", err)
	}
}
