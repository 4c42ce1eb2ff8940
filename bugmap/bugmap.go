// Package bugmap says which scenarios are expected to catch each of the
// reference gateway's bug switches. The self-test holds the suite to it: with
// a switch on, every listed scenario must fail, and nothing else may.
package bugmap

// Catchers maps a bug switch to the scenario IDs expected to catch it.
var Catchers = map[string][]string{
	"random-unkeyed-key":       {"retry-03", "window-01", "window-02", "twins-02", "lost-02"},
	"floor-bucket":             {"window-01", "window-02"},
	"principal-unbound":        {"iga-01"},
	"replay-before-iga":        {"iga-02", "iga-03", "iga-04"},
	"readonly-collapsed":       {"refuse-02"},
	"lookup-before-reserve":    {"twins-03"},
	"stale-lock-no-fence":      {"lock-01", "lock-02"},
	"release-unpinned":         {"lock-03"},
	"select-for-update-sqlite": {"lock-01"},
	"lock-timeout-internal":    {"lock-04"},
	"replay-debits":            {"retry-01", "retry-03", "ledger-01"},
	"refund-missing":           {"ledger-01"},
	"window-ignores-ttl":       {"retry-05"},
}
