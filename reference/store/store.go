// Package store defines what the reference gateway needs from its database.
//
// Every method is one atomic step of the gateway's rules: an implementation
// must make each call all-or-nothing and must never consult the database's own
// clock (callers pass every time value in, so a moved gateway clock and both
// stores agree). Times are stored as Unix nanoseconds.
//
// Two implementations live beside this file (sqlite/, postgres/), the SQL
// they share written once in sqlstore/; the contract suite in storetest/ runs
// against both.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
)

// The range of times a store keeps: both hold a time as Unix nanoseconds in
// an int64, which ends in September 1677 and April 2262. A time outside it
// would be stored wrapped (a permit expiring in 2300 read back as expired in
// 1715), so callers refuse it before it gets here.
var (
	MinTime = time.Unix(0, math.MinInt64).UTC()
	MaxTime = time.Unix(0, math.MaxInt64).UTC()
)

// TimeInRange reports whether t can be stored and read back as it is.
func TimeInRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// MaxPrice is the highest price a tool may have: 2^53-1, the largest integer
// a JSON number read as an IEEE 754 double (JavaScript's only number) holds
// exactly, so every client reads a receipt's "charged" as it was written.
const MaxPrice = 1<<53 - 1

// CheckPrice refuses a price below 0 or above MaxPrice.
func CheckPrice(price int64) error {
	if price < 0 || price > MaxPrice {
		return fmt.Errorf("price %d: must be 0 to %d (2^53-1, so that JavaScript clients read the charge exactly)", price, int64(MaxPrice))
	}
	return nil
}

// NewRowID is a fresh id for a row indexed by it (a wallet, a permit, a
// ledger entry, a dispatch), after prefix: a time-ordered UUID (version 7),
// so that each insert lands at the right edge of the id's index, on the page
// the previous one changed, instead of dirtying a page at random (a page more
// in every commit's WAL, and in PostgreSQL a full page image after each
// checkpoint).
func NewRowID(prefix string) string { return prefix + uuid.Must(uuid.NewV7()).String() }

// Sentinel errors. Implementations wrap them with context; callers use errors.Is.
var (
	ErrNotFound          = errors.New("not found")
	ErrExists            = errors.New("already exists")
	ErrLockHeld          = errors.New("lock held by another owner")
	ErrFenceLost         = errors.New("fence lost: lock taken over")
	ErrNotOwner          = errors.New("record not owned by caller or not in progress")
	ErrInsufficientFunds = errors.New("insufficient funds")
	ErrPermitExhausted   = errors.New("permit budget exhausted")
	ErrPermitExpired     = errors.New("permit expired")
	// ErrNotUncertain: a settlement found the record no longer (or not
	// yet) uncertain: finished, not charged, owned by another attempt, or
	// written since the staleness bound.
	ErrNotUncertain = errors.New("record is not an uncertain operation")
	// ErrBusy is a lock timeout (SQLite SQLITE_BUSY/SQLITE_LOCKED, PostgreSQL
	// 55P03 lock_not_available or 40001 serialization_failure, 40P01 deadlock),
	// detected by driver error code, never by message text. The gateway turns
	// it into the retryable idempotency_in_progress answer.
	ErrBusy = errors.New("store busy: lock timeout")
)

// Wallet holds a credit balance.
type Wallet struct {
	ID        string
	Balance   int64
	CreatedAt time.Time
}

// APIKey is bound to one wallet. Only a hash of the secret is stored.
type APIKey struct {
	ID         string
	WalletID   string
	SecretHash []byte // sha256 of the secret part; compared in constant time by the caller
	CreatedAt  time.Time
	// Revoked keys authenticate nothing. The row stays, so the id is never
	// taken again by another wallet or secret.
	Revoked bool
	// ToolsVersion is the tool registry's version (see VersionedTool) in
	// the same read as the key: a tool entry read at this version is what
	// the registry held when the key was read.
	ToolsVersion int64
}

// Principal is an enterprise identity named by a verified token.
type Principal struct {
	ID       string
	Provider string
	Issuer   string
	Subject  string
	Tools    []string // tools this principal is entitled to; empty means all
	Revoked  bool
}

// Trust is an identity provider the gateway accepts principal tokens from.
type Trust struct {
	Provider string
	Issuer   string
	JWKSURL  string
	Audience string
}

// Tool is an entry of the registry.
type Tool struct {
	Name         string
	Description  string
	Price        int64
	ReadOnly     bool
	Approval     bool
	UpstreamURL  string // empty for local tools
	UpstreamTool string // tool name on the upstream server
	// Overrides is what the operator set in place of the upstream's own
	// tools/list entry: a JSON object with any of title, inputSchema,
	// outputSchema and annotations (MCP's names); nil when none.
	Overrides json.RawMessage
	Removed   bool
}

// Server is an upstream MCP server registered whole: its tools are
// registered as Tools named Prefix + their upstream name and priced by the
// rule (Prices by upstream name, else Price); its prompts, resources and
// completion are relayed.
type Server struct {
	Name     string
	URL      string
	Prefix   string
	Price    int64
	Prices   map[string]int64 // nil: none
	ReadOnly []string         // upstream names metered as read-only; nil: none
}

// Record states.
const (
	StateInProgress     = "in_progress"
	StateCompleted      = "completed"
	StateFailedRefunded = "failed_refunded"
)

// Record kinds.
const (
	KindClient  = "client"  // explicit client Idempotency-Key
	KindDerived = "derived" // mcp-retry- key of an unkeyed mutating call
	KindPermit  = "permit"  // unkeyed call under an explicit permit
)

// Record is one idempotency record: the reservation, then the stored outcome.
type Record struct {
	Key         string // unique: sha256 over scope and key; primary key
	Kind        string
	ClientKey   string // the key as the client sent it, or the mcp-retry- key
	WalletID    string
	APIKeyID    string
	Principal   string // "provider|issuer|subject", or "" without a principal token
	Tool        string
	Fingerprint string // sha256 hex of canonical JSON of the arguments
	Identity    string // derived only: lock identity (without bucket and attempt)
	Bucket      int64  // derived only
	Attempt     int    // derived only: grows after a refunded pre-dispatch failure
	State       string
	Owner       string // record id of the attempt that owns it (uuid)
	PermitID    string
	Receipt     string
	Result      json.RawMessage // the whole stored CallToolResult
	Charged     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Permit authorises spending on one tool for one wallet and key.
type Permit struct {
	ID        string
	WalletID  string
	APIKeyID  string
	Tool      string
	Budget    int64
	Spent     int64
	ExpiresAt time.Time
	Auto      bool
	RecordKey string // auto permits: the record they were minted under
	CreatedAt time.Time
}

// Lock is the per-identity lock row that serialises slot choice and mint of
// unkeyed calls across processes.
type Lock struct {
	Identity   string
	Owner      string // record id of the holder
	Fence      int64  // grows by one on every takeover
	AcquiredAt time.Time
}

// Fence names the lock a fenced write is conditional on.
type Fence struct {
	Identity string
	Owner    string
	Fence    int64
}

// Ledger entry kinds.
const (
	EntryCredit = "credit" // top-up by a fixture
	EntryDebit  = "debit"
	EntryRefund = "refund"
	// EntryFee is written only by the refusal-fee bug switch: a charge that
	// is neither a debit for a dispatch nor a refund.
	EntryFee = "fee"
)

// LedgerEntry is one movement of a wallet's balance. Amount is always positive;
// Kind gives the sign.
type LedgerEntry struct {
	ID        string
	WalletID  string
	Kind      string
	Amount    int64
	RecordKey string
	Receipt   string
	Tool      string
	At        time.Time
}

// Dispatch is one call actually sent to a tool, written by the gateway.
type Dispatch struct {
	ID          string
	Tool        string
	RecordKey   string
	Fingerprint string
	WalletID    string
	At          time.Time
}

// ReserveRequest reserves an idempotency key before anything is dispatched.
type ReserveRequest struct {
	Record Record
	// Permit, when set, is inserted in the same transaction (the auto-permit mint).
	Permit *Permit
	// Fence, when set, makes the reservation conditional on the caller still
	// owning that lock: a conditional write on the lock row (owner and fence
	// match) in the same transaction as the insert. Lost: ErrFenceLost, nothing written.
	Fence *Fence
	// Release, with Fence, deletes the lock row in the same transaction when
	// the reservation is created: the release that follows a reservation
	// made under the lock, without a commit of its own. A reservation that
	// creates nothing (an existing record, a lost fence, an error) leaves
	// the lock row as it was.
	Release bool
	// ReplaceRefunded lets the reservation take over an existing record whose
	// state is failed_refunded (the retry of a refunded pre-dispatch failure).
	ReplaceRefunded bool
	// ReplaceStale lets the reservation take over a reservation that was
	// abandoned before its claim for dispatch (see Stale).
	ReplaceStale *Stale
	// AfterClaim, when set, runs inside the transaction after the fence claim
	// and before the insert; the gateway's claim.held pause point hangs here.
	AfterClaim func(ctx context.Context) error
	// Charge, when set, charges the reservation it creates in the same
	// transaction, as Charge would right after it: the claim for dispatch,
	// the permit's spend and the debit. A first call that dispatches at once
	// then commits twice in all (this, and Finish), not three times. The
	// charge's RecordKey, Owner and PermitID are the Record's (ChargeRequest.For);
	// an empty Entry.WalletID is the Record's wallet. The created record
	// comes back charged, updated at Charge.Now. A refused charge
	// (ErrInsufficientFunds, ErrPermitExhausted, ErrPermitExpired, a permit
	// or wallet ErrNotFound) fails the whole reservation: no record, no
	// permit, nothing replaced. A key that has a record it does not replace
	// is charged nothing: (existing, false, nil), as without Charge.
	Charge *ChargeRequest
}

// SlotRequest reserves an unkeyed call's slot in one write transaction
// (Store.ReserveSlot): the identity's lock taken, its slots read, the slot
// chosen, the reservation made with its permit and charge, and the lock
// row gone again by the commit. It is AcquireLock, RecordsByIdentity and a
// Reserve fenced on that lock with Release, without the commits between
// them: nothing can run while the lock is held, so nothing needs to see it.
type SlotRequest struct {
	Identity string
	// Owner holds the lock for the transaction's length: the new record's
	// owner.
	Owner string
	// Now and StaleAfter judge a lock row another call holds as AcquireLock
	// does: a live one is ErrLockHeld, nothing written; a stale one is taken
	// over, so its holder's fenced claim fails with ErrFenceLost.
	Now        time.Time
	StaleAfter time.Duration
	// Since selects the slots as RecordsByIdentity's since does.
	Since time.Time
	// Choose is the slot choice, given the slots read under the lock: the
	// record to join, or nil and the reservation to make (Fence, Release,
	// AfterClaim and ReplaceStale unset: the lock is the store's). It runs
	// inside the write transaction, perhaps on another goroutine, so it only
	// computes: no I/O, no waiting. It may run more than once (a store may
	// try the write in two forms); its last answer is the one written.
	Choose func(slots []Record) (join *Record, reserve ReserveRequest)
}

// Stale names a reservation presumed abandoned: in progress, never charged,
// owned by Owner and last written at or before Before. Charged means claimed
// for dispatch (every dispatch is preceded by a charge, of 0 for a free
// tool), so such a record's tool never ran and nothing was debited: taking it
// over cannot dispatch twice. Its old owner's later charge, finish or abandon
// fails with ErrNotOwner.
type Stale struct {
	Owner  string
	Before time.Time
	// OwnerOnly drops every condition but the owner, as a takeover that
	// trusts its earlier read of the record would (an update "where owner
	// is still the one I read"): a holder that charged, or even finished,
	// since is replaced. Only the takeover-trusts-read bug switch sets it.
	OwnerOnly bool
}

// Replaces reports whether the reservation r may take over existing, a
// record already under its key.
func (r ReserveRequest) Replaces(existing Record) bool {
	switch {
	case r.ReplaceRefunded && existing.State == StateFailedRefunded:
		return true
	case r.ReplaceStale != nil:
		st := r.ReplaceStale
		if st.OwnerOnly {
			return existing.Owner == st.Owner
		}
		return existing.State == StateInProgress && !existing.Charged &&
			existing.Owner == st.Owner && !existing.UpdatedAt.After(st.Before)
	}
	return false
}

// ChargeRequest debits a wallet for a reserved record and claims it for
// dispatch, before dispatch. An Entry.Amount of 0 (a free tool) only claims
// it: no ledger entry, no permit or balance check.
type ChargeRequest struct {
	Entry     LedgerEntry // Kind must be debit
	RecordKey string
	Owner     string // conditional: record owned by Owner, in progress, not yet charged
	PermitID  string // the permit is spent by Entry.Amount in the same transaction
	Now       time.Time
}

// For is c as the charge of the reservation rec: its record, owner and
// permit, and the entry's defaults (record key, the record's wallet, Now).
func (c ChargeRequest) For(rec Record) ChargeRequest {
	c.RecordKey, c.Owner, c.PermitID = rec.Key, rec.Owner, rec.PermitID
	if c.Entry.WalletID == "" {
		c.Entry.WalletID = rec.WalletID
	}
	c.Entry = c.Debit()
	return c
}

// Debit is the entry a charge writes, with its defaults filled in: the
// record's key, and Now as its time.
func (c ChargeRequest) Debit() LedgerEntry {
	e := c.Entry
	if e.RecordKey == "" {
		e.RecordKey = c.RecordKey
	}
	if e.At.IsZero() {
		e.At = c.Now
	}
	return e
}

// Charged is rec as a reservation carrying c creates it: claimed for
// dispatch, written at c.Now.
func (c ChargeRequest) Charged(rec Record) Record {
	rec.Charged = true
	if !c.Now.IsZero() {
		rec.UpdatedAt = c.Now
	}
	return rec
}

// Outcome finishes a record. Conditional on owner and state in_progress.
type Outcome struct {
	State   string // completed or failed_refunded
	Receipt string
	Result  json.RawMessage
	// Refund, with State failed_refunded on a charged record, is written in the
	// same transaction: the balance and the permit are given back.
	Refund *LedgerEntry
	// RefundKeepsPermitSpend leaves the permit's spend as it was when the
	// refund is written: only the permit-refund-kept bug switch sets it.
	RefundKeepsPermitSpend bool
	// Overwrite writes the outcome whatever the record's state (its owner
	// still required): only the settle-overwritten bug switch sets it.
	Overwrite bool
	// Dispatch, with State completed, is the dispatch log row of the call
	// that produced Result, written in the same transaction: one commit
	// fewer on every first call, and the log never says a stored outcome's
	// tool did not run.
	Dispatch *Dispatch
	Now      time.Time
}

// Check refuses an outcome no store may write: a state other than the two
// final ones, a refund that does not end the record refunded, or a dispatch
// row that does not come with a completed outcome.
func (o Outcome) Check() error {
	switch {
	case o.State != StateCompleted && o.State != StateFailedRefunded:
		return fmt.Errorf("invalid state %q", o.State)
	case o.Refund != nil && o.State != StateFailedRefunded:
		return fmt.Errorf("refund with state %q", o.State)
	case o.Dispatch != nil && o.State != StateCompleted:
		return fmt.Errorf("dispatch with state %q", o.State)
	}
	return nil
}

// Settlement is an operator's decision on an uncertain operation: a record
// in progress, charged, whose owner has written nothing since StaleBefore.
// The store re-checks all of that in the transaction that writes Outcome (a
// completed result, or failed_refunded with its refund), so an owner that
// was only stalled and finished meanwhile wins, and the settlement is
// refused with ErrNotUncertain.
type Settlement struct {
	Owner       string    // the attempt the operator saw own the record
	StaleBefore time.Time // the record's UpdatedAt must be at or before this
	Outcome     Outcome   // no Dispatch row: nobody saw the tool run
}

// Check refuses a settlement no store may write.
func (s Settlement) Check() error {
	if s.Outcome.Dispatch != nil {
		return errors.New("settlement with a dispatch row")
	}
	return s.Outcome.Check()
}

// DispatchFilter selects dispatch log rows; zero fields match all.
type DispatchFilter struct {
	Tool     string
	WalletID string
}

// Store is the reference gateway's database.
type Store interface {
	// Migrate applies the embedded migrations; safe to call on every start
	// and from several processes at once.
	Migrate(ctx context.Context) error
	Close() error

	CreateWallet(ctx context.Context, w Wallet) error
	Wallet(ctx context.Context, id string) (Wallet, error)
	// Credit adds to a balance and writes a credit entry.
	Credit(ctx context.Context, e LedgerEntry) error
	Ledger(ctx context.Context, walletID string) ([]LedgerEntry, error)

	CreateAPIKey(ctx context.Context, k APIKey) error
	APIKey(ctx context.Context, id string) (APIKey, error)
	// RevokeAPIKey marks a key revoked (again: no change); ErrNotFound if
	// there is no such key.
	RevokeAPIKey(ctx context.Context, id string) error

	PutPrincipal(ctx context.Context, p Principal) error
	Principal(ctx context.Context, provider, issuer, subject string) (Principal, error)
	PrincipalByID(ctx context.Context, id string) (Principal, error)
	RevokePrincipal(ctx context.Context, id string) error

	PutTrust(ctx context.Context, t Trust) error
	Trusts(ctx context.Context) ([]Trust, error)

	// PutTool inserts or replaces a tool (and un-removes it).
	PutTool(ctx context.Context, t Tool) error
	// Tool returns a tool, removed ones included (Removed set).
	Tool(ctx context.Context, name string) (Tool, error)
	// VersionedTool is Tool with the tool registry's version in the same
	// read. Every PutTool and RemoveTool raises the version in its own
	// commit, so an entry read at version v is the tool for as long as the
	// registry's version is v, in every process.
	VersionedTool(ctx context.Context, name string) (Tool, int64, error)
	Tools(ctx context.Context) ([]Tool, error) // not removed
	RemoveTool(ctx context.Context, name string) error

	// PutServer inserts or replaces a server.
	PutServer(ctx context.Context, s Server) error
	Servers(ctx context.Context) ([]Server, error) // by name
	// RemoveServer deletes a server (not its tools); ErrNotFound if none.
	RemoveServer(ctx context.Context, name string) error

	CreatePermit(ctx context.Context, p Permit) error
	Permit(ctx context.Context, id string) (Permit, error)

	// AcquireLock inserts the lock row for identity (fence 1), or takes it over
	// when its AcquiredAt is at or before now-staleAfter (fence+1, conditional
	// on the fence read), else ErrLockHeld.
	AcquireLock(ctx context.Context, identity, owner string, now time.Time, staleAfter time.Duration) (Lock, error)
	LockOf(ctx context.Context, identity string) (Lock, error)
	// Locks lists the lock rows whose identity starts with prefix (the gateway
	// builds identities as "<wallet id>|<tool>|<hash>", so the control API can
	// list one wallet's locks for one tool). Ordered by identity.
	Locks(ctx context.Context, prefix string) ([]Lock, error)
	// ReleaseLock deletes the lock row only while owner still holds it;
	// false when another owner holds it now (nothing deleted).
	ReleaseLock(ctx context.Context, identity, owner string) (bool, error)

	Record(ctx context.Context, key string) (Record, error)
	// RecordsByIdentity lists the derived records of identity created at or
	// after since, and every one still in progress whatever its age, ordered
	// by CreatedAt, then Attempt. Selected by time, not by bucket: a bucket
	// number means nothing under another window, and the window may have
	// changed since a record was cut (settings, or another process).
	RecordsByIdentity(ctx context.Context, identity string, since time.Time) ([]Record, error)
	// Reserve inserts the record if no record has its key and returns
	// (rec, true); if one exists it returns (existing, false) and writes nothing
	// (unless ReplaceRefunded applies). With Charge it also charges the
	// record it creates, all or nothing (ReserveRequest.Charge).
	Reserve(ctx context.Context, r ReserveRequest) (Record, bool, error)
	// ReserveSlot takes the identity's lock, chooses and reserves a slot in
	// one write (SlotRequest). It returns the joined record (false), the
	// created one (true), or the record a chosen key already has (false); a
	// refused charge fails it as it fails Reserve. A reservation that
	// creates nothing writes nothing, unless it took over a stale lock: that
	// lock row is deleted all the same, so its holder stays fenced out.
	ReserveSlot(ctx context.Context, r SlotRequest) (Record, bool, error)
	// Charge debits the wallet and spends the permit, conditional on the record.
	// ErrInsufficientFunds, ErrPermitExhausted, ErrPermitExpired, ErrNotOwner.
	Charge(ctx context.Context, c ChargeRequest) error
	Finish(ctx context.Context, key, owner string, o Outcome) error
	// Abandon deletes an in-progress, uncharged record owned by owner (a call
	// refused after reservation, e.g. insufficient funds), so a retry can run.
	Abandon(ctx context.Context, key, owner string) error
	// UncertainRecords lists the records in progress and charged whose
	// UpdatedAt is at or before staleBefore: operations whose owner is
	// presumed gone after its charge, ordered by UpdatedAt, then Key.
	UncertainRecords(ctx context.Context, staleBefore time.Time) ([]Record, error)
	// PurgeRecords deletes at most limit finished records (completed or
	// failed_refunded) last written at or before before, oldest first, with
	// their auto permits, and says how many it deleted. A record in
	// progress (running, or charged and uncertain) is never purged,
	// whatever its age: its key must go on naming the operation that may
	// have run.
	PurgeRecords(ctx context.Context, before time.Time, limit int) (int, error)
	// PurgeRecord deletes key's record as PurgeRecords would: only when it
	// is finished and last written at or before before; false when it
	// deleted nothing.
	PurgeRecord(ctx context.Context, key string, before time.Time) (bool, error)
	// Settle writes an operator's settlement of an uncertain record
	// (Settlement), with its refund if any; ErrNotFound without the record,
	// ErrNotUncertain when it is not uncertain as the settlement says.
	Settle(ctx context.Context, key string, s Settlement) error
	// Resume writes now as the UpdatedAt of key's record while owner still
	// holds it in progress, ErrNotOwner otherwise (an operator settled it
	// meanwhile): a stalled owner's fence before its dispatch. A settlement
	// needs the record unwritten since its StaleBefore, so one that comes
	// after this write is refused ErrNotUncertain, and a settlement and a
	// resumed owner never both act on the operation.
	Resume(ctx context.Context, key, owner string, now time.Time) error

	// AddNote and CountNotes back the local partner.notes.* tools.
	AddNote(ctx context.Context, walletID, text string, at time.Time) (int64, error)
	CountNotes(ctx context.Context, walletID string) (int64, error)

	LogDispatch(ctx context.Context, d Dispatch) error
	Dispatches(ctx context.Context, f DispatchFilter) ([]Dispatch, error)
}

// The interfaces below are writes without the conditions the Store's own
// writes exist to keep. No correct call path uses them, and a Store need not
// have them: the gateway asserts one only when a bug switch that writes
// through it is on.

// DebitAppender writes a ledger entry that takes e.Amount off its wallet
// (a debit, or a fee) with no condition: not the record's owner, more than
// the balance.
type DebitAppender interface {
	AppendDebit(ctx context.Context, e LedgerEntry) error
}

// RefundAppender writes a refund entry that gives e.Amount back to its
// wallet with no condition: not the record's state, not whether its debit
// was refunded already.
type RefundAppender interface {
	AppendRefund(ctx context.Context, e LedgerEntry) error
}

// AnyLockReleaser deletes identity's lock row whoever holds it; no row is no
// error.
type AnyLockReleaser interface {
	ReleaseLockAny(ctx context.Context, identity string) error
}

// AnyRecordPurger deletes key's record last written at or before before
// whatever its state, in progress too; false when it deleted nothing.
type AnyRecordPurger interface {
	PurgeRecordAny(ctx context.Context, key string, before time.Time) (bool, error)
}

// EncodeServerRule is how both stores keep a Server's prices and read-only
// names: JSON text, "" when there are none.
func EncodeServerRule(s Server) (prices, readOnly string, err error) {
	if len(s.Prices) > 0 {
		b, err := json.Marshal(s.Prices)
		if err != nil {
			return "", "", fmt.Errorf("server prices: %w", err)
		}
		prices = string(b)
	}
	if len(s.ReadOnly) > 0 {
		b, err := json.Marshal(s.ReadOnly)
		if err != nil {
			return "", "", fmt.Errorf("server read_only: %w", err)
		}
		readOnly = string(b)
	}
	return prices, readOnly, nil
}

// DecodeServerRule reads back what EncodeServerRule wrote.
func DecodeServerRule(s *Server, prices, readOnly string) error {
	if prices != "" {
		if err := json.Unmarshal([]byte(prices), &s.Prices); err != nil {
			return fmt.Errorf("server %s prices: %w", s.Name, err)
		}
	}
	if readOnly != "" {
		if err := json.Unmarshal([]byte(readOnly), &s.ReadOnly); err != nil {
			return fmt.Errorf("server %s read_only: %w", s.Name, err)
		}
	}
	return nil
}
