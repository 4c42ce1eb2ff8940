@lost
Feature: A lost response is not a lost operation
  The connection drops after the gateway dispatched. The client cannot know
  whether the tool ran; its retry must get the original receipt and no second debit.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @must @needs-upstream
  Scenario Outline: The client drops the connection while the tool runs<on>
    Requirement: A retry after a lost response gets the original receipt, marked a replay; the tool was dispatched once and charged once, on every MCP version the gateway serves and whichever of the gateway's processes the retry reaches.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Problem: "A retry after a lost response therefore dispatched and charged a second time"; "The lock is an idempotency row in the DB, not process memory, so it holds across workers"); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And the probe stalls "$op1"
    When "A" calls "write" with {"token":"$op1"} using key "$k1" and drops the connection once the tool runs
    And the probe releases "$op1"
    And "A" retries its last call <via> until it is not in progress
    Then "A" gets a result
    And the last answer of "A" is marked a replay
    And the last answer of "A" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lost-01
    Examples: the run's wire
      | on | protocol                   | via                    |
      |    | the run's protocol version | with a new JSON-RPC id |

    @lost-01-stateless
    Examples: stateless
      | on                      | protocol            | via                    |
      | , on the stateless wire | protocol 2026-07-28 | with a new JSON-RPC id |

    @lost-01-session
    Examples: session
      | on                    | protocol            | via                    |
      | , on the session wire | protocol 2025-11-25 | with a new JSON-RPC id |

    @lost-01-two-urls @needs-two-urls
    Examples: the retry on the other gateway URL
      | on                                     | protocol                   | via                                             |
      | , and retries on the other gateway URL | the run's protocol version | with a new JSON-RPC id on the other gateway URL |

  @must @needs-upstream @needs-faults
  Scenario Outline: The gateway drops the response after dispatching <a> call<on>
    Requirement: The connection is dropped after the gateway dispatched; the retry gets the original receipt, marked a replay, and no second debit, keyed or unkeyed, on every MCP version the gateway serves.
    Source: issue "Conformance harness" (lost response); review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Problem: "A retry after a lost response therefore dispatched and charged a second time"); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And the gateway will drop the response after dispatching "write"
    When "A" calls "write" with {"token":"$op1"} <keying>
    Then "A" lost the connection without an answer
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" is marked a replay
    And the last answer of "A" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lost-02 @unkeyed-derived
    Examples: unkeyed
      | a          | keying        | on | protocol                   |
      | an unkeyed | without a key |    | the run's protocol version |

    @lost-02-keyed
    Examples: keyed
      | a       | keying          | on | protocol                   |
      | a keyed | using key "$k1" |    | the run's protocol version |

    @lost-02-stateless @unkeyed-derived
    Examples: stateless
      | a          | keying        | on                      | protocol            |
      | an unkeyed | without a key | , on the stateless wire | protocol 2026-07-28 |

    @lost-02-session @unkeyed-derived
    Examples: session
      | a          | keying        | on                    | protocol            |
      | an unkeyed | without a key | , on the session wire | protocol 2025-11-25 |

  @should @needs-upstream @needs-faults
  Scenario Outline: A response that fails after dispatch is replayed on retry<on>
    Requirement: The tool ran and its outcome is stored; the client got an error; the retry replays the stored outcome, marked a replay, on every MCP version the gateway serves.
    Source: issue "Reference gateway" (fault points: fail after dispatch before the response); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And a failure is armed at "dispatch.after" for "write"
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with retryable "response_failed"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" is marked a replay
    And the last answer of "A" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lost-03
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @lost-03-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @lost-03-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |

  @lost-04 @must @needs-upstream @needs-clock @needs-faults
  Scenario: A holder charged and stalled before its dispatch is not run again once it looks stale
    Requirement: Past the stale-lock threshold, a retry of an operation whose holder was debited but has not dispatched is never run: while the holder is silent (it waits at a pause, writing nothing) it is answered outcome_unknown, not retryable, naming the debit (the holder may have been killed after its tool ran, so in-progress would have the client retry for ever); a gateway that renews a live holder's lease while it waits answers in progress, as long as its control API does not list the operation as uncertain; once the holder resumes and finishes, the retry replays its outcome: one dispatch and one debit in all.
    Source: issue "Benchmarks and reliability" (crash scenarios: "no second dispatch, no second debit, or an honest in-progress answer until it can decide"); issue 25 (a charged operation killed before its outcome was stored stayed in progress for ever); docs/wire.md (An operation in progress)
    Given a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused as the age of the operation "A" holds implies
    When the pause at "dispatch.before" is released
    Then "A" gets a result
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the first answer of "A"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @lost-05 @must @needs-upstream @needs-fixtures @needs-clock @needs-faults
  Scenario: A stalled reservation of a removed tool is never run by a retry
    Requirement: A removed tool may still serve the stored outcome of a call made before its removal, but never starts work: a retry of a reservation stalled past the stale-lock threshold is refused with unknown_tool, and neither the retry nor the stalled holder dispatches or charges anything.
    Source: issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 1: "a removed tool re-runs a stale reservation with no IGA check and no charge")
    Given a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "reserve.done"
    And the tool "write" is removed
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused with "unknown_tool"
    When the pause at "reserve.done" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @must @needs-upstream @needs-clock @needs-faults
  Scenario Outline: A <call> stalled before its charge past its permit's life is answered retryable
    Requirement: A call that stalled after its reservation until the auto permit minted with it expired ran nothing: it is answered retryable, never permit_expired (naming a permit the client never saw), and a retry runs the operation once; keyed or unkeyed, the client never saw that permit.
    Source: issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 5: "a stalled unkeyed call is answered permit_expired, not retryable"); docs/wire.md (An operation in progress: "A call that stalled between its reservation and its charge until the auto permit minted with it expired ran nothing")
    Given a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} <keying>
    And "A" waits at "reserve.done"
    And the gateway clock advances past the auto-permit life
    And the pause at "reserve.done" is released
    Then "A" is refused with retryable "dispatch_failed"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lost-06 @unkeyed-derived
    Examples: unkeyed
      | call | keying        |
      | call | without a key |

    @lost-06-keyed
    Examples: keyed
      | call       | keying          |
      | keyed call | using key "$k1" |

  @lost-07 @must @needs-upstream @needs-fixtures @needs-faults
  Scenario: A removed tool starts no work, not even for the retry of a refunded call
    Requirement: A removed tool may only serve a stored outcome: the retry of a call that failed before dispatch and was refunded, and a call under a new key, are refused with unknown_tool; neither dispatches nor charges anything.
    Source: issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 1: "The removed-tool path may serve a stored outcome, never start work")
    Given a failure is armed at "dispatch.before" for "write"
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with retryable "dispatch_failed"
    When the tool "write" is removed
    And "A" retries its last call with a new JSON-RPC id
    Then "A" is refused with "unknown_tool"
    When "A" calls "write" with {"token":"$op2"} using key "$k2"
    Then "A" is refused with "unknown_tool"
    And the probe saw "$op1" dispatched 0 times
    And the probe saw "$op2" dispatched 0 times
    And the ledger has 1 debit and 1 refund
