// Package bugs lists the reference gateway's bug switches: each puts back one
// bug from the seed reviews, so the self-test can prove the harness catches it.
package bugs

import (
	"fmt"
	"sort"
	"strings"
)

// Names of the switches.
const (
	RandomUnkeyedKey      = "random-unkeyed-key"
	FloorBucket           = "floor-bucket"
	PrincipalUnbound      = "principal-unbound"
	ReplayBeforeIGA       = "replay-before-iga"
	ReadonlyCollapsed     = "readonly-collapsed"
	LookupBeforeReserve   = "lookup-before-reserve"
	StaleLockNoFence      = "stale-lock-no-fence"
	ReleaseUnpinned       = "release-unpinned"
	SelectForUpdateSQLite = "select-for-update-sqlite"
	LockTimeoutInternal   = "lock-timeout-internal"
	ReplayDebits          = "replay-debits"
	RefundMissing         = "refund-missing"
	WindowIgnoresTTL      = "window-ignores-ttl"
	TakeoverCharged       = "takeover-charged"
	// PermitExpiryBlocksReplay: the reference gateway's own behaviour until
	// December 2026, kept as a switch since a scenario holds gateways to the fix.
	PermitExpiryBlocksReplay = "permit-expiry-blocks-replay"
	NoIdempotency            = "no-idempotency"
	KeyScopeTool             = "key-scope-tool"
	KeyScopeAPIKey           = "key-scope-apikey"
	KeyScopeWallet           = "key-scope-wallet"
	CancelForgets            = "cancel-forgets"
	RemovedToolTakeover      = "removed-tool-takeover"
	PermitSkipsKeyRules      = "permit-skips-key-rules"
	SlotLookupByBucket       = "slot-lookup-by-bucket"
	RunningSlotExpires       = "running-slot-expires"
	StalledPermitExpired     = "stalled-permit-expired"
	DoublePrice              = "double-price"
	RefusalFee               = "refusal-fee"
	FreshReceiptOnReplay     = "fresh-receipt-on-replay"
	KeyReuseReplays          = "key-reuse-replays"
	RoundsCharged            = "rounds-charged"
	LateDebit                = "late-debit"
	RemovedToolRuns          = "removed-tool-runs"
	ForeignContent           = "foreign-content"
	KeyScopeBilling          = "key-scope-billing"
	ParseError500            = "parse-error-500"
	// An adversarial review of the reference gateway.
	RoundsReplayReruns      = "rounds-replay-reruns"
	RoundsStoreQuestion     = "rounds-store-question"
	CapabilityRefusalKept   = "capability-refusal-kept"
	CapabilityRefundTwice   = "capability-refund-twice"
	ReplayDropsStructured   = "replay-drops-structured"
	ReplayResultTypeMissing = "replay-resulttype-missing"
	SessionContentDropped   = "session-content-dropped"
	RoundsToLegacyClient    = "rounds-to-legacy-client"
	RoundsFingerprinted     = "rounds-fingerprinted"
	RefusalsRetryable       = "refusals-retryable"
	// Harms that show only in a dimension most scenarios do not vary: the
	// protocol version, the process a call reaches, real time passing.
	PrincipalUnboundStateless  = "principal-unbound-stateless"
	PrincipalFailOpenStateless = "principal-fail-open-stateless"
	KeyedTakeoverUnfenced      = "keyed-takeover-unfenced"
	KeyedRecordsPerProcess     = "keyed-records-per-process"
	FinishedKeyExpires         = "finished-key-expires"
	ClaimLapses                = "claim-lapses"
	// Harms that show only in shapes of keys, arguments, balances and
	// upstream answers most scenarios do not vary.
	KeyCaseFolded        = "key-case-folded"
	KeyTruncated         = "key-truncated"
	FingerprintShallow   = "fingerprint-shallow"
	FingerprintRawBytes  = "fingerprint-raw-bytes"
	UpstreamErrorCharged = "upstream-error-charged"
	ToolErrorNotStored   = "tool-error-not-stored"
	FundsBoundary        = "funds-boundary"
	LargeArgsUnbound     = "large-args-unbound"
	LargeArgsUnstored    = "large-args-unstored"
	FundsUnlocked        = "funds-unlocked"
	PermitRefundKept     = "permit-refund-kept"
	// Harms at edges the other scenarios never reach: a retry within a
	// second of the window's end, a list sent in another order.
	WindowWholeSeconds     = "window-whole-seconds"
	FingerprintSortedLists = "fingerprint-sorted-lists"
	// A takeover decided on a read of the record that the write does not
	// re-check: the holder may have charged in between.
	TakeoverTrustsRead = "takeover-trusts-read"
	// UncertainInProgress: the reference gateway's own behaviour before
	// outcome_unknown, kept as a switch since lost-04 holds gateways to it.
	UncertainInProgress = "uncertain-in-progress"
	// SettleOverwritten: a holder that wakes after an operator settled its
	// uncertain operation does not re-read it before dispatching, and its
	// outcome is stored over the settlement.
	SettleOverwritten = "settle-overwritten"
	// SettleRefundUnwritten: settling refunded ends the record
	// failed_refunded but writes no refund entry.
	SettleRefundUnwritten = "settle-refund-unwritten"
	// ToolEntriesUnversioned: a process's kept tool entries are used
	// whatever the registry's version says.
	ToolEntriesUnversioned = "tool-entries-unversioned"
	// PermitUnscoped: an explicit permit is spent by whoever names it.
	PermitUnscoped = "permit-unscoped"
	// PrincipalPerSession: a 2025-11-25 session keeps the principal its
	// first verified token named.
	PrincipalPerSession = "principal-per-session"
	// RefundAtCurrentPrice: a refund's amount is the tool's price when it is
	// written, not its call's debit.
	RefundAtCurrentPrice = "refund-at-current-price"
	// CancelReachesUpstream: the client's cancellation cancels the
	// upstream call, whose cut-short answer is stored as the outcome.
	CancelReachesUpstream = "cancel-reaches-upstream"
	// UncertainRefunded: the debit of an operation answered
	// outcome_unknown is refunded at once, the operation left uncertain.
	UncertainRefunded = "uncertain-refunded"
	// UncertainEarly: outcome_unknown without the stale-lock threshold, the
	// answer's whole condition taken for charged and in progress.
	UncertainEarly = "uncertain-early"
	// ReplayRevalidates: a duplicate dispatch that comes only after the
	// answer, seen by the re-read of dispatches at a scenario's or run's end.
	ReplayRevalidates = "replay-revalidates"
	// ReplayUnmarkedUndelivered: a replay's marker, seen only where the
	// harness knows the first answer was lost after the tool ran.
	ReplayUnmarkedUndelivered = "replay-unmarked-undelivered"
	// The retention purge.
	PurgeInsideWindow = "purge-inside-window"
	PurgeUncertain    = "purge-uncertain"
	// StaleReservationKept: a keyed reservation whose owner process died
	// before its charge is never taken over (crash-01): leases kept in
	// process memory, each process reclaiming only its own.
	StaleReservationKept = "stale-reservation-kept"
)

// Bug describes one switch.
type Bug struct {
	Name        string
	Description string
	Store       string // "" any store, or the store where the bug lives
	// Layer is "" for the gateway core, or "wire" for a switch of the HTTP
	// layer in front of it, which the gateway package's scenarios cannot
	// reach (the harness's scenarios and reference/wire's tests catch it).
	Layer string
}

// All lists every switch.
var All = []Bug{
	{Name: RandomUnkeyedKey, Description: "unkeyed calls mint a fresh random key, so a retry dispatches and charges again (SEL-498)"},
	{Name: FloorBucket, Description: "no previous-bucket join: a retry just past a window boundary dispatches again"},
	{Name: PrincipalUnbound, Description: "the derived key leaves out the verified principal: another principal gets the first one's result"},
	{Name: ReplayBeforeIGA, Description: "a stored result is served before the principal check, also on the removed-tool path"},
	{Name: ReadonlyCollapsed, Description: "read-only tools get derived keys and replay stale results"},
	{Name: LookupBeforeReserve, Description: "the key is looked up, the work dispatched, then the record written (concurrent-enqueue bug)"},
	{Name: StaleLockNoFence, Description: "a lock takeover does not fence the old holder, which still mints and dispatches"},
	{Name: ReleaseUnpinned, Description: "releasing deletes whatever lock row holds the slot, freeing a newer holder's lock"},
	{Name: SelectForUpdateSQLite, Description: "fence ownership checked by a plain read (SELECT ... FOR UPDATE, a no-op on SQLite) before an unconditional insert", Store: "sqlite"},
	{Name: LockTimeoutInternal, Description: "a store lock timeout surfaces as internal_error instead of retryable in-progress"},
	{Name: ReplayDebits, Description: "a replay writes another debit"},
	{Name: RefundMissing, Description: "a failure before dispatch keeps the charge"},
	{Name: WindowIgnoresTTL, Description: "the advertised window is used though auto permits expire sooner"},
	{Name: PermitExpiryBlocksReplay, Description: "an expired explicit permit is refused before the stored outcome of the operation it already ran is looked at: a retry after a lost response never learns what it paid for"},
	{Name: TakeoverCharged, Description: "a naive lease: a retry runs again any in-progress operation older than the stale-lock threshold, even one already charged whose holder then dispatches too"},
	{Name: NoIdempotency, Description: "a naive proxy: every tools/call is a new operation, dispatched and charged (client keys, permits and derived keys ignored; unkeyed read-only and approval-gated calls run); refusals that need no key (auth, principal, funds, unknown tool, bad arguments) stay"},
	{Name: KeyScopeTool, Description: "a client key's record leaves out the tool: the same key and arguments on another tool replay the first tool's result"},
	{Name: KeyScopeAPIKey, Description: "a client key's record leaves out the API key: another key of the same wallet with the same key and arguments gets the first caller's result"},
	{Name: KeyScopeWallet, Description: "a client key's record leaves out the wallet and the API key: a caller of another wallet with the same key and arguments gets the first caller's result"},
	{Name: CancelForgets, Description: "the operation's clean-up is tied to the client's request: a call whose client cancels (notifications/cancelled, or a closed response stream) while the tool runs is thrown away once the tool answers, its charge refunded and its record left for new work, so a same-key retry dispatches the tool again and is charged again"},
	{Name: RemovedToolTakeover, Description: "the removed-tool path answers a stored in-progress record as any retry does: a reservation past the stale-lock threshold is taken over and run, priced 0 (the removed tool's price is unknown) and with no entitlement check"},
	{Name: PermitSkipsKeyRules, Description: "a call under an explicit permit and no client key skips the read-only and approval refusals: a read-only tool replays a stale answer for the permit's life, an approval-gated one runs without a client key"},
	{Name: SlotLookupByBucket, Description: "slot lookups select records by the bucket numbers of the window in force, so a slot cut under a longer window is not found once the window is lowered (settings, or another process): a retry dispatches and charges again"},
	{Name: RunningSlotExpires, Description: "an unkeyed operation still running is joined only inside the window: a retry past it, while the charged first call has not finished, dispatches and charges again"},
	{Name: StalledPermitExpired, Description: "a call that stalled before its charge until its auto permit expired is answered permit_expired, naming a permit the client never saw, instead of retryable (nothing ran)"},
	{Name: DoublePrice, Description: "every dispatch is debited twice the tool's price (one debit entry, the wrong amount)"},
	{Name: RefusalFee, Description: "a call refused for insufficient funds writes a 5-credit \"fee\" ledger entry, a charge for nothing dispatched"},
	{Name: FreshReceiptOnReplay, Description: "a replay is served with a fresh receipt id instead of the stored one: the client cannot match it to the debit it paid"},
	{Name: LateDebit, Description: "a completed call's debit is written once more 300 ms after the answer (a billing retry in the background): the wallet pays twice, after the checks made right after the answer"},
	{Name: RemovedToolRuns, Description: "a removed tool still runs a call that has no stored outcome (a new key, or the retry of a refunded attempt) through its stored route, debited outside any reservation, instead of unknown_tool"},
	{Name: ForeignContent, Description: "every 7th call of a wallet, from its 14th on, that runs is dispatched and charged rightly but answered with the content of the wallet's previous completed call under its own receipt: one operation's result served for another"},
	{Name: KeyScopeBilling, Description: "the debit of a keyed call goes to the wallet that first used its client key on the tool: a caller of another wallet reusing the key gets its own operation, billed to the first tenant"},
	{Name: ParseError500, Layer: "wire", Description: "malformed JSON is answered with the parse_error refusal but HTTP 500, which the requirement rules out: a client or proxy reads a 500 as the gateway failing, not the request"},
	{Name: KeyReuseReplays, Description: "a reused client key with other arguments is answered with the first arguments' stored result instead of idempotency_key_reused: one operation's result served for another"},
	{Name: RoundsCharged, Description: "each round of a multi-round (2026-07-28 input-required) call is charged: a round that ends asking the client for input keeps its charge, so the call costs its price once per round"},
	{Name: RoundsReplayReruns, Description: "a later round of a multi-round call (one carrying inputResponses) is taken for new work and run under a record of its own: a retry of the finished round dispatches and charges again instead of replaying"},
	{Name: RoundsStoreQuestion, Description: "the finished round of a multi-round call is answered with its result, but the outcome stored is the earlier round's input-required result: a retry replays the question, not the result it paid for"},
	{Name: CapabilityRefusalKept, Description: "an upstream's -32021 refusal (a client capability the caller did not declare) is relayed but its debit is kept: the caller pays for a call that never ran"},
	{Name: CapabilityRefundTwice, Description: "an upstream's -32021 refusal is refunded twice over (a refund of twice the debit): the caller is credited the price for a call that never ran"},
	{Name: ReplayDropsStructured, Description: "a replay serves the stored result without its structuredContent: the retry gets less than the call it paid for"},
	{Name: ReplayResultTypeMissing, Layer: "wire", Description: "a replay on 2026-07-28 is written as the outcome was stored, without the resultType that revision's schema requires (first calls carry it): a stock 2026-07-28 client rejects the answer to its retry"},
	{Name: SessionContentDropped, Layer: "wire", Description: "on 2025-11-25 a tools/call result that has structuredContent is written without its content list, as if the structured form were enough: that version's CallToolResult requires content, so a stock 2025-11-25 client rejects the answer"},
	{Name: RoundsToLegacyClient, Layer: "wire", Description: "every caller is taken for a 2026-07-28 one that answers input requests in a next round: a 2025-11-25 client that declared neither sampling nor elicitation is handed an upstream's input-required result, which its protocol does not have, as an empty success of a tool that never ran"},
	{Name: RefusalsRetryable, Layer: "wire", Description: "every refusal the wire writes is marked data.retryable true, the final ones too (idempotency_key_required, insufficient_funds, unknown_tool...): a client that trusts the flag sends the same refused call again, forever"},
	{Name: RoundsFingerprinted, Description: "a later round's inputResponses and requestState are part of the call's fingerprint: the first round sent again after the call finished is refused idempotency_key_reused instead of replaying the final result"},
	{Name: PrincipalUnboundStateless, Description: "on the stateless 2026-07-28 wire only, the derived key leaves out the verified principal and a replay does not compare it (the session wire binds it): another principal on the same API key gets the first one's result"},
	{Name: PrincipalFailOpenStateless, Layer: "wire", Description: "on the stateless 2026-07-28 wire only, a principal token that fails verification (signed by an untrusted key, say) is dropped and the call runs under the API key alone, where the session wire refuses it principal_invalid: a forged principal's call is dispatched and charged"},
	{Name: KeyedTakeoverUnfenced, Description: "a keyed holder that stalled before its charge charges and dispatches when it resumes, though a retry took its stale reservation over and ran it: the charge is not conditional on still owning the reservation (no fence on the keyed path)"},
	{Name: KeyedRecordsPerProcess, Description: "a client key's record is kept per gateway process (an in-memory idempotency cache, not the store): a retry or twin that reaches another process of the same gateway is a new operation, dispatched and charged again"},
	{Name: FinishedKeyExpires, Description: "a finished operation is kept 1 s of real time: a retry with the same key and arguments after that is taken for new work, dispatched and charged again under a new receipt"},
	{Name: KeyCaseFolded, Description: "client keys are compared case-insensitively (lower-cased before lookup): a key and the same key in capitals, two keys to the client, name one operation, so the second is refused idempotency_key_reused or handed the first one's result"},
	{Name: KeyTruncated, Description: "client keys are cut to their first 32 characters (a fixed-width key column): two long keys that share a prefix name one operation, so the second is refused idempotency_key_reused or handed the first one's result"},
	{Name: FingerprintShallow, Description: "the argument fingerprint covers the top-level members only, nested objects and arrays as their kind: the same key with arguments that differ one object deeper replays the first arguments' result instead of idempotency_key_reused"},
	{Name: FingerprintRawBytes, Description: "the argument fingerprint is taken over the bytes as sent, not the canonical JSON: a retry that writes the same arguments with their members in another order is refused idempotency_key_reused (keyed) or run and charged again (unkeyed)"},
	{Name: UpstreamErrorCharged, Description: "an upstream that refuses a call with a JSON-RPC error (nothing ran) is answered dispatch_failed, but the debit is kept: the caller pays for a call that never ran, and again when its retry runs it"},
	{Name: ToolErrorNotStored, Description: "only successful results are kept as an operation's outcome: a tool's isError result is answered and refunded but not stored, so a retry runs the tool again (the tool ran: its effect happens twice)"},
	{Name: FundsBoundary, Description: "a wallet pays for a call only while it holds more than the price (balance > price, not >=): a wallet holding exactly the price is refused insufficient_funds"},
	{Name: LargeArgsUnbound, Description: "calls whose canonical arguments exceed 2 KiB leave the verified principal out of their derived key and replay check (a size-capped identity column): another principal with the same large arguments gets the first one's result"},
	{Name: LargeArgsUnstored, Description: "an outcome whose call's canonical arguments exceed 8 KiB is answered but not stored (the outcome table caps its row): the record ends refunded, so a retry runs the tool again"},
	{Name: FundsUnlocked, Description: "the balance is checked when a call arrives and the debit written later, after the reservation, without checking it again (check, then act): calls racing for a wallet's last credits all pass the check, each is charged and dispatched, and the wallet is overdrawn"},
	{Name: PermitRefundKept, Description: "a refund gives the wallet its credits back but not the permit its budget: a call refused dispatch_failed under a one-call explicit permit cannot be retried (permit_exhausted), though nothing ran"},
	{Name: ClaimLapses, Description: "an operation's in-flight claim lapses after 1 s of real time, charged or not, while its dispatch may still be running: a duplicate after that dispatches and is charged again"},
	{Name: WindowWholeSeconds, Description: "the previous-bucket join compares a slot's age in whole Unix seconds (both times truncated): an unkeyed retry less than a second before the window ends, of a call made at a fractional second, counts as a full window old and dispatches and charges again"},
	{Name: FingerprintSortedLists, Description: "arrays in the arguments are taken for sets, sorted before the fingerprint and the derived key are taken: the same key with a list in another order replays the first arguments' result instead of idempotency_key_reused, and an unkeyed call with a list reordered is answered with the other operation's result instead of running"},
	{Name: TakeoverTrustsRead, Description: "a retry that read a stale reservation as uncharged takes it over on that read: its write checks only that the old owner still owns it, so a holder that charged (or even finished) in between is replaced, and the operation is dispatched and debited twice"},
	{Name: SettleOverwritten, Description: "a holder that stalled after its charge and wakes after an operator settled its uncertain operation dispatches without re-reading its record, and stores its own outcome over the settlement: the tool runs for an operation settled refunded (the refund stands, the result is served free) or settled completed (retries then replay the holder's result, not the settled one)"},
	{Name: SettleRefundUnwritten, Description: "settling an uncertain operation refunded ends its record failed_refunded but writes no refund entry: the debit stays kept, and the retry that runs it afresh is charged again"},
	{Name: ToolEntriesUnversioned, Description: "a gateway process keeps each tool entry it read and uses it for every later request, whatever changed the registry since (a cache with no invalidation): a tool re-priced, removed or put back through any process's control API is still served as first read, so calls are charged the old price and a removed tool goes on running"},
	{Name: PermitUnscoped, Description: "an explicit permit is looked up by its id alone, not checked against the caller's wallet, API key and the tool called: any caller that learns a permit id spends its budget, on any tool, though the permit was granted to one API key for one tool"},
	{Name: PrincipalPerSession, Layer: "wire", Description: "a 2025-11-25 session verifies its principal token once (a signature check costs a key-set round trip, and a session is taken for one client): later requests on the session run as that first principal whatever token they carry, so a front end multiplexing its users over one session hands one user's stored result to another"},
	{Name: RefundAtCurrentPrice, Description: "a refund gives back the tool's price as the registry holds it when the refund is written, not what the call was debited: a call charged, then held while its tool is re-priced, and refused dispatch_failed is refunded the new price, so the wallet gains (or loses) the difference for a call that never ran"},
	{Name: CancelReachesUpstream, Description: "a client's cancellation (notifications/cancelled, or a closed response stream) is passed on to the upstream call, as a forwarding server may do with a request: the tool already had the call, the gateway's dispatch is cut short, and what the gateway made of that (an isError result, \"outcome unknown\") is stored, charged and replayed as the operation's outcome; the retry is never given the tool's own result, which it paid for"},
	{Name: UncertainRefunded, Description: "a charged operation answered outcome_unknown has its debit refunded at once (the client was told the outcome is unknown, so its money is given back), though it stays uncertain and its data.receipt still names that debit: a holder that wakes and finishes serves its result free, an operator who settles it completed keeps no charge for it, and a ledger read between the answer and a settlement already shows a refund the contract leaves to the operator (a settlement refunded gives back only what is still kept, so no second refund shows)"},
	{Name: UncertainInProgress, Description: "a charged operation whose owner has written nothing for the stale-lock threshold (killed between its charge and storing its outcome) is answered idempotency_in_progress, retryable, for ever instead of outcome_unknown: a client retries it endlessly, and nothing tells it (or an operator) that the operation needs settling"},
	{Name: UncertainEarly, Description: "a charged operation still in progress is answered outcome_unknown at once, not only once its owner has written nothing for the stale-lock threshold: a retry after a dropped connection, or a twin of a call still running, is told the outcome is lost and to call an operator, though the owner is about to store it"},
	{Name: ReplayRevalidates, Description: "stale-while-revalidate: a replay serves the stored result at once, then sends the operation to the upstream again in the background 300 ms later (its answer discarded, no ledger entry): the tool runs twice, after the checks made right after the answer"},
	{Name: ReplayUnmarkedUndelivered, Description: "a replay is marked (replayed: true) only once the gateway saw the stored result delivered: an outcome whose response was dropped or failed after the tool ran is served to the retry as a first answer (replayed: false), under its original receipt, so the client cannot tell the tool ran once, before its retry"},
	{Name: PurgeInsideWindow, Description: "the retention purge takes half the retention for its horizon (a cache tier's TTL for the store's): a finished record is deleted while the contract still keeps it, so a keyed retry inside the retention is taken for new work, dispatched and charged again under a new receipt"},
	{Name: StaleReservationKept, Description: "stale keyed reservations are reclaimed only by the process that made them (leases kept in process memory): one whose process was killed before its charge is never taken over, and past the stale-lock threshold a retry through another process is still answered idempotency_in_progress, retryable, for ever, though nothing was charged or run; the client never gets its operation run"},
	{Name: PurgeUncertain, Description: "the purge of a key read past its retention ignores the record's state: a charged operation still in progress (its owner stalled or killed between its charge and storing its outcome) whose record was last written a retention ago is deleted like a finished one, so a keyed retry is taken for new work, dispatched and charged again, where it must be answered outcome_unknown"},
}

// Set is the switches a gateway runs with.
type Set map[string]bool

// Parse checks names against All.
func Parse(names []string) (Set, error) {
	s := Set{}
	for _, n := range names {
		if Lookup(n) == nil {
			return nil, fmt.Errorf("unknown bug switch %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		s[n] = true
	}
	return s, nil
}

// On reports whether a switch is on. A nil set has every switch off.
func (s Set) On(name string) bool { return s[name] }

// List returns the switches that are on, sorted.
func (s Set) List() []string {
	out := []string{}
	for n, on := range s {
		if on {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Lookup finds a switch by name.
func Lookup(name string) *Bug {
	for i := range All {
		if All[i].Name == name {
			return &All[i]
		}
	}
	return nil
}

// Names lists every switch name in order.
func Names() []string {
	out := make([]string, len(All))
	for i, b := range All {
		out[i] = b.Name
	}
	return out
}
