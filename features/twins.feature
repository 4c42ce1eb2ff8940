@twins
Feature: Concurrent identical calls dispatch once
  Two identical calls arriving at once must not both miss the lookup and both
  dispatch: the key is reserved atomically before anything is dispatched, in
  the database, so it holds whichever process and MCP wire a twin arrives on,
  and however long the first call runs.

  Background:
    Given a wallet with 1000 credits and an API key
    And an upstream tool "write" priced 3 credits

  @must @needs-upstream
  Scenario Outline: Keyed twins released together by a barrier dispatch once<on>
    Requirement: N concurrent identical calls: exactly one dispatch, one debit; every other answer is the same receipt or a retryable in-progress, on every MCP version the gateway serves.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (finding F1: "Concurrent idempotent enqueues can create duplicate runs"); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    When 64 clients call "write" with {"token":"$op1"} using key "$k1" at once, the first dispatch held
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @twins-01
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @twins-01-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @twins-01-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |

  @must @needs-upstream
  Scenario Outline: <Kind> twins released together by a barrier dispatch once<on>
    Requirement: A concurrent duplicate, unkeyed or keyed, gets the retryable idempotency_in_progress or the same receipt; one dispatch, one debit, on every MCP version the gateway serves.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "A concurrent duplicate gets the retryable -32005 idempotency_in_progress"); review of PR 917 "Duplicate prevention failed for simultaneous requests" (finding F1); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    When 64 clients call "write" with {"token":"$op1"} <keying> at once
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @twins-02 @unkeyed-derived
    Examples: unkeyed
      | Kind    | keying        | on | protocol                   |
      | Unkeyed | without a key |    | the run's protocol version |

    @twins-02-keyed
    Examples: keyed
      | Kind  | keying          | on                              | protocol                   |
      | Keyed | using key "$k1" | , their first dispatch not held | the run's protocol version |

    @twins-02-stateless @unkeyed-derived
    Examples: stateless
      | Kind    | keying        | on                      | protocol            |
      | Unkeyed | without a key | , on the stateless wire | protocol 2026-07-28 |

    @twins-02-session @unkeyed-derived
    Examples: session
      | Kind    | keying        | on                    | protocol            |
      | Unkeyed | without a key | , on the session wire | protocol 2025-11-25 |

  @must @needs-upstream @needs-faults
  Scenario Outline: A keyed twin arriving while the first call is about to dispatch is told to wait<on>
    Requirement: The key is reserved before the work is dispatched; a duplicate while the first is running gets idempotency_in_progress, on every MCP version the gateway serves.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (finding F1: lookup closed before the enqueue, record inserted after); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused with retryable "idempotency_in_progress"
    When the pause at "dispatch.before" is released
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @twins-03
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @twins-03-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @twins-03-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |

  @twins-03-later @must @needs-upstream
  Scenario: A keyed twin arriving while the first call's tool has run for seconds is told to wait
    Requirement: However long a keyed operation's dispatch runs (here over 2 s of real time, held at the upstream), a duplicate is answered retryable idempotency_in_progress and never dispatched again; once the first call finishes, the duplicate's retry replays its result: one dispatch, one debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" ("The lock lease can be stolen while its holder is still working"); docs/wire.md (An operation in progress: a charged reservation "is never run again. While its owner may still be running it, a retry is answered in progress")
    Given the probe stalls "$op1"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the probe sees "$op1" dispatched
    And 2 seconds pass
    And "B" calls "write" with {"token":"$op1"} using key "$k1" while the probe holds "$op1"
    And the probe releases "$op1"
    Then "B" is refused with retryable "idempotency_in_progress"
    And "A" gets a result
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the first answer of "A"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @must @needs-upstream @needs-two-urls
  Scenario Outline: Twins split across two gateway processes dispatch once<on>
    Requirement: Slot choice and mint (unkeyed calls) and a key's reservation (keyed calls) are decided in the database, not in a process's memory, so they hold across worker processes: one dispatch, one debit, on every MCP version the gateway serves.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" ("The lock is an idempotency row in the DB, not process memory, so it holds across workers"); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    When 64 clients split across every gateway URL call "write" with {"token":"$op1"} <keying> at once
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @twins-04 @unkeyed-derived
    Examples: unkeyed
      | keying        | on | protocol                   |
      | without a key |    | the run's protocol version |

    @twins-04-keyed
    Examples: keyed
      | keying          | on                | protocol                   |
      | using key "$k1" | , for keyed calls | the run's protocol version |

    @twins-04-stateless @unkeyed-derived
    Examples: stateless
      | keying        | on                      | protocol            |
      | without a key | , on the stateless wire | protocol 2026-07-28 |

    @twins-04-session @unkeyed-derived
    Examples: session
      | keying        | on                    | protocol            |
      | without a key | , on the session wire | protocol 2025-11-25 |
