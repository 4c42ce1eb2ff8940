@rounds
Feature: A multi-round call is one operation
  MCP 2026-07-28 lets a tool answer a round of a call with an input-required
  result: it asks the client for input (inputRequests) and hands it a state
  (requestState); the client sends the call again with its answers. The
  rounds are one operation: charged once, for the round that finishes, and
  the finished call's result is what a retry replays.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream multi-round tool "ask" priced 3 credits

  @rounds-01 @must @needs-upstream @needs-fixtures
  Scenario: A call that asks for input is charged once, and its retry replays the final result
    Requirement: A keyed call whose tool asks for input in its first round, answered in a second round with the same key, is charged its price once in all (the round that asked nets to zero), dispatched once, and a retry of the finished round replays its result.
    Source: MCP specification 2026-07-28 (multi round-trip requests: input-required results, inputResponses, requestState); docs/wire.md (multi-round calls); adversarial review of the reference gateway
    Given "A" speaks protocol 2026-07-28
    When "A" calls "ask" with {"token":"$op1"} using key "$k1"
    Then the last answer of "A" asks for input
    And the wallet balance changed by 0
    When "A" answers the input its last answer asked for
    Then "A" gets a result
    And the wallet balance changed by -3
    When "A" retries its last call with a new JSON-RPC id
    Then the last answer of "A" replays its second answer
    And the wallet balance changed by -3
    And the probe saw "$op1" dispatched 1 time

  @rounds-02 @must @needs-upstream @needs-fixtures
  Scenario: A 2025-11-25 client that cannot answer an input request is refused, never handed the request
    Requirement: A 2025-11-25 client never sees an input-required result, which its protocol does not have: when it declared neither sampling nor elicitation, a call whose tool asks for input first is refused dispatch_failed (retryable) and refunded, as the tool has not run.
    Source: docs/wire.md (multi-round calls: "A 2025-11-25 client never sees an input-required result"); adversarial review of the reference gateway
    Given "A" speaks protocol 2025-11-25
    When "A" calls "ask" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with retryable "dispatch_failed"
    And the wallet balance changed by 0

  @rounds-03 @must @needs-upstream @needs-fixtures
  Scenario: The first round sent again after the call finished replays the final result
    Requirement: The rounds of a multi-round call are one operation, whose fingerprint is the tool and arguments alone (not inputResponses or requestState): the first round sent again with the same key after the call finished replays the final result, is not charged and runs nothing.
    Source: docs/wire.md (multi-round calls: "a retry of any round after the call finished ... replays the final result"); adversarial review of the reference gateway
    Given "A" speaks protocol 2026-07-28
    When "A" calls "ask" with {"token":"$op1"} using key "$k1"
    Then the last answer of "A" asks for input
    When "A" answers the input its last answer asked for
    Then "A" gets a result
    When "A" calls "ask" with {"token":"$op1"} using key "$k1"
    Then the last answer of "A" replays its second answer
    And the wallet balance changed by -3
    And the probe saw "$op1" dispatched 1 time
