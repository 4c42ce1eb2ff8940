@shapes
Feature: Keys, arguments, balances and upstream answers of every shape
  Most scenarios send short lower-case keys, flat arguments, wallets far from
  empty and an upstream that always answers. A gateway's rules must hold for
  the shapes they do not send: keys compared whole and case-sensitively,
  arguments fingerprinted by their canonical JSON at every depth, a balance
  equal to the price, an upstream that refuses or answers with a tool error.

  Background:
    Given a wallet with 1000 credits and an API key
    And an upstream tool "write" priced 3 credits

  @key-01 @must @needs-upstream
  Scenario: A key and the same key in capitals name two operations
    Requirement: Idempotency keys are compared exactly as sent (printable ASCII, case-sensitive): a key and the same key in capitals are two keys, each its own operation, dispatched and charged once, never refused idempotency_key_reused or answered with the other's result.
    Source: docs/wire.md (Keys and permits); IETF draft-ietf-httpapi-idempotency-key-header section 2 (the key is an opaque string the client chooses)
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op2"} using key "$K1"
    Then "A" gets a result
    And the probe saw "$op2" dispatched 1 time
    And the ledger has 2 debits and 0 refunds

  @key-02 @must @needs-upstream
  Scenario: Two long keys that differ only past a shared prefix name two operations
    Requirement: A key of up to 255 characters is compared whole: two keys that share their first 240 characters ($L1 and $L2: the same long prefix, then $k1's and $k2's values) are two keys, each its own operation, dispatched and charged once.
    Source: IETF draft-ietf-httpapi-idempotency-key-header section 2 (the key is an opaque string the client chooses); docs/wire.md (Keys and permits: at most 255 characters of printable ASCII)
    When "A" calls "write" with {"token":"$op1"} using key "$L1"
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op2"} using key "$L2"
    Then "A" gets a result
    And the probe saw "$op2" dispatched 1 time
    And the ledger has 2 debits and 0 refunds

  @args-01 @must @needs-upstream
  Scenario: A keyed retry that writes the same arguments in another member order replays
    Requirement: Arguments are compared by their canonical JSON (members sorted, no insignificant whitespace), not their bytes: a retry with the same key whose arguments list the same members in another order is the same operation and replays its stored result, no dispatch, no debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "canonical JSON of the arguments (sorted keys, compact)"; "nested key order is stable")
    When "A" calls "write" with {"token":"$op1","note":"hello","meta":{"note":"deep","v":1}} using key "$k1"
    Then "A" gets a result
    When "A" calls "write" with {"meta":{"v":1,"note":"deep"},"note":"hello","token":"$op1"} using key "$k1"
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @args-03 @must @unkeyed-derived @needs-upstream
  Scenario: An unkeyed retry that writes the same arguments in another member order replays
    Requirement: The derived key covers the canonical arguments, not their bytes: an unkeyed retry inside the window whose arguments list the same members in another order is the same operation and replays its stored result, no dispatch, no debit.
    Source: review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "canonical JSON of the arguments (sorted keys, compact)")
    When "A" calls "write" with {"token":"$op1","note":"hello","meta":{"note":"deep","v":1}} without a key
    Then "A" gets a result
    When "A" calls "write" with {"meta":{"v":1,"note":"deep"},"note":"hello","token":"$op1"} without a key
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @args-04 @must @needs-upstream
  Scenario: A keyed retry of large arguments replays
    Requirement: Arguments of any size the gateway accepts are stored and replayed as small ones are: a retry with the same key of a call whose arguments carry 20,000 characters replays its stored result, no dispatch, no debit.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (the enqueue idempotency contract); docs/wire.md (Keys and permits)
    When "A" calls "write" with {"token":"$op1","pad":"$pad20000"} using key "$k1"
    Then "A" gets a result
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @args-02 @must @needs-upstream
  Scenario: The same key with arguments that differ one object deeper is refused
    Requirement: The fingerprint covers the arguments at every depth: the same key with arguments that differ only inside a nested object is idempotency_key_reused, never the first arguments' stored result; nothing dispatched or charged.
    Source: review of PR 917 "Duplicate prevention failed for simultaneous requests" (idempotency_key_payload_mismatch); review of SEL-498 (canonical JSON of the arguments)
    When "A" calls "write" with {"token":"$op1","meta":{"note":"one","v":1}} using key "$k1"
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op1","meta":{"note":"two","v":1}} using key "$k1"
    Then "A" is refused with "idempotency_key_reused"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @args-05 @must @needs-upstream
  Scenario: The same key with a list in another order is refused
    Requirement: A list's order is part of the arguments: the same key with arguments whose list holds the same elements in another order is idempotency_key_reused, never the first arguments' stored result; nothing dispatched or charged.
    Source: docs/wire.md (Keys and permits: two calls have the same arguments when their JSON means the same, and an array in another order means another thing); review of PR 917 "Duplicate prevention failed for simultaneous requests" (idempotency_key_payload_mismatch)
    When "A" calls "write" with {"token":"$op1","ids":[1,2]} using key "$k1"
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op1","ids":[2,1]} using key "$k1"
    Then "A" is refused with "idempotency_key_reused"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @args-05-unkeyed @must @unkeyed-derived @needs-upstream
  Scenario: An unkeyed call with a list in another order is an operation of its own
    Requirement: The derived key covers the list's order: an unkeyed call inside the window whose arguments hold the same list in another order is another operation, dispatched and charged once more, never answered with the first call's result.
    Source: docs/wire.md (Keys and permits: two calls have the same arguments when their JSON means the same); review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Design: "canonical JSON of the arguments")
    When "A" calls "write" with {"token":"$op1","ids":[1,2]} without a key
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op1","ids":[2,1]} without a key
    Then "A" gets a result
    And the probe saw "$op1" dispatched 2 times
    And the ledger has 2 debits and 0 refunds

  @must @needs-upstream
  Scenario Outline: An upstream's refusal before the tool ran is refunded, and the retry runs it once<on>
    Requirement: An upstream that refuses a call with a JSON-RPC error ran nothing: the call is answered dispatch_failed (retryable) and its debit refunded, net zero; the retry runs the tool once and is charged once.
    Source: docs/wire.md (An upstream tool's result: "refuses the call with a JSON-RPC error, nothing ran: dispatch_failed, refunded"); review of SEL-498 ("pre-dispatch refunded failures advance to a fresh attempt instead of replaying")
    Given the probe refuses the next dispatch of "$op1"
    When "A" calls "write" with {"token":"$op1"} <keying>
    Then "A" is refused with retryable "dispatch_failed"
    And the wallet balance changed by 0
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time
    And the wallet balance changed by -3

    @upstream-01 @unkeyed-derived
    Examples: unkeyed
      | on | keying        |
      |    | without a key |

    @upstream-01-keyed
    Examples: keyed
      | on                 | keying          |
      | , for a keyed call | using key "$k1" |

  @upstream-02 @must @needs-upstream
  Scenario: A tool's error result is charged once, stored and replayed, never run again
    Requirement: A tool that ran and answered isError has an outcome like any other: charged once, stored under its receipt, and a retry replays it whole; the tool is not run again.
    Source: docs/wire.md (An upstream tool's result is its content, structuredContent and isError); review of SEL-498 ("Consider releasing the key for proven no-effect outcomes": only those)
    Given the probe answers the next dispatch of "$op1" with a tool error
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds

  @must @needs-upstream @needs-fixtures
  Scenario Outline: A wallet holding exactly the price pays for the call<on>
    Requirement: A call is refused insufficient_funds only when the balance is below the tool's price: a wallet holding exactly the price pays for one call (balance 0 after it), and the next call is refused, nothing dispatched.
    Source: issue "Reference gateway" (Tenancy, tools, ledger); docs/wire.md (insufficient_funds: "balance below the tool's price; nothing dispatched")
    Given a wallet holding exactly 6 credits and an API key
    When "A" calls "write" with {"token":"$op1"} <keying1>
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op2"} <keying2>
    Then "A" gets a result
    When "A" calls "write" with {"token":"$op3"} <keying3>
    Then "A" is refused with "insufficient_funds"
    And the probe saw "$op2" dispatched 1 time
    And the probe saw "$op3" dispatched 0 times
    And the ledger has 2 debits and 0 refunds

    @funds-01
    Examples: keyed
      | on | keying1         | keying2         | keying3         |
      |    | using key "$k1" | using key "$k2" | using key "$k3" |

    @funds-01-unkeyed @unkeyed-derived
    Examples: unkeyed
      | on                   | keying1       | keying2       | keying3       |
      | , for unkeyed calls  | without a key | without a key | without a key |

  @upstream-03 @must @needs-upstream @needs-fixtures
  Scenario: A refunded call under a permit that pays for one call is retried and runs
    Requirement: A refund gives back all the call took: the wallet's credits and the explicit permit's budget. A call refused dispatch_failed (nothing ran) under a permit whose budget pays for one call is retried and runs, never refused permit_exhausted.
    Source: docs/wire.md (An upstream tool's result: "refuses the call with a JSON-RPC error, nothing ran: dispatch_failed, refunded"); adversarial review of the reference gateway
    Given an explicit permit "P1" for "write" with a budget of 3 credits, valid for 60s
    And the probe refuses the next dispatch of "$op1"
    When "A" calls "write" with {"token":"$op1"} under permit "P1"
    Then "A" is refused with retryable "dispatch_failed"
    When "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the probe saw "$op1" dispatched 1 time

  @funds-02 @must @needs-upstream @needs-fixtures @needs-faults
  Scenario: A call paused between its reservation and its charge is refused once another call spent the wallet
    Requirement: The balance is checked where it is debited, in one step: a call that found the wallet able to pay when it arrived, and is charged only after another call spent the last credits, is refused insufficient_funds and never dispatched; the wallet is never overdrawn.
    Source: issue "Reference gateway" (Tenancy, tools, ledger: "a wallet whose balance is below the tool's price is refused"); docs/wire.md (insufficient_funds: "balance below the tool's price; nothing dispatched")
    Given a wallet holding exactly 3 credits and an API key
    And a pause is armed at "reserve.done" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "reserve.done"
    And "B" calls "write" with {"token":"$op2"} using key "$k2"
    Then "B" gets a result
    When the pause at "reserve.done" is released
    Then "A" is refused with "insufficient_funds"
    And the probe saw "$op1" dispatched 0 times
    And the wallet balance changed by -3

  @must @needs-upstream @needs-fixtures
  Scenario Outline: Calls racing for a wallet's last credits overdraw nothing<on>
    Requirement: Of 8 operations that arrive at once on a wallet holding the price of one, one is charged and dispatched and every other is refused insufficient_funds, nothing dispatched: a balance checked before the charge and not where it is debited lets them all through.
    Source: issue "Reference gateway" (Tenancy, tools, ledger); docs/wire.md (insufficient_funds: "balance below the tool's price; nothing dispatched")
    Given a wallet holding exactly 3 credits and an API key
    When 8 clients call "write" with {"token":"$op1"} at once, <each>
    Then the wallet balance changed by -3

    @funds-03
    Examples: keyed
      | on | each                                   |
      |    | each its own operation using key "$k1" |

    @funds-03-unkeyed @unkeyed-derived
    Examples: unkeyed
      | on                   | each                   |
      | , for unkeyed calls  | each its own operation |
