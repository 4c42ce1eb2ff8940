@retention
Feature: A finished operation's record is kept for the retention, and no longer
  A gateway cannot keep every key for ever: a finished operation's record is
  purged once its retention has passed (docs/wire.md, Retention). A purge
  that counts a shorter horizon forgets a key while a client may still
  retry it, and the retry runs and is charged again.

  Background:
    Given a wallet with 100 credits and an API key
    And an upstream tool "write" priced 3 credits

  @retention-01 @must @needs-upstream @needs-clock @needs-settings
  Scenario: A keyed retry replays until the retention ends, and is a new operation after it
    Requirement: A finished keyed operation's record is kept for the retention the settings state (retention_seconds), counted on the gateway clock from its last write: a retry a second before it ends replays, with no second dispatch or debit; a retry after it finds the key forgotten and is a new operation, dispatched and charged again under a new receipt.
    Source: issue 25 "hardening: retention" (stored idempotency records are never purged); docs/wire.md (Retention)
    Given the gateway clock is frozen at a window boundary
    When "A" calls "write" with {"token":"$op1"} using key "$k1"
    Then "A" gets a result
    When the gateway clock advances 1s short of the retention
    And "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result
    And the last answer of "A" replays its first answer
    And the ledger has 1 debit and 0 refunds
    When the gateway clock advances 2s
    And "A" retries its last call with a new JSON-RPC id
    Then "A" gets a result with a new receipt
    And the probe saw "$op1" dispatched 2 times
    And the ledger has 2 debits and 0 refunds
