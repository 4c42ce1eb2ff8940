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
			at(dispatchedOnce, "cancel-01", "cancel-02", "retry-01", "retry-01-later", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10", "twins-02-keyed", "twins-03-later"),
			at(dispatchedOnce, wired("lost-01", "twins-01", "twins-02")...),
			at(`no operation was dispatched twice`, "ledger-02"),
			at(neverDispatched, "refuse-02", "refuse-03"),
			at(`the probe saw "$op2" dispatched 0 times`, "retry-02"),
		),
		"random-unkeyed-key": at(dispatchedOnce, append(wired("twins-02"), "retry-03")...),
		"readonly-collapsed": at(neverDispatched, "refuse-02"),
		"parse-error-500":    at(`"A" is refused with "parse_error"`, "refuse-07"),
		"key-scope-tool":     at(`the last answer of "A" is its own operation or a refusal, never the first answer of "A"`, wired("scope-01")...),
		"key-scope-apikey":   at(`the last answer of "B" is its own operation or a refusal, never the first answer of "A"`, wired("scope-02")...),
		"key-scope-wallet": join(
			at(`the last answer of "B" is its own operation or a refusal, never the first answer of "A"`, wired("scope-02")...),
			at(`the last answer of "C" is its own operation or a refusal, never the first answer of "A"`, wired("scope-03")...),
		),
		"cancel-forgets":          at(dispatchedOnce, append(wired("lost-01"), "cancel-01", "cancel-02")...),
		"cancel-reaches-upstream": at(`"A" gets the tool's own result`, "cancel-01", "cancel-02"),
		"fresh-receipt-on-replay": join(
			at(`every operation of the workload got one outcome`, "ledger-02"),
			at(`the last answer of "A" replays its first answer`, "retry-01", "retry-01-later", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10"),
			at(`the last answer of "B" replays the first answer of "A"`, "twins-03-later"),
		),
		"key-reuse-replays": join(
			at(`every operation of the workload got one outcome`, "ledger-02"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
		),
		// An adversarial review of the reference gateway.
		"replay-drops-structured": join(
			at(`the last answer of "A" replays its first answer`, "retry-01", "retry-01-later", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10"),
			at(`the last answer of "B" replays the first answer of "A"`, "twins-03-later"),
		),
		"replay-resulttype-missing": at(`the last answer of "A" is a final result as its protocol version writes one`, "retry-07", "retry-09"),
		"session-content-dropped":   at(`the last answer of "A" is a final result as its protocol version writes one`, "retry-06", "retry-09", "retry-10"),
		"refusals-retryable": join(
			at(`"A" is refused with "idempotency_key_required"`, "refuse-02", "refuse-03"),
			at(`"A" is refused with "parse_error"`, "refuse-07"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
		),
		// Real time passing needs nothing but the wire and the probe.
		"finished-key-expires": at(dispatchedOnce, "retry-01-later"),
		"claim-lapses":         at(dispatchedOnce, "twins-03-later"),
		// The shapes of keys and arguments, and a tool's error result,
		// need nothing but the wire and the probe.
		"key-case-folded":       at(`the probe saw "$op2" dispatched 1 time`, "key-01"),
		"key-truncated":         at(`the probe saw "$op2" dispatched 1 time`, "key-02"),
		"fingerprint-shallow":   at(`"A" is refused with "idempotency_key_reused"`, "args-02"),
		"fingerprint-raw-bytes": at(`"A" gets a result`, "args-01", "args-03"),
		"fingerprint-sorted-lists": join(
			at(`"A" is refused with "idempotency_key_reused"`, "args-05"),
			at(`the probe saw "$op1" dispatched 2 times`, "args-05-unkeyed"),
		),
		"tool-error-not-stored": at(dispatchedOnce, "upstream-02"),
		"large-args-unstored":   at(dispatchedOnce, "args-04"),
		// Issue 26: the harness drops the connection once the probe saw the
		// tool run; the retry's replay is sent as a first answer.
		"replay-unmarked-undelivered": at(`the last answer of "A" is marked a replay`, wired("lost-01")...),
		// Issue 26: the late dispatch of a replay fails the count of every
		// scenario here whose retry surely replays, read again at the end.
		"replay-revalidates": at(dispatchedOnce, append(wired("lost-01"), "args-01", "args-03", "args-04",
			"retry-01", "retry-01-later", "retry-03", "retry-06", "retry-07", "retry-09", "retry-10", "twins-03-later", "upstream-02")...),
	},
	// Only what the identity provider adds: the other switches are the
	// wire mode's. The run's own wire is the one negotiation picks, the
	// stateless 2026-07-28 here, so the scenarios that leave it to the run
	// see the stateless-only bugs too.
	ModeWirePrincipals: {
		"principal-unbound":             at(`the probe saw "$op1" dispatched 2 times`, wired("iga-01")...),
		"principal-unbound-stateless":   at(`the probe saw "$op1" dispatched 2 times`, "iga-01", "iga-01-stateless"),
		"principal-fail-open-stateless": at(neverDispatched, "iga-05", "iga-05-stateless"),
		"large-args-unbound":            at(`the probe saw "$op1" dispatched 2 times`, "iga-06"),
		"principal-per-session":         at(`the last answer of "alice" is its own operation or a refusal, never the first answer of "alice"`, "iga-07", "iga-07-keyed"),
	},
	ModeWireRefuse: {
		"replay-unmarked-undelivered": at(`the last answer of "A" is marked a replay`, wired("lost-01")...),
		"replay-revalidates": at(dispatchedOnce, append(wired("lost-01"), "args-01", "args-04",
			"retry-01", "retry-01-later", "retry-06", "retry-07", "retry-09", "retry-10", "twins-03-later", "upstream-02")...),
		"no-idempotency": join(
			at(dispatchedOnce, "cancel-01", "cancel-02", "retry-01", "retry-01-later", "retry-06", "retry-07", "retry-09", "retry-10", "twins-02-keyed", "twins-03-later"),
			at(dispatchedOnce, wired("lost-01", "twins-01")...),
			at(`no operation was dispatched twice`, "ledger-02"),
			at(neverDispatched, "refuse-02", "refuse-03", "refuse-10"),
			at(`the probe saw "$op2" dispatched 0 times`, "retry-02"),
		),
		"cancel-forgets":          at(dispatchedOnce, append(wired("lost-01"), "cancel-01", "cancel-02")...),
		"cancel-reaches-upstream": at(`"A" gets the tool's own result`, "cancel-01", "cancel-02"),
		"refusals-retryable": join(
			at(`"A" is refused with "idempotency_key_required"`, "refuse-02", "refuse-03", "refuse-10"),
			at(`"A" is refused with "parse_error"`, "refuse-07"),
			at(`"A" is refused with "idempotency_key_reused"`, "retry-02"),
			at(`every operation of the workload got one outcome`, "ledger-02"),
		),
		"finished-key-expires": at(dispatchedOnce, "retry-01-later"),
		"claim-lapses":         at(dispatchedOnce, "twins-03-later"),
		// The shapes of keys and arguments, and a tool's error result,
		// need nothing but the wire and the probe.
		"key-case-folded":          at(`the probe saw "$op2" dispatched 1 time`, "key-01"),
		"key-truncated":            at(`the probe saw "$op2" dispatched 1 time`, "key-02"),
		"fingerprint-shallow":      at(`"A" is refused with "idempotency_key_reused"`, "args-02"),
		"fingerprint-raw-bytes":    at(`"A" gets a result`, "args-01"),
		"fingerprint-sorted-lists": at(`"A" is refused with "idempotency_key_reused"`, "args-05"),
		"tool-error-not-stored":    at(dispatchedOnce, "upstream-02"),
		"large-args-unstored":      at(dispatchedOnce, "args-04"),
	},
}

// ExternalCollateral: scenarios that may also fail in a mode, depending on
// the workload's seed.
var ExternalCollateral = map[string]map[string][]string{
	ModeWire: {
		"random-unkeyed-key": {"ledger-02"},
		// Twins whose duplicates were all answered in progress saw no replay.
		"fresh-receipt-on-replay": append(wired("twins-01", "twins-02"), "twins-02-keyed"),
		"replay-drops-structured": append(wired("twins-01", "twins-02"), "twins-02-keyed"),
		// As in the full self-test: the flag, not the harm these name.
		"refusals-retryable": {"refuse-06", "refuse-08", "refuse-09"},
		// As in the full self-test: twins all answered in progress saw no
		// replay, the workload's seed decides whether any retry replays, and
		// the cancel scenarios' by the order the cancellation and the
		// probe's release reach the gateway.
		"replay-revalidates": append(wired("twins-02", "twins-04"), "cancel-01", "cancel-02", "ledger-02", "twins-02-keyed", "twins-04-keyed"),
	},
	ModeWireRefuse: {
		"refusals-retryable": {"refuse-06", "refuse-08", "refuse-09"},
		"replay-revalidates": {"cancel-01", "cancel-02", "ledger-02", "twins-02-keyed", "twins-04-keyed"},
	},
}
