@twins
Feature: Concurrent identical calls dispatch once
  Two identical calls arriving at once must not both miss the lookup and both
  dispatch: the key is reserved atomically before anything is dispatched.

  Background:
    Given a wallet with 1000 credits and an API key
    And an upstream tool "write" priced 3 credits

  @twins-01 @must @needs-upstream
  Scenario: Keyed twins released together by a barrier dispatch once
    Requirement: N concurrent identical calls: exactly one dispatch, one debit; every other answer is the same receipt or a retryable in-progress.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (finding F1: "Concurrent idempotent enqueues can create duplicate runs")
    When 64 clients call "write" with {"token":"$op1"} using key "$k1" at once, the first dispatch held
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @twins-02 @must @unkeyed-derived @needs-upstream
  Scenario: Unkeyed twins released together by a barrier dispatch once
    Requirement: A concurrent unkeyed duplicate gets the retryable idempotency_in_progress or the same receipt; one dispatch, one debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "A concurrent duplicate gets the retryable -32005 idempotency_in_progress")
    When 64 clients call "write" with {"token":"$op1"} without a key at once
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @twins-03 @must @needs-upstream @needs-faults
  Scenario: A keyed twin arriving while the first call is about to dispatch is told to wait
    Requirement: The key is reserved before the work is dispatched; a duplicate while the first is running gets idempotency_in_progress.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (finding F1: lookup closed before the enqueue, record inserted after)
    Given a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused with retryable "idempotency_in_progress"
    When the pause at "dispatch.before" is released
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @twins-04 @must @unkeyed-derived @needs-upstream @needs-two-urls
  Scenario: Twins split across two gateway processes dispatch once
    Requirement: Slot choice and mint run under a lock row in the database, so it holds across worker processes.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" ("The lock is an idempotency row in the DB, not process memory, so it holds across workers")
    When 64 clients split across every gateway URL call "write" with {"token":"$op1"} without a key at once
    Then exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
