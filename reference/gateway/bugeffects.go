package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/store"
)

// The bug switches of this file only add an effect to a call the gateway
// otherwise answers rightly: a fee for a refusal, a debit written again
// later, another call's content under this call's receipt. Each is a
// decorator of the store or the Dispatcher that New puts around them when
// its switch is on, so the call path reads the same with the switch as
// without it.

// withEffectBugs wraps g's store and Dispatcher in the decorators of the
// effect-only switches that are on.
func (g *Gateway) withEffectBugs() error {
	needDebits := func(name string) (store.DebitAppender, error) {
		a, ok := g.given.(store.DebitAppender)
		if !ok {
			return nil, fmt.Errorf("gateway: bug switch %s needs the store to be a store.DebitAppender", name)
		}
		return a, nil
	}
	if g.bugs.On(bugs.KeyScopeBilling) {
		g.store = &keyScopeBilling{Store: g.store, payerOf: map[string]string{}}
	}
	if g.bugs.On(bugs.RefusalFee) { // outside key-scope-billing: the fee is the reservation's wallet's
		debits, err := needDebits(bugs.RefusalFee)
		if err != nil {
			return err
		}
		g.store = refusalFee{Store: g.store, g: g, debits: debits}
	}
	if g.bugs.On(bugs.LateDebit) {
		debits, err := needDebits(bugs.LateDebit)
		if err != nil {
			return err
		}
		l := &lateDebit{g: g, debits: debits}
		g.store = lateDebitStore{Store: g.store, l: l}
		g.disp = notingDispatcher{Dispatcher: g.disp, notes: &l.ran, when: func(err error) bool { return err == nil }}
	}
	if kept, twice := g.bugs.On(bugs.CapabilityRefusalKept), g.bugs.On(bugs.CapabilityRefundTwice); kept || twice {
		r := &capabilityRefund{twice: !kept}
		g.store = capabilityRefundStore{Store: g.store, r: r}
		g.disp = notingDispatcher{Dispatcher: g.disp, notes: &r.refused, when: capabilityRefusal}
	}
	if g.bugs.On(bugs.ForeignContent) {
		g.disp = &foreignContent{Dispatcher: g.disp, st: g.store, runs: map[string]int{}}
	}
	return nil
}

// refusalFee is the refusal-fee bug: a charge the store refuses for
// insufficient funds, with a reservation or after it, is billed a flat fee
// of 5 on the reservation's wallet.
type refusalFee struct {
	store.Store
	g      *Gateway
	debits store.DebitAppender
}

func (s refusalFee) Reserve(ctx context.Context, r store.ReserveRequest) (store.Record, bool, error) {
	got, created, err := s.Store.Reserve(ctx, r)
	s.refused(ctx, r.Record, err)
	return got, created, err
}

func (s refusalFee) ReserveSlot(ctx context.Context, r store.SlotRequest) (store.Record, bool, error) {
	var tried store.Record
	choose := r.Choose
	r.Choose = func(slots []store.Record) (*store.Record, store.ReserveRequest) {
		join, req := choose(slots)
		if join == nil {
			tried = req.Record
		}
		return join, req
	}
	got, created, err := s.Store.ReserveSlot(ctx, r)
	s.refused(ctx, tried, err)
	return got, created, err
}

func (s refusalFee) Charge(ctx context.Context, c store.ChargeRequest) error {
	err := s.Store.Charge(ctx, c)
	s.refused(ctx, store.Record{Key: c.RecordKey, WalletID: c.Entry.WalletID, Tool: c.Entry.Tool}, err)
	return err
}

// refused writes the fee when err is the store's refusal for funds.
func (s refusalFee) refused(ctx context.Context, rec store.Record, err error) {
	if !errors.Is(err, store.ErrInsufficientFunds) {
		return
	}
	err = s.debits.AppendDebit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryFee,
		Amount: 5, RecordKey: rec.Key, Tool: rec.Tool, At: s.g.clock.Now()})
	if err != nil {
		s.g.log.Warn("refusal fee", "record", rec.Key, "err", err)
	}
}

// keyScopeBilling is the key-scope-billing bug: billing looks the payer of
// a keyed call up by its client key and tool alone, so the wallet that
// first used them pays for every call with them, a caller of another
// wallet reusing the key included (who still gets its own operation).
type keyScopeBilling struct {
	store.Store
	mu      sync.Mutex
	payerOf map[string]string // tool and client key -> the first wallet charged for them
}

func (s *keyScopeBilling) Charge(ctx context.Context, c store.ChargeRequest) error {
	if rec, err := s.Store.Record(ctx, c.RecordKey); err == nil && rec.Kind == store.KindClient {
		c.Entry.WalletID = s.payer(rec)
	}
	return s.Store.Charge(ctx, c)
}

func (s *keyScopeBilling) payer(rec store.Record) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := rec.Tool + "\x00" + rec.ClientKey
	if w, ok := s.payerOf[k]; ok {
		return w
	}
	s.payerOf[k] = rec.WalletID
	return rec.WalletID
}

// lateDebit is the late-debit bug: a billing retry in the background writes
// a call's debit once more, 300 ms after the outcome of its dispatch was
// stored completed, well after the client had its answer. The Dispatcher's
// decorator notes each dispatch that returned a result; the store's, the
// Finish that stores its outcome.
type lateDebit struct {
	g      *Gateway
	debits store.DebitAppender
	ran    dispatchNotes // the dispatches that returned a result, until their outcome is stored
}

type lateDebitStore struct {
	store.Store
	l *lateDebit
}

func (s lateDebitStore) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	err := s.Store.Finish(ctx, key, owner, o)
	if err != nil || o.State != store.StateCompleted {
		return err
	}
	r, ran := s.l.ran.take(key)
	if ran && r.Tool.Price > 0 {
		s.l.debitAgain(r, o.Receipt)
	}
	return nil
}

func (l *lateDebit) debitAgain(r DispatchRequest, receipt string) {
	g := l.g
	g.late.Add(1)
	go func() {
		defer g.late.Done()
		time.Sleep(300 * time.Millisecond)
		e := store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: r.WalletID,
			Kind: store.EntryDebit, Amount: r.Tool.Price, RecordKey: r.RecordKey, Receipt: receipt, Tool: r.Tool.Name, At: g.clock.Now()}
		err := g.durable(context.Background(), func(ctx context.Context) error { return l.debits.AppendDebit(ctx, e) })
		if err != nil {
			g.log.Warn("late debit", "record", r.RecordKey, "err", err)
		}
	}()
}

// capabilityRefund is the capability-refusal-kept and capability-refund-twice
// bugs: the refund of a call an upstream refused for a client capability
// the caller did not declare (-32021) is left out (the debit is kept), or
// written for twice the debit. The Dispatcher's decorator notes the
// refusal; the store's changes the refund the Finish of its record writes.
type capabilityRefund struct {
	twice   bool          // capability-refund-twice; else capability-refusal-kept
	refused dispatchNotes // the dispatches refused so, until their refund is written
}

type capabilityRefundStore struct {
	store.Store
	r *capabilityRefund
}

func (s capabilityRefundStore) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	if _, refused := s.r.refused.peek(key); !refused || o.State != store.StateFailedRefunded || o.Refund == nil {
		return s.Store.Finish(ctx, key, owner, o)
	}
	if s.r.twice {
		refund := *o.Refund
		refund.Amount *= 2
		o.Refund = &refund
	} else {
		o.Refund = nil
	}
	err := s.Store.Finish(ctx, key, owner, o)
	if err == nil {
		s.r.refused.take(key)
	}
	return err
}

// dispatchNotes carries dispatches, by record key, from a Dispatcher
// decorator to the store decorator that acts on the Finish of their record.
type dispatchNotes struct {
	mu sync.Mutex
	of map[string]DispatchRequest
}

func (n *dispatchNotes) note(r DispatchRequest) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.of == nil {
		n.of = map[string]DispatchRequest{}
	}
	n.of[r.RecordKey] = r
}

// peek is the dispatch noted for key, if any; take also forgets it.
func (n *dispatchNotes) peek(key string) (DispatchRequest, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.of[key]
	return r, ok
}

func (n *dispatchNotes) take(key string) (DispatchRequest, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.of[key]
	delete(n.of, key)
	return r, ok
}

// notingDispatcher notes each dispatch whose error when holds of (nil: it
// returned a result).
type notingDispatcher struct {
	Dispatcher
	notes *dispatchNotes
	when  func(error) bool
}

func (d notingDispatcher) Dispatch(ctx context.Context, r DispatchRequest) (json.RawMessage, error) {
	res, err := d.Dispatcher.Dispatch(ctx, r)
	if d.when(err) {
		d.notes.note(r)
	}
	return res, err
}

// foreignContent is the foreign-content bug: every 7th dispatch of a wallet
// that returns a result, from its 14th on, returns instead the result of the
// wallet's latest other completed call of the tool, which the call then
// stores and answers under its own receipt.
type foreignContent struct {
	Dispatcher
	st   store.Store
	mu   sync.Mutex
	runs map[string]int // dispatches that returned a result, per wallet
}

func (f *foreignContent) Dispatch(ctx context.Context, r DispatchRequest) (json.RawMessage, error) {
	res, err := f.Dispatcher.Dispatch(ctx, r)
	if err != nil || !f.nth(r.WalletID) {
		return res, err
	}
	return f.other(ctx, r, res), nil
}

func (f *foreignContent) nth(wallet string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[wallet]++
	n := f.runs[wallet]
	return n >= 14 && n%7 == 0
}

// other is the wallet's latest other completed result of r's tool, or
// result when there is none.
func (f *foreignContent) other(ctx context.Context, r DispatchRequest, result json.RawMessage) json.RawMessage {
	ds, err := f.st.Dispatches(ctx, store.DispatchFilter{Tool: r.Tool.Name, WalletID: r.WalletID})
	if err != nil {
		return result
	}
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].RecordKey == r.RecordKey {
			continue
		}
		if other, err := f.st.Record(ctx, ds[i].RecordKey); err == nil && other.State == store.StateCompleted {
			return other.Result
		}
	}
	return result
}
