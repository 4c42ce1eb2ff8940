// Package bugmap says which scenarios are expected to catch each of the
// reference gateway's bug switches. The self-test holds the suite to it: with
// a switch on, every catcher must fail, and nothing may fail outside the
// catchers and the bug's collateral (another failure would be for a reason
// other than the bug).
package bugmap

// Catchers maps a bug switch to the scenario IDs that fail with it on. Each
// list was observed, then read scenario by scenario to confirm the failure is
// the bug's own effect (e.g. random-unkeyed-key also bypasses the lock, so
// every lock scenario's pause is never reached).
var Catchers = map[string][]string{
	"random-unkeyed-key":          {"ledger-01", "lock-01", "lock-02", "lock-03", "lock-04", "lost-02", "retry-03", "twins-02", "twins-04", "window-01", "window-02"},
	"floor-bucket":                {"window-01", "window-02"},
	"principal-unbound":           {"iga-01"},
	"replay-before-iga":           {"iga-02", "iga-03", "iga-04"},
	"readonly-collapsed":          {"refuse-02"},
	"lookup-before-reserve":       {"cancel-03", "lost-04", "rounds-01", "twins-03"},
	"stale-lock-no-fence":         {"lock-01", "lock-02", "lock-03"},
	"release-unpinned":            {"lock-02", "lock-03"},
	"select-for-update-sqlite":    {"lock-01", "lock-03"},
	"lock-timeout-internal":       {"lock-04"},
	"replay-debits":               {"cancel-01", "cancel-02", "ledger-01", "lost-01", "lost-02", "lost-03", "lost-04", "retry-01", "retry-03", "retry-06", "retry-07", "retry-08", "rounds-01", "window-01", "window-02"},
	"refund-missing":              {"ledger-01"},
	"window-ignores-ttl":          {"retry-05"},
	"takeover-charged":            {"lost-04"},
	"permit-expiry-blocks-replay": {"retry-08"},
	"no-idempotency": {"cancel-01", "cancel-02", "cancel-03", "iga-03", "ledger-01", "ledger-02", "lock-01", "lock-02", "lock-03", "lock-04",
		"lost-01", "lost-02", "lost-03", "lost-04", "refuse-01", "refuse-02", "refuse-03", "retry-01", "retry-02", "retry-03",
		"retry-06", "retry-07", "retry-08", "rounds-01", "twins-01", "twins-02", "twins-03", "twins-04", "window-01", "window-02"},
	"key-scope-tool":   {"scope-01"},
	"key-scope-apikey": {"scope-02"},
	"key-scope-wallet": {"scope-02", "scope-03"},
	"cancel-forgets":   {"cancel-01", "cancel-02", "cancel-03", "lost-01"},
	"rounds-charged":   {"rounds-01"},
}

// Collateral maps a bug switch to scenarios that may also fail with it on,
// depending on timing or the workload's seed: barrier twins whose answers may
// all be in-progress before any replay, a retry racing the first call's
// record write, a seeded workload that may or may not retry unkeyed calls.
// They catch the bug when they fail but are not required to.
var Collateral = map[string][]string{
	"random-unkeyed-key":    {"ledger-02"},
	"lookup-before-reserve": {"cancel-01", "cancel-02", "lost-01", "twins-01", "ledger-02"},
	"replay-debits":         {"ledger-02", "twins-01", "twins-02", "twins-04"},
}
