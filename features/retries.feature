@retries
Feature: Retries of tools/call are one operation
  A retry after a lost response arrives with a fresh JSON-RPC id (MCP issue 3394).
  The gateway must dispatch the tool at most once and charge the wallet exactly once.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @must @needs-upstream
  Scenario Outline: A keyed retry with a new JSON-RPC id replays the whole result<on>
    Requirement: Same key and fingerprint: the stored outcome is replayed whole (same receipt, same content, structuredContent, isError), no dispatch, no debit, whichever of the gateway's processes the retry reaches.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Problem; live retest; "The lock is an idempotency row in the DB, not process memory, so it holds across workers"); IETF draft-ietf-httpapi-idempotency-key-header section 2.6
    When "A" calls "write" with {"token":"$op1","note":"hello"} using key "$k1"
    Then "A" gets a result
    When "A" retries its last call <via>
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
    And the wallet balance changed by -3

    @retry-01
    Examples: the same gateway URL
      | on | via                    |
      |    | with a new JSON-RPC id |

    @retry-01-two-urls @needs-two-urls
    Examples: the other gateway URL
      | on                         | via                                             |
      | , on the other gateway URL | with a new JSON-RPC id on the other gateway URL |

  @retry-01-later @must @needs-upstream
  Scenario: A keyed retry seconds after the answer still replays
    Requirement: A finished keyed operation is kept for longer than a retry takes to come: the same key and arguments 2 s of real time after the answer still get the stored outcome whole (same receipt, same content), no dispatch, no debit.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (summary: "the enqueue idempotency contract is not safe under concurrency or TTL expiry"); IETF draft-ietf-httpapi-idempotency-key-header section 2.6
    When "A" calls "write" with {"token":"$op1","note":"hello"} using key "$k1"
    Then "A" gets a result
    When 2 seconds pass
    And "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @retry-02 @must @needs-upstream
  Scenario: The same key with other arguments is refused, nothing dispatched or charged
    Requirement: Same key, other arguments: idempotency_key_reused; nothing dispatched or charged.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (idempotency_key_payload_mismatch); IETF Idempotency-Key draft section 2.7
    When "A" calls "write" with {"token":"$op1","note":"one"} using key "$k1"
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op2","note":"two"} using key "$k1"
    Then "A" is refused with "idempotency_key_reused"
    And the probe saw "$op2" dispatched 0 times
    And the probe saw 1 dispatch in all
    And the ledger has 1 debit and 0 refunds

  @must @unkeyed-derived @needs-upstream
  Scenario Outline: An unkeyed retry inside the window replays the original receipt<on>
    Requirement: Unkeyed mutating calls get a derived key over wallet, API key, principal, tool and canonical arguments; a retry with a new JSON-RPC id replays the original receipt, no second dispatch, one debit, whichever of the gateway's processes the retry reaches. No random key exists anywhere.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Problem: mcp-auto-<uuid4> on every attempt; Design; "The lock is an idempotency row in the DB, not process memory, so it holds across workers")
    When "A" calls "write" with {"token":"$op1","note":"hello"} without a key
    Then "A" gets a result
    When "A" retries its last call <via>
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @retry-03
    Examples: the same gateway URL
      | on | via                    |
      |    | with a new JSON-RPC id |

    @retry-03-two-urls @needs-two-urls
    Examples: the other gateway URL
      | on                         | via                                             |
      | , on the other gateway URL | with a new JSON-RPC id on the other gateway URL |

  @retry-04 @must @unkeyed-derived @needs-upstream
  Scenario: Unkeyed calls with other arguments are separate operations
    Requirement: Different arguments dispatch: a new receipt and a second debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (live retest: "Different arguments (id 12): a new receipt and +1 debit")
    When "A" calls "write" with {"token":"$op1","note":"one"} without a key
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op2","note":"two"} without a key
    Then "A" gets a result with a new receipt
    And the probe saw "$op1" dispatched 1 time
    And the probe saw "$op2" dispatched 1 time
    And the ledger has 2 debits and 0 refunds
    And the wallet balance changed by -6

  @retry-05 @must @unkeyed-derived @needs-upstream @needs-clock
  Scenario: A retry past the effective window is a new operation
    Requirement: Effective window = min(MCP_UNKEYED_RETRY_WINDOW_SECONDS, auto-permit TTL); a later identical retry runs and bills again, and no replay is promised past the permit's life.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (request-keys.md promises 300 s but the mint caps at the 120 s permit TTL)
    Given the gateway clock is frozen at a window boundary
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" gets a result
    When the gateway clock advances past the effective window
    And "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result with a new receipt
    And the probe saw "$op1" dispatched 2 times
    And the ledger has 2 debits and 0 refunds

  @must @needs-upstream
  Scenario Outline: A keyed retry replays on the <wire> wire
    Requirement: The replay contract holds on every protocol version the gateway serves.
    Source: MCP specification 2025-11-25 (Streamable HTTP, Mcp-Session-Id) and 2026-07-28 (stateless requests)
    Given "A" speaks protocol <version>
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its first answer
    And the last answer of "A" is a final result as its protocol version writes one
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @retry-06
    Examples: session
      | wire    | version    |
      | session | 2025-11-25 |

    @retry-07
    Examples: stateless
      | wire      | version    |
      | stateless | 2026-07-28 |

  @retry-08 @should @needs-upstream @needs-fixtures @needs-clock @needs-faults
  Scenario: A retry after its explicit permit expired gets the stored outcome
    Requirement: An explicit permit authorises new work; replaying an operation it already ran and charged is not new work, so a retry after a lost response gets the stored outcome even once the permit has expired, with no second dispatch or debit.
    Source: issue "Benchmarks and reliability" (lost responses: "no second dispatch, no second debit ... nothing lost"); review finding of 2026-12-02 ("an expired explicit permit blocks the replay of its own stored outcome")
    Given an explicit permit "P1" for "write" with a budget of 3 credits, valid for 60s
    And the gateway will drop the response after dispatching "write"
    When "A" calls "write" with {"token":"$op1"} under permit "P1"
    Then "A" lost the connection without an answer
    When the gateway clock advances 61s
    And "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @must @needs-upstream
  Scenario Outline: A replay on the other wire than its first call is valid on the wire it is replayed on
    Requirement: Every tools/call answer, first call and replay, carries what its protocol version's schema requires (resultType "complete" on 2026-07-28, no resultType on 2025-11-25); an outcome stored by a call on one version and replayed on the other is valid for the version it is replayed on.
    Source: MCP specification 2026-07-28 (CallToolResult resultType) and 2025-11-25 (CallToolResult); docs/wire.md (Results); adversarial review of the reference gateway (results valid on both wires)
    Given "A" speaks protocol <first>
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    And the last answer of "A" is a final result as its protocol version writes one
    Given "A" speaks protocol <then>
    When "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its first answer
    And the last answer of "A" is a final result as its protocol version writes one
    And the probe saw "$op1" dispatched 1 time

    @retry-09
    Examples: session, then stateless
      | first      | then       |
      | 2025-11-25 | 2026-07-28 |

    @retry-10
    Examples: stateless, then session
      | first      | then       |
      | 2026-07-28 | 2025-11-25 |
