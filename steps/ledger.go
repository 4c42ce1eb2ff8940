package steps

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// scenarioEntries are the wallet's entries the scenario made: those not in
// its ledger when the scenario began (a shared wallet of a vendor's
// gateway holds other scenarios' entries too).
func (w *world) scenarioEntries(l *reports.Ledger) []judge.LedgerEntry {
	return scenarioEntries(w.evidence.LedgerBefore, l)
}

func scenarioEntries(ledgerBefore, l *reports.Ledger) []judge.LedgerEntry {
	key := func(e judge.LedgerEntry) string {
		if e.ID != "" {
			return e.ID
		}
		return fmt.Sprintf("%s|%d|%s|%s", e.Kind, e.Amount, e.Receipt, e.At)
	}
	before := map[string]int{}
	if b := ledgerBefore; b != nil {
		for _, e := range b.Entries {
			before[key(e)]++
		}
	}
	var out []judge.LedgerEntry
	for _, e := range l.Entries {
		if k := key(e); before[k] > 0 {
			before[k]--
			continue
		}
		if ledgerBefore == nil && e.Kind == "credit" {
			continue // the fixture's top-up, when no read before it was possible
		}
		out = append(out, e)
	}
	return out
}

// ledgerRead reads the wallet for a ledger check and records what it saw in
// the history (every entry the scenario made, of any kind, the balance and
// the prices), so recheck recomputes the check from the history alone.
func (w *world) ledgerRead(ctx context.Context) (judge.LedgerRead, error) {
	return w.readLedger(ctx, false)
}

// finalRead reads the scenario's wallet once its effects have settled, for
// the model's ledger check, where a ledger can be read.
func (w *world) finalRead(ctx context.Context) {
	if w.walletID == "" || !w.has(judge.CapLedger) || w.env.Control() == nil {
		return
	}
	w.readOther(ctx)
	r, err := w.readLedger(ctx, true)
	if err != nil || !w.env.fixtures() {
		return
	}
	// A wallet the harness made for this scenario alone is read again at
	// the end of the run, for an entry written later.
	w.mu.Lock()
	w.finalMark = &ledgerMark{walletID: w.walletID, read: r, stepIdx: w.stepIdx}
	w.mu.Unlock()
}

// readOther reads the scenario's second wallet, once its effects settled,
// for the model: its own callers' operations must be charged there, and
// nothing else. It was made for the scenario, so every entry but its
// opening credit is the scenario's.
func (w *world) readOther(ctx context.Context) {
	w.mu.Lock()
	id := w.otherWallet
	w.mu.Unlock()
	if id == "" {
		return
	}
	l, err := w.env.Control().Snapshot(ctx, id)
	if err != nil {
		return
	}
	var mine []judge.LedgerEntry
	var opening int64
	for _, e := range l.Entries {
		if e.Kind == "credit" && opening == 0 {
			opening = e.Amount
			continue
		}
		mine = append(mine, e)
	}
	r := judge.LedgerRead{Wallet: "other", Baseline: opening, Balance: l.Balance, Entries: readEntries(mine), Prices: w.priceList(), EarlierPrices: w.earlierPrices(), Final: true}
	w.record(judge.Op{Process: "ledger", Type: judge.OK, F: judge.FLedgerRead, Value: mustJSON(r)})
}

// priceList is the scenario's prices by tool name on the target.
func (w *world) priceList() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	prices := map[string]int64{}
	for alias, name := range w.tools {
		if p, ok := w.prices[alias]; ok {
			prices[name] = p
		}
	}
	return prices
}

// earlierPrices are the prices the scenario's tools had before it
// re-priced them, by tool name (nil when it re-priced none).
func (w *world) earlierPrices() map[string][]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.repriced) == 0 {
		return nil
	}
	out := make(map[string][]int64, len(w.repriced))
	for name, ps := range w.repriced {
		out[name] = slices.Clone(ps)
	}
	return out
}

func (w *world) readLedger(ctx context.Context, final bool) (judge.LedgerRead, error) {
	l, err := w.ledger(ctx)
	if err != nil {
		return judge.LedgerRead{}, err
	}
	r := judge.LedgerRead{Baseline: w.baseline, Balance: l.Balance, Prices: w.priceList(), EarlierPrices: w.earlierPrices(), Final: final}
	r.Entries = readEntries(w.scenarioEntries(l))
	w.record(judge.Op{Process: "ledger", Type: "ok", F: judge.FLedgerRead, Value: mustJSON(r)})
	return r, nil
}

func readEntries(es []judge.LedgerEntry) []judge.EffectValue {
	out := []judge.EffectValue{}
	for _, e := range es {
		out = append(out, judge.EffectValue{Kind: e.Kind, Amount: e.Amount, Receipt: e.Receipt, Tool: e.Tool})
	}
	return out
}

// ledgerMark is a scenario's last ledger check, read again at the end of
// the run: an entry written after it (a second debit sent some time after
// the answer) fails the check as a late dispatch fails a probe count.
type ledgerMark struct {
	step     string
	id       what
	stepIdx  int
	walletID string
	read     judge.LedgerRead
	histLen  int // the history's length after the read: a call after it may write entries
}

// markLedger notes a ledger check for the end-of-run reread, on a wallet
// the harness made for the scenario alone (a profile's shared wallet also
// holds later scenarios' entries).
func (w *world) markLedger(step string, id what, r judge.LedgerRead) {
	if !w.env.fixtures() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastLedger = &ledgerMark{step: step, id: id, stepIdx: w.stepIdx, walletID: w.walletID, read: r, histLen: len(w.history)}
}

// ledgerHas counts the entries the scenario made and weighs them: the
// debits at their tool's price, the refunds giving back their debits, no
// entry of another kind (a fee), and the balance moved by exactly that.
func ledgerHas(ctx context.Context, debits, refunds int) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	step := fmt.Sprintf("the ledger has %d debits and %d refunds", debits, refunds)
	id := checkOf(judge.KindLedgerHas, judge.HarmWrongAmount, "debits", debits, "refunds", refunds)
	if !w.has(judge.CapLedger) {
		return w.unobserved(id, step, judge.CapLedger, fmt.Sprintf("%d debit(s) and %d refund(s)", debits, refunds))
	}
	r, err := w.ledgerRead(ctx)
	if err != nil {
		return err
	}
	w.markLedger(step, id, r)
	ok, expected, actual := judge.LedgerHas(r, debits, refunds)
	if n := countKind(r, judge.EntryDebit) - countKind(r, judge.EntryRefund); n > debits-refunds && !overdrawn(r) {
		id.harm = judge.HarmDoubleCharge
	}
	return w.check(id, step, judge.CapLedger, ok, expected, actual)
}

func balanceChanged(ctx context.Context, delta int64) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	step := fmt.Sprintf("the wallet balance changed by %d", delta)
	id := checkOf(judge.KindBalance, judge.HarmWrongAmount, "delta", delta)
	if !w.has(judge.CapLedger) {
		return w.unobserved(id, step, judge.CapLedger, fmt.Sprintf("a balance change of %+d", delta))
	}
	r, err := w.ledgerRead(ctx)
	if err != nil {
		return fmt.Errorf("read balance: %w", err)
	}
	w.markLedger(step, id, r)
	ok, expected, actual := judge.BalanceChanged(r, delta)
	id.harm = balanceHarm(r, delta)
	return w.check(id, step, judge.CapLedger, ok, expected, actual)
}

// carriesDebitedReceipt holds that a retry's answer is the operation the
// wallet paid for: its receipt is the first answer's receipt when the client
// saw one, else the receipt of the ledger's debit. A gateway that gives a
// replay a fresh receipt leaves the client unable to match what it got to
// what it paid.
func carriesDebitedReceipt(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("the last answer of %s carries the receipt the ledger debited", who)
	id := checkOf(judge.KindCarriesDebited, judge.HarmLostOutcome, "client", who)
	c := w.clientFor(who)
	for _, earlier := range c.answers[:len(c.answers)-1] {
		if earlier.IsResult() && earlier.Receipt() != "" {
			return w.check(id, step, judge.CapWire, a.IsResult() && a.Receipt() == earlier.Receipt(),
				fmt.Sprintf("a result with receipt %q, the first answer's", earlier.Receipt()), w.describe(a))
		}
	}
	if !w.has(judge.CapLedger) {
		return w.unobserved(id, step, judge.CapLedger, "a result whose receipt is the ledger's debit for the operation")
	}
	if err := w.settleAll(); err != nil {
		return err
	}
	r, err := w.ledgerRead(ctx)
	if err != nil {
		return err
	}
	ok, expected, actual := judge.CarriesDebitedReceipt(r, answerReceipt(a))
	if !a.IsResult() {
		ok, actual = false, w.describe(a)
	}
	return w.check(id, step, judge.CapLedger, ok, expected, actual)
}

func answerReceipt(a *answer) string {
	if a == nil || !a.IsResult() {
		return ""
	}
	return a.Receipt()
}

// countKind counts a read's entries of one kind.
func countKind(r judge.LedgerRead, kind string) int {
	n := 0
	for _, e := range r.Entries {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// setModelChecks judges a scenario's history with the model and puts its
// checks in place of any it made before (the history may have grown since:
// a late dispatch, a ledger read again at the end of the run).
func setModelChecks(s *reports.Scenario) {
	kept := s.Checks[:0:0]
	for _, c := range s.Checks {
		if !c.Model {
			kept = append(kept, c)
		}
	}
	s.Checks = append(kept, judge.Model(s.History)...)
}

// balanceHarm is what a balance other than the one expected means: more
// debits kept than the operations the expected change pays for is a
// double charge; anything else (one debit of the wrong amount, a fee, a
// charge missing) is a wrong amount.
func balanceHarm(r judge.LedgerRead, delta int64) judge.Harm {
	var price int64
	for _, p := range r.Prices {
		if price != 0 && p != price {
			return judge.HarmWrongAmount // several prices: the count of operations is unknown
		}
		price = p
	}
	if overdrawn(r) {
		return judge.HarmWrongAmount
	}
	kept := countKind(r, judge.EntryDebit) - countKind(r, judge.EntryRefund)
	if price > 0 && r.Delta() < delta && int64(kept) > -delta/price {
		return judge.HarmDoubleCharge
	}
	return judge.HarmWrongAmount
}

// overdrawn says operations each paid once, more of them than the wallet
// could pay for: an overdraft, not a second charge.
func overdrawn(r judge.LedgerRead) bool {
	return r.Baseline >= 0 && r.Balance < 0 && distinctDebits(r)
}

// distinctDebits says no receipt carries two debits.
func distinctDebits(r judge.LedgerRead) bool {
	seen := map[string]bool{}
	for _, e := range r.Entries {
		if e.Kind != judge.EntryDebit {
			continue
		}
		if e.Receipt == "" || seen[e.Receipt] {
			return false
		}
		seen[e.Receipt] = true
	}
	return true
}
