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

  @must @needs-upstream @needs-fixtures
  Scenario Outline: An explicit permit is spent only by the API key and wallet it was granted to<on>
    Requirement: An explicit permit is granted to one wallet, one API key and one tool: named by another API key of the same wallet, or by a caller of another wallet, the call is refused permit_invalid, and nothing runs.
    Source: docs/control-api.md (POST /control/permits: wallet_id, key_id, tool); docs/wire.md (permit_invalid: "explicit or auto permit refused"); adversarial review of the judge (a permit any API key of its wallet could spend)
    Given an explicit permit "P1" for "write" with a budget of 3 credits, valid for 60s
    And <who>
    When "<caller>" calls "write" with {"token":"$op1"} under permit "P1"
    Then "<caller>" is refused with "permit_invalid"
    And the probe saw "$op1" dispatched 0 times

    @scope-04
    Examples: another API key of the wallet
      | on | who                                                | caller |
      |    | client "B" uses another API key of the same wallet | B      |

    @scope-04-wallet
    Examples: another wallet
      | on                       | who                                           | caller |
      | , nor by another wallet  | client "C" uses an API key of another wallet | C      |

  @scope-04-tool @must @needs-upstream @needs-fixtures @needs-tool-write-other
  Scenario: An explicit permit is spent only on the tool it was granted for
    Requirement: An explicit permit granted for one tool, named on a call of another tool of the same wallet and API key, is refused permit_invalid, and nothing runs: a permit is no budget for the wallet's other tools.
    Source: docs/control-api.md (POST /control/permits: wallet_id, key_id, tool); docs/wire.md (permit_invalid); adversarial review of the judge (a permit spent on another tool)
    Given an explicit permit "P1" for "write" with a budget of 3 credits, valid for 60s
    And a second upstream tool "write2" priced 3 credits
    When "A" calls "write2" with {"token":"$op1"} under permit "P1"
    Then "A" is refused with "permit_invalid"
    And the probe saw "$op1" dispatched 0 times
