@ledger
Feature: The wallet is charged exactly once per operation
  Every dispatch writes one debit and a receipt. A failure before dispatch is
  refunded and the retry really runs. A replay writes no ledger entry.

  Background:
    Given a wallet with 1000 credits and an API key
    And an upstream tool "write" priced 3 credits

  @must @needs-upstream @needs-faults
  Scenario Outline: A failure before dispatch nets to zero; the retry is charged once; the replay adds nothing<on>
    Requirement: Zero net change after a failure before dispatch, one debit after the successful retry, no new entry on replay, keyed or unkeyed.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "assert zero net charge after the failure, one charge after the success, and no extra charge on replay, using wallet/ledger totals")
    Given a failure is armed at "dispatch.before" for "write"
    When "A" calls "write" with {"token":"$op1"} <keying>
    Then "A" is refused with retryable "dispatch_failed"
    And the wallet balance changed by 0
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the wallet balance changed by -3
    When "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its second answer
    And the wallet balance changed by -3
    And the probe saw "$op1" dispatched 1 time

    @ledger-01 @unkeyed-derived
    Examples: unkeyed
      | on | keying        |
      |    | without a key |

    @ledger-01-keyed
    Examples: keyed
      | on                 | keying          |
      | , for a keyed call | using key "$k1" |

  @ledger-02 @must @needs-upstream
  Scenario: The bank invariant holds over a random mixed workload
    Requirement: Every operation of a mixed workload (keyed, unkeyed, retried and conflicting calls) gets one outcome, and each one that ran was dispatched once and charged once at its price: the bank invariant holds per operation, not only in total.
    Source: issue "Conformance harness" (ledger: bank invariant); Jepsen bank test
    When a random workload of 40 calls runs on "write" with seed-chosen keys, retries and conflicts
    Then every operation of the workload got one outcome
    And every dispatched operation was charged exactly once
    And no operation was dispatched twice

  @must @needs-upstream @needs-fixtures @needs-faults
  Scenario Outline: A call charged before its tool was re-priced is refunded what it paid<on>
    Requirement: A refund gives back what its call was debited, whatever the tool costs by then: a call charged 3 credits and held before its dispatch while the tool is re-priced, then refused dispatch_failed by the upstream, nets the wallet to zero (a refund at the new price would pay the caller, or keep from it, the difference for a call that never ran).
    Source: docs/wire.md (An upstream tool's result: "refuses the call with a JSON-RPC error, nothing ran: dispatch_failed, refunded"); docs/control-api.md (tools: re-priced through the control API, acted on by every process from its next request on); adversarial review of the judge (a refund read from the tool's price at refund time)
    Given a pause is armed at "dispatch.before" for "write"
    And the probe refuses the next dispatch of "$op1"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And the tool "write" is re-priced to <price> credits
    And the pause at "dispatch.before" is released
    Then "A" is refused with retryable "dispatch_failed"
    And the ledger has 1 debit and 1 refund
    And the wallet balance changed by 0

    @ledger-03
    Examples: dearer
      | on | price |
      |    | 5     |

    @ledger-03-cheaper
    Examples: cheaper
      | on                    | price |
      | , the tool made cheaper | 1     |
