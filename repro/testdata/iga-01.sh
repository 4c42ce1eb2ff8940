#!/usr/bin/env bash
# mcpconform repro iga-01: Another principal on the same API key gets its own operation
#
# Scenario:    iga-01 (principals.feature:13, @must)
# Requirement: The derived key binds the verified principal, so a second principal on the same API key with identical arguments gets its own operation, not the first one's result.
# Source:      seeds/sel-498-unkeyed-retry-review.txt (Blocking: "Cross-principal replay")
# Recorded:    against reference (sqlite): passed
#
# Replays the scenario's MCP exchanges with curl against a running gateway that
# serves the conformance control API (docs/control-api.md), then prints the wallet,
# its ledger and the gateway's dispatch log. Needs bash, curl, sed and grep.
#   CONTROL_TOKEN=... [GATEWAY=http://127.0.0.1:8719] bash repro.sh
# Request bodies, tool names and keys are the recorded run's; the wallet, the API key
# and the tools (aliases of partner.echo) are made fresh by this script.
# NOTE: principals need the harness's identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway
# NOTE: principals need the harness's identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway
set -euo pipefail

GATEWAY="${GATEWAY:-http://127.0.0.1:8719}"
GATEWAY="${GATEWAY%/}"
: "${CONTROL_TOKEN:?set CONTROL_TOKEN to the --control-token of the gateway}"
TMP=$(mktemp -d)
WALLET= KEY= BASE=0

cleanup() {
  jobs -p | while read -r pid; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

# ctl METHOD PATH [BODY]: one control API call; prints the answer, fails on an error status.
ctl() {
  local method=$1 path=$2 body=${3:-} status
  local args=(-sS --max-time 60 -X "$method" -H "Authorization: Bearer $CONTROL_TOKEN" -o "$TMP/ctl.out" -w '%{http_code}')
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-raw "$body"); fi
  status=$(curl "${args[@]}" "$GATEWAY/control$path")
  cat "$TMP/ctl.out"
  if [ "${status#2}" = "$status" ]; then
    echo "repro.sh: control API $method $path: HTTP $status" >&2
    return 1
  fi
}

# mcp NAME LABEL [curl args]: POST $TMP/NAME.req to the MCP endpoint; prints the status,
# the receipt or refusal reason, and the answer. A transport error is reported, not fatal.
mcp() {
  local name=$1 label=$2 status; shift 2
  status=$(curl -sS --max-time 60 -X POST "$GATEWAY/mcp" "$@" --data-binary "@$TMP/$name.req" \
    -o "$TMP/$name.body" -D "$TMP/$name.headers" -w '%{http_code}' 2>"$TMP/$name.err") || status="000 ($(cat "$TMP/$name.err"))"
  touch "$TMP/$name.body"
  echo "-> $label: HTTP $status $(summary < "$TMP/$name.body")"
  echo "   $(head -c 600 "$TMP/$name.body")"
}

# summary: the receipt (id, replayed, charged) or the refusal reason of an answer on stdin.
summary() {
  local a; a=$(cat)
  { grep -o '"io.mcpconform/receipt":{[^}]*}' <<<"$a" || grep -o '"reason":"[^"]*"' <<<"$a" || true; } | head -n 1
}

# field NAME: the first string value of "NAME" in the JSON on stdin.
field() { { grep -o "\"$1\":\"[^\"]*\"" || true; } | head -n 1 | sed 's/^.*:"\(.*\)"$/\1/'; }

# number NAME: the first number value of "NAME" in the JSON on stdin.
number() { { grep -o "\"$1\":-\{0,1\}[0-9.]*" || true; } | head -n 1 | sed 's/^.*://'; }

# header NAME: a response header's value from a curl -D dump on stdin.
header() { { grep -i "^$1:" || true; } | head -n 1 | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r\n'; }

# count PATTERN FILE: how often PATTERN occurs in FILE.
count() { { grep -o "$1" "$2" || true; } | wc -l | tr -d ' '; }

# ms SECONDS: seconds (fractions allowed) as integer milliseconds.
ms() {
  local s=${1:-0} i f
  i=${s%%.*}; f=000
  if [ "$s" != "$i" ]; then f="${s#*.}000"; fi
  echo $(( ${i:-0} * 1000 + 10#${f:0:3} ))
}

# iso MILLIS: an RFC 3339 UTC time (GNU or BSD date).
iso() {
  local s=$(( $1 / 1000 )) f=$(( $1 % 1000 )) d
  d=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%S 2>/dev/null || date -u -r "$s" +%Y-%m-%dT%H:%M:%S)
  printf '%s.%03dZ' "$d" "$f"
}

if [ "${REPRO_FORCE:-}" != 1 ]; then
  echo "repro.sh: this scenario cannot be reproduced faithfully with curl alone:" >&2
  echo '  - principals need the harness'\''s identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway' >&2
  echo '  - principals need the harness'\''s identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway' >&2
  echo "set REPRO_FORCE=1 to run it anyway" >&2
  exit 3
fi

# Step: a wallet with 100 credits and an API key
WALLET=$(ctl POST /wallets '{"balance":100}' | field wallet_id)
KEY=$(ctl POST /keys "{\"wallet_id\":\"$WALLET\"}" | field api_key)
BASE=$(ctl GET "/wallets/$WALLET" | number balance)
echo "wallet $WALLET, balance $BASE"

# Step: an upstream tool "write" priced 3 credits
# "write" forwarded to the harness's upstream probe; here it is an alias of partner.echo.
ctl POST /tools '{"name":"probe.write.e0989ce3","local_tool":"partner.echo","price":3,"read_only":false,"approval":false}' >/dev/null

# Step: client "alice" acts as principal "alice"
# NOTE: principals need the harness's identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway

# Step: client "bob" acts as principal "bob"
# NOTE: principals need the harness's identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway

# Step: "alice" calls "write" with {"token":"$op1"} without a key
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-b14159d8"},"name":"probe.write.e0989ce3"}}' > "$TMP/x01.req"
mcp x01 'alice: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Protocol-Version: 2025-11-25' \
  -H 'X-Principal-Token: eyJhbGciOiJFUzI1NiIsImtpZCI6Ik11UG5XWlFncGN3enp2c1hWeVhvWlFMQmN0Z0I3MThHVG1LVnRwdEp4bEkiLCJ0eXAiOiJKV1QifQ.eyJhdWQiOiJtY3Bjb25mb3JtIiwiZXhwIjoxNzk2MjM2NTg4LCJpYXQiOjE3OTYyMzU5ODgsImlzcyI6Imh0dHA6Ly8xMjcuMC4wLjE6Mzc5MDEiLCJqdGkiOiJiODFkMmVmNi1jZTQzLTQ0MmQtYTAyYS1mNjBkZGYzN2UzNjgiLCJzdWIiOiJhbGljZS1jNDFiY2YzZiJ9.xNAh97roTieOJd5AMgK7Te1GY2htz1AH6BWwi1ePx6p-4PN2NG2tryE62a7-ir5WYdYyI1ExFvTIx5U0QzR5wA'

# Step: "alice" gets a result
echo '-- then: "alice" gets a result'

# Step: "bob" calls "write" with {"token":"$op1"} without a key
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-b14159d8"},"name":"probe.write.e0989ce3"}}' > "$TMP/x02.req"
mcp x02 'bob: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Protocol-Version: 2025-11-25' \
  -H 'X-Principal-Token: eyJhbGciOiJFUzI1NiIsImtpZCI6Ik11UG5XWlFncGN3enp2c1hWeVhvWlFMQmN0Z0I3MThHVG1LVnRwdEp4bEkiLCJ0eXAiOiJKV1QifQ.eyJhdWQiOiJtY3Bjb25mb3JtIiwiZXhwIjoxNzk2MjM2NTg4LCJpYXQiOjE3OTYyMzU5ODgsImlzcyI6Imh0dHA6Ly8xMjcuMC4wLjE6Mzc5MDEiLCJqdGkiOiIzMTczN2IwMi05NGMyLTQ3YjctOTZiZi1lM2E0OGRhZjJjMzEiLCJzdWIiOiJib2ItMjU2NDlmYjcifQ.VMKw0VofV5pxdHW-lswEdHaKPad9y5FlaTLrPhH1dzW1VcNJ6Xa5oP1-iyfR8YHvfHiB0VhF5PTnCV0bnLz7mg'

# Step: "bob" gets a result with a new receipt
echo '-- then: "bob" gets a result with a new receipt'

# Step: the probe saw "$op1" dispatched 2 times
echo '-- then: the probe saw "op1-b14159d8" dispatched 2 times'

# Step: the ledger has 2 debits and 0 refunds
echo '-- then: the ledger has 2 debits and 0 refunds'

# ---- What the gateway did ----
wait
echo
echo "== wallet"; ctl GET "/wallets/$WALLET"
echo "== ledger"; ctl GET "/wallets/$WALLET/ledger" | tee "$TMP/ledger.json"
echo "== dispatch log (the gateway's own)"; ctl GET "/dispatches?wallet_id=$WALLET" | tee "$TMP/dispatches.json"
BALANCE=$(ctl GET "/wallets/$WALLET" | number balance)
echo
echo "observed: $(count '"kind":"debit"' "$TMP/ledger.json") debit(s), $(count '"kind":"refund"' "$TMP/ledger.json") refund(s), $(count '"fingerprint":' "$TMP/dispatches.json") dispatch(es), balance $BALANCE ($(( BALANCE - BASE )))"
echo 'expected: 2 debit(s) and 0 refund(s), 2 dispatch(es)'
echo 'recorded run: iga-01 passed'
echo '  ok   alice gets a result: expected a tools/call result with a receipt'
echo '  ok   bob gets a result with a new receipt: expected a result whose receipt is none of [rcpt-a57fee25-7795-427e-b778-74a5a62fa3b2] (a new operation)'
echo '  ok   the probe saw op1-b14159d8 dispatched 2 times: expected 2 dispatch(es) of token op1-b14159d8 at the upstream probe'
echo '  ok   the ledger has 2 debits and 0 refunds: expected 2 debit(s) and 0 refund(s)'
