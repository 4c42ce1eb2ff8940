@scope
Feature: An idempotency key names an operation only with its caller and tool
  A key is scoped to who sent it (wallet, API key) and to the tool it calls.
  The same key from another caller, or on another tool, is another operation
  or a refusal: never a replay of somebody else's stored result. The scope
  holds on both MCP wires.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @must @needs-upstream @needs-tool-write-other
  Scenario Outline: The same key and arguments on another tool never replay the first tool's result<on>
    Requirement: An idempotency record is scoped to the tool: the same key with the same arguments on another tool is a new operation (dispatched, a new receipt) or a refusal, never the first tool's stored result, on every MCP version the gateway serves.
    Source: IETF draft-ietf-httpapi-idempotency-key-header section 2 (a key identifies a request to one resource); issue "External gateways" (key scope); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And a second upstream tool "write2" priced 3 credits
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "A" calls "write2" with {"token":"$op1"} using key "$k1"
    Then the last answer of "A" is its own operation or a refusal, never the first answer of "A"

    @scope-01
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @scope-01-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @scope-01-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |

  @must @needs-upstream @needs-second-key
  Scenario Outline: The same key from another API key of the same wallet never gets the first caller's result<on>
    Requirement: An idempotency record is scoped to the API key: another key of the same wallet sending the same key and arguments gets its own operation or a refusal, never the first caller's stored result, on every MCP version the gateway serves.
    Source: IETF draft-ietf-httpapi-idempotency-key-header section 2 (keys are unique per client); review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (derived keys bind wallet and API key); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And client "B" uses another API key of the same wallet
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then the last answer of "B" is its own operation or a refusal, never the first answer of "A"

    @scope-02
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @scope-02-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @scope-02-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |

  @must @needs-upstream @needs-other-wallet
  Scenario Outline: The same key from another wallet never gets the first caller's result<on>
    Requirement: An idempotency record is scoped to the wallet: a caller of another wallet sending the same key and arguments gets its own operation or a refusal, never another tenant's stored result, and the first caller's wallet pays for its own operation only, on every MCP version the gateway serves.
    Source: IETF draft-ietf-httpapi-idempotency-key-header section 2 (keys are unique per client); review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (cross-tenant replay); MCP specification 2026-07-28 (stateless requests)
    Given the clients speak <protocol>
    And client "C" uses an API key of another wallet
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "C" calls "write" with {"token":"$op1"} using key "$k1"
    Then the last answer of "C" is its own operation or a refusal, never the first answer of "A"
    And the ledger has 1 debit and 0 refunds

    @scope-03
    Examples: the run's wire
      | on | protocol                   |
      |    | the run's protocol version |

    @scope-03-stateless
    Examples: stateless
      | on                      | protocol            |
      | , on the stateless wire | protocol 2026-07-28 |

    @scope-03-session
    Examples: session
      | on                    | protocol            |
      | , on the session wire | protocol 2025-11-25 |
