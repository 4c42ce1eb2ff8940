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
		"no-idempotency": join(
			at(dispatchedOnce, "cancel-01", "cancel-02", "lost-01", "retry-01", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10", "twins-01", "twins-02"),
			at(`no operation was dispatched twice`, "ledger-02"),
			at(neverDispatched, "refuse-02", "refuse-03"),
			at(`the probe saw "$op2" dispatched 0 times`, "retry-02"),
		),
		"random-unkeyed-key": at(dispatchedOnce, "retry-03", "twins-02"),
		"readonly-collapsed": at(neverDispatched, "refuse-02"),
		"parse-error-500":    at(`"A" is refused with "parse_error"`, "refuse-07"),
		"key-scope-tool":     at(`the last answer of "A" is its own operation or a refusal, never the first answer of "A"`, "scope-01"),
		"key-scope-apikey":   at(`the last answer of "B" is its own operation or a refusal, never the first answer of "A"`, "scope-02"),
		"key-scope-wallet": join(
			at(`the last answer of "B" is its own operation or a refusal, never the first answer of "A"`, "scope-02"),
			at(`the last answer of "C" is its own operation or a refusal, never the first answer of "A"`, "scope-03"),
		),
		"cancel-forgets": at(dispatchedOnce, "cancel-01", "cancel-02", "lost-01"),
		"fresh-receipt-on-replay": join(
			at(`every operation of the workload got one outcome`, "ledger-02"),
			at(`the last answer of "A" replays its first answer`, "retry-01", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10"),
		),
		"key-reuse-replays": join(
			at(`every operation of the workload got one outcome`, "ledger-02"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
		),
		// The adversarial review of issue 10.
		"replay-drops-structured":   at(`the last answer of "A" replays its first answer`, "retry-01", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10"),
		"replay-resulttype-missing": at(`the last answer of "A" is a final result as its protocol version writes one`, "retry-07", "retry-09"),
		"session-content-dropped":   at(`the last answer of "A" is a final result as its protocol version writes one`, "retry-06", "retry-09", "retry-10"),
		"refusals-retryable": join(
			at(`"A" is refused with "idempotency_key_required"`, "refuse-02", "refuse-03"),
			at(`"A" is refused with "parse_error"`, "refuse-07"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
		),
	},
	// Only what the identity provider adds: the other switches are the
	// wire mode's.
	ModeWirePrincipals: {
		"principal-unbound": at(`the probe saw "$op1" dispatched 2 times`, "iga-01"),
	},
	ModeWireRefuse: {
		"no-idempotency": join(
			at(dispatchedOnce, "cancel-01", "cancel-02", "lost-01", "retry-01", "retry-06", "retry-07", "retry-09", "retry-10", "twins-01"),
			at(`no operation was dispatched twice`, "ledger-02"),
			at(neverDispatched, "refuse-02", "refuse-03", "refuse-10"),
			at(`the probe saw "$op2" dispatched 0 times`, "retry-02"),
		),
		"cancel-forgets": at(dispatchedOnce, "cancel-01", "cancel-02", "lost-01"),
		"refusals-retryable": join(
			at(`"A" is refused with "idempotency_key_required"`, "refuse-02", "refuse-03", "refuse-10"),
			at(`"A" is refused with "parse_error"`, "refuse-07"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
			at(`every operation of the workload got one outcome`, "ledger-02"),
		),
	},
}

// ExternalCollateral: scenarios that may also fail in a mode, depending on
// the workload's seed.
var ExternalCollateral = map[string]map[string][]string{
	ModeWire: {
		"random-unkeyed-key": {"ledger-02"},
		// Twins whose duplicates were all answered in progress saw no replay.
		"fresh-receipt-on-replay": {"twins-01", "twins-02"},
		"replay-drops-structured": {"twins-01", "twins-02"},
		// As in the full self-test: the flag, not the harm these name.
		"refusals-retryable": {"refuse-06", "refuse-08", "refuse-09"},
	},
	ModeWireRefuse: {
		"refusals-retryable": {"refuse-06", "refuse-08", "refuse-09"},
	},
}
