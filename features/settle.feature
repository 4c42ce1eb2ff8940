@settle
Feature: Every operation settles
  A charged operation whose holder went silent past the stale-lock threshold
  is uncertain until an operator settles it. The settlement decides it for
  good: every later call is answered as the settlement says, and the holder,
  if it was only stalled and wakes, neither runs the tool nor writes over it.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @settle-01 @must @needs-upstream @needs-clock @needs-faults
  Scenario: An uncertain operation settled refunded stays refunded when its stalled holder wakes, and a retry runs it afresh
    Requirement: An operation charged and then silent past the stale-lock threshold is answered outcome_unknown and listed uncertain; settled refunded, its debit is given back once: the holder that wakes after the settlement runs nothing, charges and refunds nothing, and is answered retryable idempotency_in_progress; the next retry runs the operation afresh under a new debit.
    Source: issue 25 (every operation settles); docs/control-api.md (Operations); docs/wire.md (An operation in progress)
    Given a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused as the age of the operation "A" holds implies
    And the operator lists the operation of "B" as uncertain
    When the operator settles the operation of "B" as refunded
    And the pause at "dispatch.before" is released
    Then "A" is refused with retryable "idempotency_in_progress"
    And the ledger has 1 debit and 1 refund
    When "B" retries its last call with a new JSON-RPC id
    Then "B" gets a result with a new receipt
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 2 debits and 1 refund

  @settle-02 @must @needs-upstream @needs-clock @needs-faults
  Scenario: An uncertain operation settled completed replays the settled result, even to its stalled holder when it wakes
    Requirement: Settled completed with a result, an uncertain operation is decided: every later call replays that result, marked a replay, under the receipt of its debit, which stands unrefunded; the holder that wakes after the settlement does not run the tool and gets the same replay, never writing its own outcome over the settlement.
    Source: issue 25 (every operation settles); docs/control-api.md (Operations); docs/wire.md (An operation in progress)
    Given a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused as the age of the operation "A" holds implies
    And the operator lists the operation of "B" as uncertain
    When the operator settles the operation of "B" as completed with {"content":[{"type":"text","text":"settled by the operator"}]}
    And "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the settled result
    When the pause at "dispatch.before" is released
    Then the last answer of "A" replays the settled result
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the settled result
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 1 debit and 0 refunds
