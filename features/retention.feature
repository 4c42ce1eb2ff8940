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

  @retention-02 @must @needs-upstream @needs-clock @needs-settings @needs-faults
  Scenario: A charged operation in progress is never purged, and its retention counts from its last write
    Requirement: A record in progress is never purged, whatever its age: a keyed operation charged and stalled before its dispatch for longer than the retention (so past the stale-lock threshold too) is uncertain, and a retry with its key is answered outcome_unknown, not run again, with no second dispatch or debit; once its holder resumes and stores the outcome, the retention counts from that write, not from the record's creation: a retry a second before it ends replays the outcome, one dispatch and one debit in all.
    Source: issue 25 "hardening: retention" (a reviewer's finding: retention-01 freezes the clock on a finished record only); docs/wire.md (Retention; An operation in progress)
    Given the gateway clock is frozen at a window boundary
    And a pause is armed at "dispatch.before" for "write"
    When "A" starts calling "write" with {"token":"$op1"} using key "$k1"
    And "A" waits at "dispatch.before"
    And the gateway clock advances 1s short of the retention
    And the gateway clock advances 2s
    And "B" calls "write" with {"token":"$op1"} using key "$k1"
    Then "B" is refused as the age of the operation "A" holds implies
    When the pause at "dispatch.before" is released
    Then "A" gets a result
    When the gateway clock advances 1s short of the retention
    And "B" retries its last call with a new JSON-RPC id
    Then the last answer of "B" replays the first answer of "A"
    And the probe saw "$op1" dispatched 1 time
    And the ledger has 1 debit and 0 refunds
