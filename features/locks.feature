@locks
Feature: A stalled lock holder is fenced
  A lock older than the stale threshold may be taken over, and so may a keyed
  reservation never charged. Every later write of the old holder is
  conditional on its fence (keyed: on still owning the reservation), so it
  writes nothing; release is pinned to the owner; a lock timeout is a
  retryable in-progress answer.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits
    And the gateway clock is frozen 1ms before a window boundary

  @must @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario Outline: A holder paused <where> writes nothing after a takeover
    Requirement: A takeover forced after the holder's ownership read and before its claim (unkeyed: between its fence read and the claim; keyed: between its reservation, never charged, and its charge) makes the stale holder write nothing; one dispatch in all.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: SELECT ... FOR UPDATE is ignored by SQLite; "Needs ... a test that takes the lock over after the ownership read"); docs/wire.md (An operation in progress: "the old owner, if it resumes, finds the reservation no longer its own and writes nothing")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "<pause>" for "write"
    When "A" starts calling "write" with {"token":"$op1"} <keying>
    And "A" waits at "<pause>"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} <keying>
    Then "B" gets a result
    When the pause at "<pause>" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lock-01 @unkeyed-derived
    Examples: unkeyed, between the fence read and the claim
      | where                                | pause      | keying        |
      | between the fence read and the claim | fence.read | without a key |

    @lock-01-keyed
    Examples: keyed, between the reservation and its charge
      | where                                  | pause        | keying          |
      | between its reservation and its charge | reserve.done | using key "$k1" |

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

  @must @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario Outline: The fenced-out holder's release does not free the new holder's <what>
    Requirement: Release is pinned to the owner's record id, so a stalled holder cannot delete a newer lock (unkeyed), nor, fenced out of a reservation taken over (keyed), drop the new holder's: a third caller is still answered in progress.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "its release isn't pinned to the holder ... A's finally can also delete the lock B ... currently holds"); docs/wire.md (An operation in progress: "the old owner, if it resumes, finds the reservation no longer its own and writes nothing")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "<pause>" for "write"
    When "A" starts calling "write" with {"token":"$op1"} <keying>
    And "A" waits at "<pause>"
    And the gateway clock advances past the stale-lock threshold
    And a pause is armed at "<then>" for "write"
    And "B" starts calling "write" with {"token":"$op1"} <keying>
    And "B" waits at "<then>"
    And the pause at "<pause>" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    When "C" calls "write" with {"token":"$op1"} <keying>
    Then "C" is refused with retryable "idempotency_in_progress"
    When the pause at "<then>" is released
    Then "B" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

    @lock-03 @unkeyed-derived
    Examples: unkeyed, the lock
      | what | pause      | then          | keying        |
      | lock | fence.read | lock.acquired | without a key |

    @lock-03-keyed
    Examples: keyed, the reservation taken over
      | what        | pause        | then            | keying          |
      | reservation | reserve.done | dispatch.before | using key "$k1" |

  @lock-05 @must @needs-upstream @needs-clock @needs-faults @needs-settings
  Scenario: A retry that read a stale reservation as uncharged does not take it over once the holder has charged
    Requirement: A keyed takeover's write re-checks what its read found: a holder that charged after the retry read its reservation as stale and uncharged keeps it, the retry is answered in progress, and the operation is dispatched and debited once.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Another worker can take over the lock between the read and the commit ... Needs ... a test that takes the lock over after the ownership read"); docs/wire.md (An operation in progress: "A charged reservation may have reached its tool, so it is never run again")
    Given the stale-lock threshold is 10 seconds
    And a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "reserve.done"
    And the gateway clock advances past the stale-lock threshold
    And a pause is armed at "takeover.read" for "write"
    And "B" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "B" waits at "takeover.read"
    And a pause is armed at "dispatch.before" for "write"
    And the pause at "reserve.done" is released
    And "A" waits at "dispatch.before"
    When the pause at "takeover.read" is released
    Then "B" is refused with retryable "idempotency_in_progress"
    When the pause at "dispatch.before" is released
    Then "A" gets a result
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
