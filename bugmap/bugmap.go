// Package bugmap says which checks are expected to catch each of the
// reference gateway's bug switches. The self-test holds the suite to it: with
// a switch on, every named check must be violated, and no scenario may fail
// outside the catchers and the bug's collateral (another failure would be
// for a reason other than the bug).
package bugmap

import (
	"slices"
	"sort"
)

// Check names one check a bug switch must violate: the scenario, and the
// step that makes the check, as the feature file writes it.
type Check struct {
	Scenario string
	Step     string
}

// Scenarios lists the scenario IDs of checks, sorted, each once.
func Scenarios(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.Scenario) {
			out = append(out, c.Scenario)
		}
	}
	sort.Strings(out)
	return out
}

// Catchers maps a bug switch to the checks it must violate, one per
// scenario that catches it. A scenario failing is not enough: the named
// check is the one that observes the bug's own harm (the second dispatch,
// the wrong debit, the other operation's receipt), so a scenario failing
// for another reason (a pause its path never reaches) does not count. Each
// list was observed, then read scenario by scenario to confirm the named
// check fails because of the bug (e.g. random-unkeyed-key bypasses the
// lock, so each lock scenario's pause is never reached; the scenario goes
// on and its probe count shows the second dispatch).
var Catchers = map[string][]Check{
	"random-unkeyed-key": {
		{"ledger-01", `the wallet balance changed by -3`},
		{"lock-01", `the probe saw "$op1" dispatched 1 time`},
		{"lock-02", `the probe saw "$op1" dispatched 1 time`},
		{"lock-03", `the probe saw "$op1" dispatched 1 time`},
		{"lock-04", `the probe saw "$op1" dispatched 1 time`},
		{"lost-02", `the probe saw "$op1" dispatched 1 time`},
		{"retry-03", `the probe saw "$op1" dispatched 1 time`},
		{"twins-02", `the probe saw "$op1" dispatched 1 time`},
		{"twins-04", `the probe saw "$op1" dispatched 1 time`},
		{"window-01", `the probe saw "$op1" dispatched 1 time`},
		{"window-02", `the probe saw "$op1" dispatched 1 time`},
	},
	"floor-bucket": {
		{"window-01", `the probe saw "$op1" dispatched 1 time`},
		{"window-02", `the probe saw "$op1" dispatched 1 time`},
	},
	"principal-unbound": {
		{"iga-01", `the probe saw "$op1" dispatched 2 times`},
	},
	"replay-before-iga": {
		{"iga-02", `"alice" is refused with "principal_denied"`},
		{"iga-03", `"alice" is refused with "principal_denied"`},
		{"iga-04", `"alice" is refused with "principal_denied"`},
	},
	"readonly-collapsed": {
		{"refuse-02", `the probe saw "$op1" dispatched 0 times`},
	},
	"lookup-before-reserve": {
		{"lost-04", `the probe saw "$op1" dispatched 1 time`},
		{"twins-03", `the probe saw "$op1" dispatched 1 time`},
	},
	"stale-lock-no-fence": {
		{"lock-01", `the probe saw "$op1" dispatched 1 time`},
		{"lock-02", `the probe saw "$op1" dispatched 1 time`},
		{"lock-03", `"A" is refused with retryable "idempotency_in_progress"`},
	},
	"release-unpinned": {
		{"lock-02", `the probe saw "$op1" dispatched 1 time`},
		{"lock-03", `"C" is refused with retryable "idempotency_in_progress"`},
	},
	"select-for-update-sqlite": {
		{"lock-01", `the probe saw "$op1" dispatched 1 time`},
		{"lock-03", `"A" is refused with retryable "idempotency_in_progress"`},
	},
	"lock-timeout-internal": {
		{"lock-04", `"B" is refused with retryable "idempotency_in_progress"`},
	},
	"replay-debits": {
		{"cancel-01", `the ledger has 1 debit and 0 refunds`},
		{"cancel-02", `the ledger has 1 debit and 0 refunds`},
		{"ledger-01", `the wallet balance changed by -3`},
		{"lost-01", `the ledger has 1 debit and 0 refunds`},
		{"lost-02", `the ledger has 1 debit and 0 refunds`},
		{"lost-03", `the ledger has 1 debit and 0 refunds`},
		{"lost-04", `the ledger has 1 debit and 0 refunds`},
		{"retry-01", `the ledger has 1 debit and 0 refunds`},
		{"retry-03", `the ledger has 1 debit and 0 refunds`},
		{"retry-06", `the ledger has 1 debit and 0 refunds`},
		{"retry-07", `the ledger has 1 debit and 0 refunds`},
		{"retry-08", `the ledger has 1 debit and 0 refunds`},
		{"window-01", `the ledger has 1 debit and 0 refunds`},
		{"window-02", `the ledger has 1 debit and 0 refunds`},
	},
	"refund-missing": {
		{"ledger-01", `the wallet balance changed by 0`},
	},
	"window-ignores-ttl": {
		{"retry-05", `the probe saw "$op1" dispatched 2 times`},
	},
	"permit-expiry-blocks-replay": {
		{"retry-08", `the last answer of "A" carries the receipt the ledger debited`},
	},
	"takeover-charged": {
		{"lost-04", `the probe saw "$op1" dispatched 1 time`},
	},
	"no-idempotency": {
		{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
		{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
		{"cancel-03", `the probe saw "$op1" dispatched at most 1 time`},
		{"iga-03", `"alice" is refused with "principal_denied"`},
		{"ledger-01", `the wallet balance changed by -3`},
		{"ledger-02", `every dispatched operation was charged exactly once`},
		{"lock-01", `the probe saw "$op1" dispatched 1 time`},
		{"lock-02", `the probe saw "$op1" dispatched 1 time`},
		{"lock-03", `the probe saw "$op1" dispatched 1 time`},
		{"lock-04", `the probe saw "$op1" dispatched 1 time`},
		{"lost-01", `the probe saw "$op1" dispatched 1 time`},
		{"lost-02", `the probe saw "$op1" dispatched 1 time`},
		{"lost-03", `the probe saw "$op1" dispatched 1 time`},
		{"lost-04", `the probe saw "$op1" dispatched 1 time`},
		{"refuse-01", `the probe saw "$op1" dispatched 0 times`},
		{"refuse-02", `the probe saw "$op1" dispatched 0 times`},
		{"refuse-03", `the probe saw "$op1" dispatched 0 times`},
		{"retry-01", `the probe saw "$op1" dispatched 1 time`},
		{"retry-02", `the probe saw "$op2" dispatched 0 times`},
		{"retry-03", `the probe saw "$op1" dispatched 1 time`},
		{"retry-06", `the probe saw "$op1" dispatched 1 time`},
		{"retry-07", `the probe saw "$op1" dispatched 1 time`},
		{"retry-08", `the probe saw "$op1" dispatched 1 time`},
		{"twins-01", `the probe saw "$op1" dispatched 1 time`},
		{"twins-02", `the probe saw "$op1" dispatched 1 time`},
		{"twins-03", `the probe saw "$op1" dispatched 1 time`},
		{"twins-04", `the probe saw "$op1" dispatched 1 time`},
		{"window-01", `the probe saw "$op1" dispatched 1 time`},
		{"window-02", `the probe saw "$op1" dispatched 1 time`},
	},
	"key-scope-tool": {
		{"scope-01", `the last answer of "A" is its own operation or a refusal, never the first answer of "A"`},
	},
	"key-scope-apikey": {
		{"scope-02", `the last answer of "B" is its own operation or a refusal, never the first answer of "A"`},
	},
	"key-scope-wallet": {
		{"scope-02", `the last answer of "B" is its own operation or a refusal, never the first answer of "A"`},
		{"scope-03", `the last answer of "C" is its own operation or a refusal, never the first answer of "A"`},
	},
	"cancel-forgets": {
		{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
		{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
		{"cancel-03", `the probe saw "$op1" dispatched at most 1 time`},
		{"lost-01", `the probe saw "$op1" dispatched 1 time`},
	},
	"double-price": {
		{"cancel-01", `the ledger has 1 debit and 0 refunds`},
		{"cancel-02", `the ledger has 1 debit and 0 refunds`},
		{"iga-01", `the ledger has 2 debits and 0 refunds`},
		{"ledger-01", `the wallet balance changed by -3`},
		{"ledger-02", `every dispatched operation was charged exactly once`},
		{"lock-01", `the ledger has 1 debit and 0 refunds`},
		{"lock-02", `the ledger has 1 debit and 0 refunds`},
		{"lock-03", `the ledger has 1 debit and 0 refunds`},
		{"lock-04", `the ledger has 1 debit and 0 refunds`},
		{"lost-01", `the ledger has 1 debit and 0 refunds`},
		{"lost-02", `the ledger has 1 debit and 0 refunds`},
		{"lost-03", `the ledger has 1 debit and 0 refunds`},
		{"lost-04", `the ledger has 1 debit and 0 refunds`},
		{"refuse-04", `the ledger has 2 debits and 0 refunds`},
		{"retry-01", `the ledger has 1 debit and 0 refunds`},
		{"retry-02", `the ledger has 1 debit and 0 refunds`},
		{"retry-03", `the ledger has 1 debit and 0 refunds`},
		{"retry-04", `the ledger has 2 debits and 0 refunds`},
		{"retry-05", `the ledger has 2 debits and 0 refunds`},
		{"retry-06", `the ledger has 1 debit and 0 refunds`},
		{"retry-07", `the ledger has 1 debit and 0 refunds`},
		{"retry-08", `"A" lost the connection without an answer`},
		{"twins-01", `the ledger has 1 debit and 0 refunds`},
		{"twins-02", `the ledger has 1 debit and 0 refunds`},
		{"twins-03", `the ledger has 1 debit and 0 refunds`},
		{"twins-04", `the ledger has 1 debit and 0 refunds`},
		{"window-01", `the ledger has 1 debit and 0 refunds`},
		{"window-02", `the ledger has 1 debit and 0 refunds`},
	},
	"refusal-fee": {
		{"refuse-05", `the ledger has 0 debits and 0 refunds`},
	},
	"fresh-receipt-on-replay": {
		{"ledger-01", `the last answer of "A" replays its second answer`},
		{"ledger-02", `every operation of the workload got one outcome`},
		{"lost-01", `the last answer of "A" carries the receipt the ledger debited`},
		{"lost-02", `the last answer of "A" carries the receipt the ledger debited`},
		{"lost-03", `the last answer of "A" carries the receipt the ledger debited`},
		{"lost-04", `the last answer of "B" replays the first answer of "A"`},
		{"retry-01", `the last answer of "A" replays its first answer`},
		{"retry-03", `the last answer of "A" replays its first answer`},
		{"retry-06", `the last answer of "A" replays its first answer`},
		{"retry-07", `the last answer of "A" replays its first answer`},
		{"retry-08", `the last answer of "A" carries the receipt the ledger debited`},
		{"window-01", `the last answer of "A" replays its first answer`},
		{"window-02", `the last answer of "B" replays the first answer of "A"`},
	},
	"key-reuse-replays": {
		{"ledger-02", `every operation of the workload got one outcome`},
		{"retry-02", `"A" is refused with "idempotency_key_reused"`},
	},
}

// Collateral maps a bug switch to scenarios that may also fail with it on,
// depending on timing or the workload's seed: barrier twins whose answers may
// all be in-progress before any replay, a retry racing the first call's
// record write, a seeded workload that may or may not retry unkeyed calls.
// They catch the bug when they fail but are not required to.
var Collateral = map[string][]string{
	"random-unkeyed-key": {"ledger-02"},
	// cancel-03's pause at reserve.done is never reached on the bug's
	// path: it fails, but at that pause, not at the harm.
	"lookup-before-reserve": {"cancel-01", "cancel-02", "cancel-03", "lost-01", "twins-01", "ledger-02"},
	"replay-debits":         {"ledger-02", "twins-01", "twins-02", "twins-04"},
	// Twins whose duplicates were all answered in progress saw no replay.
	"fresh-receipt-on-replay": {"twins-01", "twins-02", "twins-04"},
}
