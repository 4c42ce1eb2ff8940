@crash
Feature: A crashed gateway process loses no operation
  A gateway process is killed at a fault point, the way kill -9 kills it,
  while it serves a call: nothing after the point is written or answered.
  Whatever restarts the gateway, the client's retries reach another process
  of the same store and end in a definitive answer once the stale-lock
  threshold has passed; the ledger balances (one debit for an operation that
  ran, a refund for one that never did), and every later retry replays the
  decided operation.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @crash-01 @must @needs-upstream @needs-clock @needs-faults @needs-two-urls
  Scenario: A process killed after the reservation leaves an operation a retry on another process runs once
    Requirement: A reservation whose process was killed before its charge ran nothing: once the stale-lock threshold has passed, a retry through another process of the gateway takes it over and runs it, with one dispatch and one debit, instead of answering in progress for ever; every later retry replays that result, marked a replay.
    Source: issue 25 (crash scenarios at level full: a crash after the reservation); docs/wire.md (An operation in progress: "a reservation never charged is taken over")
    Given client "B" talks to gateway URL 2
    And a crash is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the gateway process serving "A" crashes at "reserve.done"
    And the gateway process serving "A" serves again
    Then "A" lost the connection without an answer
    When the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    And "B" retries its last call with a new JSON-RPC id until it is not in progress
    Then "B" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" is marked a replay
    And the last answer of "B" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time

  @crash-02 @must @needs-upstream @needs-clock @needs-faults @needs-two-urls
  Scenario: A process killed after the charge, before the dispatch, leaves an uncertain operation that a refund settles
    Requirement: An operation whose process was killed after its charge and before its dispatch is not run again by a retry: once the stale-lock threshold has passed, a retry through another process is answered outcome_unknown, not retryable, naming the debit, which stays charged until an operator settles it (so every retry until then is answered the same), and the control API lists the operation uncertain; settled refunded, its debit is given back once, the next retry runs it afresh under a new debit, and every retry after replays that run.
    Source: issue 25 (crash scenarios at level full: a crash after the charge, before the dispatch; every operation settles); docs/wire.md (An operation in progress); docs/control-api.md (Operations)
    Given client "B" talks to gateway URL 2
    And a crash is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the gateway process serving "A" crashes at "dispatch.before"
    And the gateway process serving "A" serves again
    Then "A" lost the connection without an answer
    When the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused as the age of the operation "A" holds implies
    And the ledger has 1 debit and 0 refunds
    When "B" retries its last call with a new JSON-RPC id
    Then "B" is refused as the age of the operation "A" holds implies
    And the operator lists the operation of "B" as uncertain
    When the operator settles the operation of "B" as refunded
    Then the ledger has 1 debit and 1 refund
    When "B" retries its last call with a new JSON-RPC id
    Then "B" gets a result with a new receipt
    And the probe saw "$op1" dispatched 1 time
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" is marked a replay
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 2 debits and 1 refund

  @crash-03 @must @needs-upstream @needs-faults @needs-two-urls
  Scenario: A process killed after the dispatch, before its answer, leaves an outcome a retry on another process replays
    Requirement: An operation whose process was killed after its tool ran and its outcome was stored, before the answer went out, is decided: a retry through another process replays the stored outcome at once, marked a replay, under the receipt of its one debit; the tool is not run again and nothing is refunded.
    Source: issue 25 (crash scenarios at level full: a crash after the dispatch); issue "Benchmarks and reliability" (crash scenarios: "no second dispatch, no second debit"); docs/wire.md (Results; An operation in progress)
    Given client "B" talks to gateway URL 2
    And a crash is armed at "dispatch.after" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the gateway process serving "A" crashes at "dispatch.after"
    And the gateway process serving "A" serves again
    Then "A" lost the connection without an answer
    When "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" gets a result
    And the last answer of "B" is marked a replay
    And the last answer of "B" carries the receipt the ledger debited
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
