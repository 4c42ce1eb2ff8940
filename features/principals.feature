@principals
Feature: One principal's cached result never reaches another
  The verified enterprise principal is part of every key's scope, and before any
  stored result is served the principal's entitlement is checked again.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits
    And client "alice" acts as principal "alice"
    And client "bob" acts as principal "bob"

  @iga-01 @must @unkeyed-derived @needs-upstream @needs-principal-tokens
  Scenario: Another principal on the same API key gets its own operation
    Requirement: The derived key binds the verified principal, so a second principal on the same API key with identical arguments gets its own operation, not the first one's result.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Cross-principal replay")
    When "alice" calls "write" with {"token":"$op1"} without a key
    Then "alice" gets a result
    When "bob" calls "write" with {"token":"$op1"} without a key
    Then "bob" gets a result with a new receipt
    And the probe saw "$op1" dispatched 2 times
    And the ledger has 2 debits and 0 refunds

  @iga-02 @must @needs-upstream @needs-principals
  Scenario: A revoked principal cannot replay its stored result
    Requirement: Before any stored result is served the principal's entitlement is checked again; a revoked principal never gets the stored result.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" ("IGA is re-checked before any stored-result replay")
    When "alice" calls "write" with {"token":"$op1"} using key "$k1"
    Then "alice" gets a result
    When principal "alice" is revoked
    And "alice" retries its last call with a new JSON-RPC id
    Then "alice" is refused with "principal_denied"
    And the probe saw "$op1" dispatched 1 time

  @iga-03 @must @needs-upstream @needs-principals @needs-fixtures
  Scenario: A revoked principal cannot replay the stored result of a removed tool
    Requirement: The replay check runs on every replay path, including a tool that was removed since.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Should fix: "the legacy replay return skips the IGA check ... after a tool is removed a retry ... can still return the stored result")
    When "alice" calls "write" with {"token":"$op1"} using key "$k1"
    Then "alice" gets a result
    When the tool "write" is removed
    And principal "alice" is revoked
    And "alice" retries its last call with a new JSON-RPC id
    Then "alice" is refused with "principal_denied"
    And the probe saw "$op1" dispatched 1 time

  @iga-04 @must @unkeyed-derived @needs-upstream @needs-principals
  Scenario: A revoked principal cannot replay an unkeyed call
    Requirement: A revoked principal cannot read a cached outcome through the derived-key replay either.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Overview: "so revoked principals cannot read another principal's cached outcome")
    When "alice" calls "write" with {"token":"$op1"} without a key
    Then "alice" gets a result
    When principal "alice" is revoked
    And "alice" retries its last call with a new JSON-RPC id
    Then "alice" is refused with "principal_denied"
    And the probe saw "$op1" dispatched 1 time

  @iga-05 @should @needs-upstream @needs-principal-tokens
  Scenario: A principal token signed by an untrusted key is refused
    Requirement: A principal token is verified against the configured JWKS, issuer and audience; a forged one is refused before anything runs.
    Source: issue "Reference gateway" (Tenancy: enterprise principal token)
    Given client "mallory" presents a forged principal token
    When "mallory" calls "write" with {"token":"$op1"} using key "$k1"
    Then "mallory" is refused with "principal_invalid"
    And the probe saw "$op1" dispatched 0 times
