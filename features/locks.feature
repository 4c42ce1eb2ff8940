@locks
Feature: A stalled lock holder is fenced
  A lock older than the stale threshold may be taken over. Every later write of
  the old holder is conditional on its fence, so it writes nothing; release is
  pinned to the owner; a lock timeout is a retryable in-progress answer.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits
    And the gateway clock is frozen 1ms before a window boundary

  @lock-01 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario: A holder paused between the fence read and the claim writes nothing after a takeover
    Requirement: A takeover forced after the ownership read and before the claim makes the stale holder write nothing; one dispatch in all.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: SELECT ... FOR UPDATE is ignored by SQLite; "Needs ... a test that takes the lock over after the ownership read")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "fence.read" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "fence.read"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} without a key
    Then "B" gets a result
    When the pause at "fence.read" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @lock-02 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario: A holder paused before it reads its fence writes nothing after a takeover
    Requirement: A takeover forced before the claim makes the holder fail with fence-lost and write nothing; it answers in-progress.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (follow-up: "test :1403 forces the delete before the claim ... asserts ... IdempotencyFenceLostError, and that no mint row was written")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "lock.acquired" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "lock.acquired"
    And the gateway clock advances past the stale-lock threshold
    And a pause is armed at "fence.read" for "write"
    And "B" starts calling "write" with {"token":"$op1"} without a key
    And "B" waits at "fence.read"
    And the pause at "lock.acquired" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    When the pause at "fence.read" is released
    Then "B" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @lock-03 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario: The fenced-out holder's release does not free the new holder's lock
    Requirement: Release is pinned to the owner's record id, so a stalled holder cannot delete a newer lock.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "its release isn't pinned to the holder ... A's finally can also delete the lock B ... currently holds")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "fence.read" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "fence.read"
    And the gateway clock advances past the stale-lock threshold
    And a pause is armed at "lock.acquired" for "write"
    And "B" starts calling "write" with {"token":"$op1"} without a key
    And "B" waits at "lock.acquired"
    And the pause at "fence.read" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    When "C" calls "write" with {"token":"$op1"} without a key
    Then "C" is refused with retryable "idempotency_in_progress"
    When the pause at "lock.acquired" is released
    Then "B" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @lock-04 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario: A lock timeout is answered as retryable in-progress
    Requirement: A lock timeout (SQLite busy, PostgreSQL 55P03/40001) becomes the retryable idempotency_in_progress, not an internal error.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "If SQLite's busy wait expires on that UPDATE, OperationalError ... surfaces as internal_error")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "claim.held" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "claim.held"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} without a key
    Then "B" is refused with retryable "idempotency_in_progress"
    When the pause at "claim.held" is released
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
