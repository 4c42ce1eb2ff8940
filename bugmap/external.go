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
// in it, each with the checks that must fail. Bugs that only the ledger,
// the clock, the faults or two processes reveal are not listed: a gateway
// without a control API gives no way to see them, and the run says so
// (their scenarios are incomplete or skipped, never passed).
var External = map[string]map[string][]Check{
	ModeWire: {
		"no-idempotency": {
			{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
			{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
			{"ledger-02", `no operation was dispatched twice`},
			{"lost-01", `the probe saw "$op1" dispatched 1 time`},
			{"refuse-02", `the probe saw "$op1" dispatched 0 times`},
			{"refuse-03", `the probe saw "$op1" dispatched 0 times`},
			{"retry-01", `the probe saw "$op1" dispatched 1 time`},
			{"retry-02", `the probe saw "$op2" dispatched 0 times`},
			{"retry-03", `the probe saw "$op1" dispatched 1 time`},
			{"retry-06", `the probe saw "$op1" dispatched 1 time`},
			{"retry-07", `the probe saw "$op1" dispatched 1 time`},
			{"twins-01", `the probe saw "$op1" dispatched 1 time`},
			{"twins-02", `the probe saw "$op1" dispatched 1 time`},
		},
		"random-unkeyed-key": {
			{"retry-03", `the probe saw "$op1" dispatched 1 time`},
			{"twins-02", `the probe saw "$op1" dispatched 1 time`},
		},
		"readonly-collapsed": {{"refuse-02", `the probe saw "$op1" dispatched 0 times`}},
		"key-scope-tool":     {{"scope-01", `the last answer of "A" is its own operation or a refusal, never the first answer of "A"`}},
		"key-scope-apikey":   {{"scope-02", `the last answer of "B" is its own operation or a refusal, never the first answer of "A"`}},
		"key-scope-wallet": {
			{"scope-02", `the last answer of "B" is its own operation or a refusal, never the first answer of "A"`},
			{"scope-03", `the last answer of "C" is its own operation or a refusal, never the first answer of "A"`},
		},
		"cancel-forgets": {
			{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
			{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
			{"lost-01", `the probe saw "$op1" dispatched 1 time`},
		},
		"fresh-receipt-on-replay": {
			{"ledger-02", `every operation of the workload got one outcome`},
			{"retry-01", `the last answer of "A" replays its first answer`},
			{"retry-03", `the last answer of "A" replays its first answer`},
			{"retry-06", `the last answer of "A" replays its first answer`},
			{"retry-07", `the last answer of "A" replays its first answer`},
		},
		"key-reuse-replays": {
			{"ledger-02", `every operation of the workload got one outcome`},
			{"retry-02", `"A" is refused with "idempotency_key_reused"`},
		},
	},
	// Only what the identity provider adds: the other switches are the
	// wire mode's.
	ModeWirePrincipals: {
		"principal-unbound": {{"iga-01", `the probe saw "$op1" dispatched 2 times`}},
	},
	ModeWireRefuse: {
		"no-idempotency": {
			{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
			{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
			{"ledger-02", `no operation was dispatched twice`},
			{"lost-01", `the probe saw "$op1" dispatched 1 time`},
			{"refuse-02", `the probe saw "$op1" dispatched 0 times`},
			{"refuse-03", `the probe saw "$op1" dispatched 0 times`},
			{"refuse-10", `the probe saw "$op1" dispatched 0 times`},
			{"retry-01", `the probe saw "$op1" dispatched 1 time`},
			{"retry-02", `the probe saw "$op2" dispatched 0 times`},
			{"retry-06", `the probe saw "$op1" dispatched 1 time`},
			{"retry-07", `the probe saw "$op1" dispatched 1 time`},
			{"twins-01", `the probe saw "$op1" dispatched 1 time`},
		},
		"cancel-forgets": {
			{"cancel-01", `the probe saw "$op1" dispatched 1 time`},
			{"cancel-02", `the probe saw "$op1" dispatched 1 time`},
			{"lost-01", `the probe saw "$op1" dispatched 1 time`},
		},
	},
}

// ExternalCollateral: scenarios that may also fail in a mode, depending on
// the workload's seed.
var ExternalCollateral = map[string]map[string][]string{
	ModeWire: {
		"random-unkeyed-key": {"ledger-02"},
		// Twins whose duplicates were all answered in progress saw no replay.
		"fresh-receipt-on-replay": {"twins-01", "twins-02"},
	},
}
