#!/usr/bin/env bash
# mcpconform repro twins-01: Keyed twins released together by a barrier dispatch once
#
# Scenario:    twins-01 (twins.feature:11, @must)
# Requirement: N concurrent identical calls: exactly one dispatch, one debit; every other answer is the same receipt or a retryable in-progress.
# Source:      seeds/concurrent-enqueue-duplicate-review.json (F1: "Concurrent idempotent enqueues can create duplicate runs")
# Recorded:    against reference (sqlite): passed
#
# Replays the scenario's MCP exchanges with curl against a running gateway that
# serves the conformance control API (docs/control-api.md), then prints the wallet,
# its ledger and the gateway's dispatch log. Needs bash, curl, sed and grep.
#   CONTROL_TOKEN=... [GATEWAY=http://127.0.0.1:8719] bash repro.sh
# Request bodies, tool names and keys are the recorded run's; the wallet, the API key
# and the tools (aliases of partner.echo) are made fresh by this script.
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

# Step: a wallet with 1000 credits and an API key
WALLET=$(ctl POST /wallets '{"balance":1000}' | field wallet_id)
KEY=$(ctl POST /keys "{\"wallet_id\":\"$WALLET\"}" | field api_key)
BASE=$(ctl GET "/wallets/$WALLET" | number balance)
echo "wallet $WALLET, balance $BASE"

# Step: an upstream tool "write" priced 3 credits
# "write" forwarded to the harness's upstream probe; here it is an alias of partner.echo.
ctl POST /tools '{"name":"probe.write.268373d7","local_tool":"partner.echo","price":3,"read_only":false,"approval":false}' >/dev/null

# Step: 32 clients call "write" with {"token":"$op1"} using key "$k1" at once
# 32 identical calls at once, each from its own client.
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x28.req"
mcp x28 'twin-00: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x21.req"
mcp x21 'twin-01: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x25.req"
mcp x25 'twin-02: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x24.req"
mcp x24 'twin-03: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x26.req"
mcp x26 'twin-04: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x23.req"
mcp x23 'twin-05: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x12.req"
mcp x12 'twin-06: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x13.req"
mcp x13 'twin-07: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x32.req"
mcp x32 'twin-08: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x27.req"
mcp x27 'twin-09: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x20.req"
mcp x20 'twin-10: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x01.req"
mcp x01 'twin-11: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x22.req"
mcp x22 'twin-12: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x19.req"
mcp x19 'twin-13: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x17.req"
mcp x17 'twin-14: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x16.req"
mcp x16 'twin-15: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x15.req"
mcp x15 'twin-16: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x11.req"
mcp x11 'twin-17: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x10.req"
mcp x10 'twin-18: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x09.req"
mcp x09 'twin-19: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x07.req"
mcp x07 'twin-20: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x18.req"
mcp x18 'twin-21: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x14.req"
mcp x14 'twin-22: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x30.req"
mcp x30 'twin-23: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x29.req"
mcp x29 'twin-24: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x05.req"
mcp x05 'twin-25: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x02.req"
mcp x02 'twin-26: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x03.req"
mcp x03 'twin-27: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x08.req"
mcp x08 'twin-28: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x31.req"
mcp x31 'twin-29: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x06.req"
mcp x06 'twin-30: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-23999484"},"name":"probe.write.268373d7"}}' > "$TMP/x04.req"
mcp x04 'twin-31: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-1bd9cfbf"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
wait

# Step: exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"
echo '-- then: exactly one operation ran and every answer is its receipt or retryable "idempotency_in_progress"'

# Step: the probe saw "$op1" dispatched 1 time
echo '-- then: the probe saw "$op1" dispatched 1 time'

# Step: the ledger has 1 debit and 0 refunds
echo '-- then: the ledger has 1 debit and 0 refunds'

# ---- What the gateway did ----
wait
echo
echo "== wallet"; ctl GET "/wallets/$WALLET"
echo "== ledger"; ctl GET "/wallets/$WALLET/ledger" | tee "$TMP/ledger.json"
echo "== dispatch log (the gateway's own)"; ctl GET "/dispatches?wallet_id=$WALLET" | tee "$TMP/dispatches.json"
BALANCE=$(ctl GET "/wallets/$WALLET" | number balance)
echo
echo "observed: $(count '"kind":"debit"' "$TMP/ledger.json") debit(s), $(count '"kind":"refund"' "$TMP/ledger.json") refund(s), $(count '"fingerprint":' "$TMP/dispatches.json") dispatch(es), balance $BALANCE ($(( BALANCE - BASE )))"
echo 'expected: 1 debit(s) and 0 refund(s), 1 dispatch(es)'
echo 'recorded run: twins-01 passed'
echo '  ok   exactly one operation ran: expected one receipt shared by every result, every other answer retryable "idempotency_in_progress"'
echo '  ok   the probe saw op1-23999484 dispatched 1 times: expected 1 dispatch(es) of token op1-23999484 at the upstream probe'
echo '  ok   the ledger has 1 debits and 0 refunds: expected 1 debit(s) and 0 refund(s)'
