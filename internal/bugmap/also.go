package bugmap

import "slices"

// alsoFailing are scenarios that also fail with a switch on, seen in the
// self-tests once the shape scenarios (features/shapes.feature, iga-06)
// joined the suite: most are further catches of the same harm (a double
// price fails every ledger check), some depend on timing. Merged into
// Collateral and ExternalCollateral.
var alsoFailing = map[string][]string{
	"double-price":            {"args-01", "args-02", "args-03", "args-04", "args-05", "args-05-unkeyed", "cancel-03", "funds-01", "funds-01-unkeyed", "funds-02", "funds-03", "funds-03-unkeyed", "iga-02", "iga-02-session", "iga-02-stateless", "iga-03", "iga-03-session", "iga-03-stateless", "iga-04", "iga-04-session", "iga-04-stateless", "iga-06", "key-01", "key-02", "lock-05", "retention-01", "retention-02", "retry-09", "retry-10", "scope-01", "scope-01-session", "scope-01-stateless", "scope-02", "scope-02-session", "scope-02-stateless", "settle-01", "settle-02", "upstream-01", "upstream-01-keyed", "upstream-02", "upstream-03", "window-05", "ledger-03", "ledger-03-cheaper", "iga-07", "iga-07-keyed"},
	"fingerprint-shallow":     {"args-05"},
	"floor-bucket":            {"window-05"},
	"fresh-receipt-on-replay": {"args-01", "args-03", "args-04", "cancel-01", "cancel-02", "cancel-03", "retention-01", "retention-02", "settle-02", "twins-02", "twins-02-keyed", "twins-02-session", "twins-04", "twins-04-keyed", "twins-04-session", "twins-04-stateless", "upstream-02", "window-05"},
	"funds-boundary":          {"funds-02", "funds-03", "funds-03-unkeyed"},
	"key-reuse-replays":       {"args-02", "args-05"},
	"keyed-takeover-unfenced": {"settle-01", "settle-02"},
	"late-debit":              {"args-01", "args-02", "args-03", "args-04", "args-05", "args-05-unkeyed", "cancel-03", "funds-01", "funds-01-unkeyed", "funds-02", "funds-03", "funds-03-unkeyed", "iga-02", "iga-02-session", "iga-02-stateless", "iga-03", "iga-03-session", "iga-03-stateless", "iga-04", "iga-04-session", "iga-04-stateless", "iga-06", "key-01", "key-02", "ledger-02", "lock-05", "retention-01", "retention-02", "retry-09", "retry-10", "scope-01", "scope-01-session", "scope-01-stateless", "scope-02", "scope-02-session", "scope-02-stateless", "settle-01", "upstream-01", "upstream-01-keyed", "upstream-02", "upstream-03", "window-05", "iga-07", "iga-07-keyed"},
	"lookup-before-reserve":   {"cancel-02", "cancel-03", "funds-02", "funds-03", "lock-01-keyed", "lock-03-keyed", "lock-05", "lost-01", "lost-01-session", "lost-05", "lost-06-keyed", "lost-07", "refuse-13", "retention-02", "rounds-01", "rounds-02", "rounds-03", "settle-01", "settle-02", "twins-01", "twins-01-session", "twins-01-stateless", "twins-02-keyed", "twins-04-keyed", "upstream-01-keyed", "ledger-03", "ledger-03-cheaper"},
	"no-idempotency":          {"args-01", "args-02", "args-03", "args-04", "args-05", "lock-05", "retention-01", "retention-02", "settle-01", "settle-02", "upstream-02", "window-05", "scope-04", "scope-04-tool", "scope-04-wallet"},
	"principal-unbound":       {"iga-06", "iga-07"},
	"purge-inside-window":     {"retention-02"},
	"random-unkeyed-key":      {"args-03", "ledger-02", "window-05"},
	"refund-missing":          {"upstream-01", "upstream-01-keyed", "upstream-03", "ledger-03", "ledger-03-cheaper"},
	"refusal-fee":             {"funds-01", "funds-01-unkeyed", "funds-02", "funds-03", "funds-03-unkeyed"},
	"refusals-retryable":      {"args-02", "args-05", "funds-01", "funds-01-unkeyed", "funds-02", "funds-03", "funds-03-unkeyed", "iga-05", "iga-05-session", "iga-05-stateless", "ledger-02", "lost-04", "refuse-06", "refuse-08", "refuse-09", "retention-02", "settle-01", "settle-02", "window-04", "scope-04", "scope-04-tool", "scope-04-wallet"},
	"replay-debits":           {"args-01", "args-03", "args-04", "cancel-03", "ledger-02", "retention-01", "retention-02", "retry-09", "retry-10", "settle-02", "twins-02", "twins-02-keyed", "twins-02-session", "twins-02-stateless", "twins-04", "twins-04-keyed", "twins-04-session", "twins-04-stateless", "upstream-02", "window-05"},
	"replay-drops-structured": {"args-01", "args-03", "args-04", "cancel-01", "cancel-02", "ledger-02", "retention-01", "retention-02", "twins-02", "twins-02-keyed", "twins-02-session", "twins-02-stateless", "twins-04", "twins-04-keyed", "twins-04-session", "twins-04-stateless", "upstream-02", "window-05"},
	"replay-revalidates":      {"retention-02"},
	"session-content-dropped": {"funds-02", "funds-03", "funds-03-unkeyed", "lock-05", "retention-01", "retention-02", "settle-01", "upstream-03", "iga-07", "iga-07-keyed"},
	"takeover-charged":        {"lock-05", "retention-02", "settle-01", "settle-02"},
	"takeover-trusts-read":    {"settle-01", "settle-02"},
	"uncertain-in-progress":   {"retention-02", "settle-01", "settle-02"},
	"upstream-error-charged":  {"upstream-03", "ledger-03", "ledger-03-cheaper"},
}

var alsoFailingExternal = map[string]map[string][]string{
	ModeWire: {
		"fingerprint-shallow":     {"args-05"},
		"fresh-receipt-on-replay": {"args-01", "args-03", "args-04", "twins-02", "twins-02-keyed", "twins-02-session", "twins-02-stateless", "upstream-02"},
		"key-reuse-replays":       {"args-02", "args-05"},
		"no-idempotency":          {"args-01", "args-02", "args-03", "args-04", "args-05", "upstream-02"},
		"random-unkeyed-key":      {"args-03", "ledger-02"},
		"refusals-retryable":      {"args-02", "args-05", "ledger-02", "refuse-06", "refuse-08", "refuse-09"},
		"replay-drops-structured": {"args-01", "args-03", "args-04", "cancel-01", "cancel-02", "ledger-02", "twins-02", "twins-02-keyed", "twins-02-session", "twins-02-stateless", "upstream-02"},
	},
	ModeWirePrincipals: {
		"principal-unbound":           {"iga-06", "iga-07"},
		"principal-unbound-stateless": {"iga-06"},
	},
	ModeWireRefuse: {
		"fingerprint-shallow": {"args-05"},
		"no-idempotency":      {"args-01", "args-02", "args-04", "args-05", "upstream-02"},
		"refusals-retryable":  {"args-02", "args-05", "refuse-06", "refuse-08", "refuse-09"},
	},
}

// crashFailing are the crash scenarios (features/crash.feature) that also
// fail with a switch on, seen running crash-01, crash-02 and crash-03 once
// per switch: further catches of the switch's own harm (a double price
// fails their ledger checks, a replay their counts) or, for
// lookup-before-reserve, a path that never reaches the crash point.
var crashFailing = map[string][]string{
	"double-price":              {"crash-01", "crash-02", "crash-03"},
	"fresh-receipt-on-replay":   {"crash-01", "crash-02", "crash-03"},
	"keyed-records-per-process": {"crash-02"},
	"late-debit":                {"crash-01", "crash-02"},
	"lookup-before-reserve":     {"crash-01", "crash-02"},
	"no-idempotency":            {"crash-01", "crash-02", "crash-03"},
	"refusals-retryable":        {"crash-02"},
	"replay-debits":             {"crash-01", "crash-02", "crash-03"},
	"replay-drops-structured":   {"crash-01", "crash-02"},
	"replay-revalidates":        {"crash-01", "crash-02", "crash-03"},
	"session-content-dropped":   {"crash-01", "crash-02", "crash-03"},
	"settle-refund-unwritten":   {"crash-02"},
	"takeover-charged":          {"crash-01"},
}

func init() {
	for bug, ids := range crashFailing {
		Collateral[bug] = union(Collateral[bug], ids)
	}
	for bug, ids := range alsoFailing {
		Collateral[bug] = union(Collateral[bug], ids)
	}
	for mode, byBug := range alsoFailingExternal {
		if ExternalCollateral[mode] == nil {
			ExternalCollateral[mode] = map[string][]string{}
		}
		for bug, ids := range byBug {
			ExternalCollateral[mode][bug] = union(ExternalCollateral[mode][bug], ids)
		}
	}
}

// union is a and the ids of b it lacks.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, id := range b {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
