@cancel
Feature: A cancelled call is not run twice
  MCP 2026-07-28: a client whose response stream broke MUST re-send the call
  with a new request id, and a closed stream is a cancellation. Whether the
  gateway stops the work or lets it finish, the retry must not dispatch the
  tool a second time.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @cancel-01 @must @needs-upstream
  Scenario: A call cancelled with notifications/cancelled after dispatch is not dispatched again
    Requirement: A keyed call cancelled (notifications/cancelled) after the gateway dispatched it, then re-sent with the same key and a new request id, gets the tool's own result without a second dispatch or debit: the cancellation ends the client's wait, not the tool's work, whose result is kept.
    Source: MCP specification 2025-11-25 (utilities/cancellation: notifications/cancelled); MCP specification 2026-07-28 (a client whose response stream broke MUST re-send with a new request id)
    Given "A" speaks protocol 2025-11-25
    And the probe stalls "$op1"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the probe sees "$op1" dispatched
    And "A" cancels its call with notifications/cancelled
    And the probe releases "$op1"
    And "A" retries its last call with a new JSON-RPC id until it is not in progress
    Then "A" gets a result
    And "A" gets the tool's own result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @cancel-02 @must @needs-upstream
  Scenario: A call whose response stream closed after dispatch is not dispatched again on the stateless wire
    Requirement: On the 2026-07-28 wire a closed response stream is a cancellation; the call re-sent with the same key and a new request id gets the tool's own result without a second dispatch or debit.
    Source: MCP specification 2026-07-28 (a closed stream is a cancellation; the client MUST re-send with a new request id)
    Given "A" speaks protocol 2026-07-28
    And the probe stalls "$op1"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the probe sees "$op1" dispatched
    And "A" closes its response stream
    And the probe releases "$op1"
    And "A" retries its last call with a new JSON-RPC id until it is not in progress
    Then "A" gets a result
    And "A" gets the tool's own result
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @cancel-03 @should @needs-upstream @needs-faults
  Scenario: A call cancelled before dispatch runs at most once
    Requirement: A keyed call whose stream closed before the gateway dispatched it may run once (or not at all); its retry gets an outcome, and the tool is dispatched at most once in all.
    Source: MCP specification 2026-07-28 (a closed stream is a cancellation; the client MUST re-send with a new request id)
    Given a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "reserve.done"
    And "A" closes its response stream
    And the pause at "reserve.done" is released
    And "A" retries its last call with a new JSON-RPC id until it is not in progress
    Then "A" gets a result
    And the probe saw "$op1" dispatched at most 1 time
