@refusals
Feature: Calls that cannot be made safe are refused before any permit, dispatch or charge
  Bad input gets a clear JSON-RPC error with a stable data.reason, never a panic,
  a 500 or a silent charge.

  Background:
    Given a wallet with 100 credits and an API key

  @refuse-01 @must @needs-upstream @needs-settings
  Scenario: With window 0, unkeyed calls are refused
    Requirement: Window 0 turns derived keys off, so every unkeyed call is refused with idempotency_key_required. There is no random key.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "Setting it to 0 turns off derived keys")
    Given an upstream tool "write" priced 3 credits
    And the unkeyed retry window is 0 seconds
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-02 @must @needs-tool-read-only
  Scenario: Unkeyed read-only calls are refused, not collapsed into a stale replay
    Requirement: Read-only tools are metered, so unkeyed reads are refused with idempotency_key_required, with no dispatch and no debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Read-only tools are collapsed"; follow-up "Read-only tools: metered, so unkeyed reads stay refused")
    Given an upstream read-only tool "count" priced 1 credit
    When "A" calls "count" with {"token":"$op1"} without a key
    Then "A" is refused with "idempotency_key_required"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-03 @must @needs-tool-approval
  Scenario: Unkeyed approval-gated calls are refused
    Requirement: The human-approval gate still requires an explicit client key.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design, Unchanged)
    Given an upstream approval-gated tool "approve" priced 5 credits
    When "A" calls "approve" with {"token":"$op1"} without a key
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-04 @should @needs-tool-read-only
  Scenario: Keyed read-only calls are metered once per key
    Requirement: Two keyed reads write two non-zero ledger debits.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (follow-up: test_unkeyed_read_only_tool_is_refused_without_dispatch)
    Given an upstream read-only tool "count" priced 1 credit
    When "A" calls "count" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "A" calls "count" with {"token":"$op2"} using key "$k2"
    Then "A" gets a result with a new receipt
    And the ledger has 2 debits and 0 refunds

  @refuse-05 @must @needs-upstream @needs-fixtures
  Scenario: Too little balance is refused before dispatch
    Requirement: Too little balance is refused before dispatch with insufficient_funds; nothing is charged.
    Source: issue "Reference gateway" (Tenancy, tools, ledger)
    Given an upstream tool "pricey" priced 500 credits, more than the wallet holds
    When "A" calls "pricey" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with "insufficient_funds"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-06 @must
  Scenario: A JSON-RPC batch is refused
    Requirement: JSON-RPC batches are refused with a clear error, and neither call of the batch is dispatched.
    Source: MCP specification 2025-06-18 removed batching; issue "Reference gateway" (Wire)
    Given an upstream tool "write" priced 3 credits
    When "A" sends a batch of two tools/call requests
    Then "A" is refused with "batch_not_supported"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-07 @must
  Scenario: Malformed JSON gets a parse error
    Requirement: Malformed JSON gets a clear JSON-RPC error, never a panic or a 500.
    Source: JSON-RPC 2.0 section 5.1 (-32700 Parse error)
    When "A" sends the raw body {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
    Then "A" is refused with "parse_error"
    And the ledger has 0 debits and 0 refunds

  @refuse-08 @must
  Scenario: An unknown tool gets a clear error
    Requirement: An unknown tool gets a clear JSON-RPC error with a stable reason, and nothing is charged.
    Source: MCP specification (tools/call errors)
    When "A" calls "nonexistent" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with "unknown_tool"
    And the ledger has 0 debits and 0 refunds

  @refuse-09 @must
  Scenario: An oversized body is refused
    Requirement: A tools/call body over the gateway's limit gets a clear error and is not dispatched.
    Source: issue "Conformance harness" (refusals)
    Given an upstream tool "write" priced 3 credits
    When "A" sends a tools/call body over the gateway's body limit
    Then "A" is refused with "request_too_large"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-10 @must @unkeyed-refuse @needs-upstream
  Scenario: Under the refuse policy an unkeyed mutating call is refused before dispatch
    Requirement: A gateway whose unkeyed policy is refuse answers every unkeyed mutating call, first call and retry, with idempotency_key_required; nothing is dispatched or charged.
    Source: IETF draft-ietf-httpapi-idempotency-key-header section 2.7 (a request without the key where one is required is refused); issue "External gateways" (unkeyed policy refuse)
    Given an upstream tool "write" priced 3 credits
    When "A" calls "write" with {"token":"$op1"} without a key
    Then "A" is refused with "idempotency_key_required"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-11 @must @needs-tool-read-only @needs-fixtures
  Scenario: A read-only call under an explicit permit and no key is refused
    Requirement: An explicit permit is not a client key: an unkeyed read-only call under one is refused with idempotency_key_required, first call and retry, and never replays a stale read for the permit's life; nothing is dispatched or charged.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Read-only tools are collapsed"); issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 2)
    Given an upstream read-only tool "count" priced 1 credit
    And an explicit permit "P1" for "count" with a budget of 5 credits, valid for 60s
    When "A" calls "count" with {"token":"$op1"} under permit "P1"
    Then "A" is refused with "idempotency_key_required"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-12 @must @needs-tool-approval @needs-fixtures
  Scenario: An approval-gated call under an explicit permit and no key is refused
    Requirement: The human-approval gate requires an explicit client key, which a permit is not: an approval-gated call under a permit and no key is refused with idempotency_key_required; nothing is dispatched or charged.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design, Unchanged); issue "Every check can fail, and the reference gateway survives an adversarial review" (Reference gateway bugs, 2)
    Given an upstream approval-gated tool "approve" priced 5 credits
    And an explicit permit "P1" for "approve" with a budget of 5 credits, valid for 60s
    When "A" calls "approve" with {"token":"$op1"} under permit "P1"
    Then "A" is refused with "idempotency_key_required"
    And the probe saw "$op1" dispatched 0 times
    And the ledger has 0 debits and 0 refunds

  @refuse-13 @must @needs-upstream @needs-fixtures
  Scenario: An upstream's refusal for a client capability the caller lacks is passed on, and nothing is charged
    Requirement: A tools/call whose upstream refuses it with -32021 (a client capability the call needs that the caller did not declare) is refused client_capabilities_missing, first call and retry; the call never ran, so each attempt's debit is given back exactly once and the wallet is where it was.
    Source: MCP specification 2026-07-28 (-32021, missing required client capability); docs/wire.md (Results); adversarial review of the reference gateway
    Given an upstream tool "sample" that needs the client to declare sampling, priced 3 credits
    And "A" speaks protocol 2026-07-28
    When "A" calls "sample" with {"token":"$op1"} using key "$k1"
    Then "A" is refused with "client_capabilities_missing"
    And the wallet balance changed by 0
    When "A" retries its last call with a new JSON-RPC id
    Then "A" is refused with "client_capabilities_missing"
    And the ledger has 2 debits and 2 refunds
