@windows
Feature: Window boundaries do not split one operation
  Derived keys are bucketed by floor(now / window). A fixed floor bucket alone
  gives a retry 1 ms past the boundary a new key, and it dispatches again.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @window-01 @must @unkeyed-derived @needs-upstream @needs-clock
  Scenario: A retry 1 ms after a bucket boundary replays
    Requirement: Before minting, the previous bucket's key is looked up and joined, so a retry 1 ms after the boundary replays instead of dispatching again.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Bucket boundary breaks the SEL-498 acceptance")
    Given the gateway clock is frozen 1ms before a window boundary
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" gets a result
    When the gateway clock advances 2ms
    And "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @window-02 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults
  Scenario: Twins straddling a bucket boundary dispatch once
    Requirement: Two concurrent identical unkeyed calls straddling a boundary dispatch once; the later one joins the earlier slot.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "or two concurrent calls straddling it")
    Given the gateway clock is frozen 1ms before a window boundary
    And a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "reserve.done"
    And the gateway clock advances 2ms
    And "B" calls "write" with {"token":"$op1"} without a key
    Then "B" is refused with retryable "idempotency_in_progress"
    When the pause at "reserve.done" is released
    Then "A" gets a result
    When "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the first answer of "A"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @window-03 @must @unkeyed-derived @needs-upstream @needs-settings
  Scenario: A lowered window still finds the slot cut under the longer one
    Requirement: Slots are found by time, not by bucket numbers of the window in force: once the window is lowered (settings, or another process with a shorter one), a retry inside it replays the slot cut under the longer window, with no second dispatch or debit.
    Source: issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 3: "lowering the effective window ... makes a retry dispatch again")
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" gets a result
    When the unkeyed retry window is 60 seconds
    And "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @window-04 @must @unkeyed-derived @needs-upstream @needs-clock @needs-faults
  Scenario: An unkeyed operation still running is joined after its window has passed
    Requirement: A charged unkeyed operation still in progress is joined whatever its age: a retry past the window is answered retryable in-progress while the operation is younger than the gateway's stale-lock threshold, and the final outcome_unknown once it is older (unless the gateway renewed its holder's lease; either where the threshold is unknown), never dispatched or charged again; once the first call finishes, one dispatch and one debit in all.
    Source: issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 4: "an unkeyed operation still running is not joined once the window has passed"); docs/wire.md (An operation in progress)
    Given a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} without a key
    And "A" waits at "dispatch.before"
    And the gateway clock advances past the effective window
    And "B" calls "write" with {"token":"$op1"} without a key
    Then "B" is refused as the age of the operation "A" holds implies
    When the pause at "dispatch.before" is released
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @window-05 @must @unkeyed-derived @needs-upstream @needs-clock
  Scenario: An unkeyed retry half a second before the window ends replays
    Requirement: A slot's age is measured to the clock's precision, not in whole seconds: a call made at a fractional second and retried half a second before its window ends is still inside the window and replays, though the two calls' whole seconds are a window apart; no second dispatch or debit.
    Source: docs/wire.md (An operation in progress: slots are "records cut less than the window in force ago"); review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Bucket boundary breaks the SEL-498 acceptance")
    Given the gateway clock is frozen 500ms before a window boundary
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" gets a result
    When the gateway clock advances 500ms short of the effective window
    And "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
