@explore
Feature: Explored: random sequences of the suite's steps
  Written by mcpconform explore. Each scenario is a seeded random sequence
  of calls, retries, twins, waits and changes to the target, ended by
  retrying every operation until it is decided; the model of the retry
  contract (docs/judge.md) judges its whole history.

  @explore-20261204-7 @must @needs-clock @needs-faults @needs-fixtures @needs-other-wallet @needs-principal-tokens @needs-principals @needs-second-key @needs-settings @needs-tool-read-only @needs-tool-write-other @needs-two-urls @needs-upstream
  Scenario: Explored: double-dispatch (the probe saw op dispatched as its operations allow)
    Requirement: No double-dispatch: the probe saw op dispatched as its operations allow. The model saw dispatched 2 times (expected at most 1 dispatch(es)).
    Source: found by `mcpconform explore --bug no-idempotency --seed 20261204` as scenario 7 of seed 20261204 (30 steps, shrunk to 21) against reference
    Given a wallet with 300 credits and an API key
    And an upstream tool "write" priced 3 credits
    And a second upstream tool "write2" priced 1 credit
    And an upstream read-only tool "count" priced 0 credits
    And an upstream multi-round tool "ask" priced 5 credits
    And an upstream tool "pricey" priced 500 credits, more than the wallet holds
    And an explicit permit "P1" for "write" with a budget of 9 credits, valid for 1m0s
    And "A" speaks protocol 2025-11-25
    And client "B" talks to gateway URL 2
    And client "K" uses another API key of the same wallet
    And client "W" uses an API key of another wallet
    And client "alice" acts as principal "alice"
    And "alice" speaks protocol 2026-07-28
    When the gateway clock is frozen 1ms before a window boundary
    And a pause is armed at "fence.read" for "write"
    And "A" starts calling "write" with {"token":"$op2"} without a key
    And "A" waits at "fence.read"
    And the gateway clock advances past the stale-lock threshold
    And "B" calls "write" with {"token":"$op2"} without a key
    And the pause at "fence.read" is released
    And 0.3 seconds pass
    And "A" retries its last call with a new JSON-RPC id
    And the probe stalls "$op1"
    And "K" starts calling "write" with {"token":"$op1"} using key "$k1"
    And the probe sees "$op1" dispatched
    And "K" closes its response stream
    And the probe releases "$op1"
    And "W" calls "write" with {"token":"$op1"} using key "$k1"
    And "A" calls "write2" with {"token":"$op1"} using key "$k1"
    And 4 clients split across every gateway URL call "write" with {"token":"$op2"} without a key at once
    And the gateway will drop the response after dispatching "write"
    And "A" calls "write" with {"token":"$op5","note":"x"} under permit "P1"
    And the gateway clock advances 1m1s
    And "A" retries its last call with a new JSON-RPC id
    And "alice" calls "ask" with {"token":"$op4"} using key "$k2"
    And "alice" answers the input its last answer asked for, if it asked
    And "alice" retries its last call with a new JSON-RPC id
    And principal "alice" is revoked
    And "B" calls "count" with {"token":"$op3"} without a key
    And the unkeyed retry window is 0 seconds
    And the tool "write2" is removed
    And "K" sends the raw body {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
    And "K" calls "pricey" with {"token":"$op6"} using key "$k3"
    Then every operation is retried until it is decided
