package bugmap

// Modes of the external self-test: the reference gateway presented as a
// vendor's gateway with no control API, set up by its --fixtures file and
// seen only through the MCP endpoint, the harness's probe and (in the
// principals mode) the harness's identity provider, which it trusts.
const (
	ModeWire           = "wire"            // the probe only; unkeyed policy derived
	ModeWirePrincipals = "wire-principals" // also trusting the harness's identity provider: principals by tokens
	ModeWireRefuse     = "wire-refuse"     // --window 0: unkeyed policy refuse
)

// External maps a mode to the bug switches the wire and the probe can see
// in it, each with the scenarios that must fail. Bugs that only the ledger,
// the clock, the faults or two processes reveal are not listed: a gateway
// without a control API gives no way to see them, and the run says so
// (their scenarios are incomplete or skipped, never passed).
var External = map[string]map[string][]string{
	ModeWire: {
		"no-idempotency":     {"cancel-01", "cancel-02", "ledger-02", "lost-01", "refuse-02", "refuse-03", "retry-01", "retry-02", "retry-03", "retry-06", "retry-07", "twins-01", "twins-02"},
		"random-unkeyed-key": {"retry-03", "twins-02"},
		"readonly-collapsed": {"refuse-02"},
		"key-scope-tool":     {"scope-01"},
		"key-scope-apikey":   {"scope-02"},
		"key-scope-wallet":   {"scope-02", "scope-03"},
		"cancel-forgets":     {"cancel-01", "cancel-02", "lost-01"},
	},
	// Only what the identity provider adds: the other switches are the
	// wire mode's.
	ModeWirePrincipals: {
		"principal-unbound": {"iga-01"},
	},
	ModeWireRefuse: {
		"no-idempotency": {"cancel-01", "cancel-02", "ledger-02", "lost-01", "refuse-02", "refuse-03", "refuse-10", "retry-01", "retry-02", "retry-06", "retry-07", "twins-01"},
		"cancel-forgets": {"cancel-01", "cancel-02", "lost-01"},
	},
}

// ExternalCollateral: scenarios that may also fail in a mode, depending on
// the workload's seed.
var ExternalCollateral = map[string]map[string][]string{
	ModeWire: {
		"random-unkeyed-key": {"ledger-02"},
	},
}
