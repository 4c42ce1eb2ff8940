#!/usr/bin/env bash
# mcpconform repro lost-01: The client drops the connection while the tool runs
#
# Scenario:    lost-01 (lost.feature:11, @must)
# Requirement: A retry after a lost response gets the original receipt; the tool was dispatched once and charged once.
# Source:      seeds/sel-498-unkeyed-retry-review.txt (Problem: "A retry after a lost response therefore dispatched and charged a second time")
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
  ctl DELETE /faults >/dev/null 2>&1 || true
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

# Step: a wallet with 100 credits and an API key
WALLET=$(ctl POST /wallets '{"balance":100}' | field wallet_id)
KEY=$(ctl POST /keys "{\"wallet_id\":\"$WALLET\"}" | field api_key)
BASE=$(ctl GET "/wallets/$WALLET" | number balance)
echo "wallet $WALLET, balance $BASE"

# Step: an upstream tool "write" priced 3 credits
# "write" forwarded to the harness's upstream probe; here it is an alias of partner.echo.
ctl POST /tools '{"name":"probe.write.802fdccf","local_tool":"partner.echo","price":3,"read_only":false,"approval":false}' >/dev/null

# Step: the probe stalls "$op1"
# The probe is gone; the next dropped call is held by a pause at dispatch.after instead.

# Step: "A" calls "write" with {"token":"$op1"} using key "$k1" and drops the connection once the tool runs
# The harness dropped the connection once its probe saw the tool run; here a pause at
# dispatch.after holds the call after the tool ran, and the client (curl) is killed there.
FAULT_stall=$(ctl POST /faults "{\"point\":\"dispatch.after\",\"action\":\"pause\",\"count\":1,\"match\":{\"tool\":\"probe.write.802fdccf\",\"wallet_id\":\"$WALLET\"}}" | field fault_id)
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-6fe428f9"},"name":"probe.write.802fdccf"}}' > "$TMP/x01.req"
mcp x01 'A: write' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-ad39816a"' \
  -H 'Mcp-Protocol-Version: 2025-11-25' &
# The recorded exchange ended in a transport error: connection closed by the client after sending, answer not read
PID_drop=$!
ctl POST "/faults/$FAULT_stall/await" '{"waiting":1,"timeout":"30s"}' >/dev/null || echo "!! the call never reached dispatch.after"
kill "$PID_drop" 2>/dev/null || true; wait "$PID_drop" 2>/dev/null || true
echo "-- A dropped the connection after the tool ran"

# Step: the probe releases "$op1"
ctl POST "/faults/$FAULT_stall/release" >/dev/null

# Step: "A" retries its last call with a new JSON-RPC id until it is not in progress
# The recorded run retried 2 time(s).
for i in $(seq 1 100); do
  printf '%s' '{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"op1-6fe428f9"},"name":"probe.write.802fdccf"}}' > "$TMP/x02.req"
mcp x02 'A: retry' \
  -H 'Accept: application/json, text/event-stream' \
  -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: "k1-ad39816a"' \
  -H 'Mcp-Protocol-Version: 2025-11-25'
  grep -q '"idempotency_in_progress"' "$TMP/x02.body" || break
  sleep 0.05
done

# Step: "A" gets a result
echo '-- then: "A" gets a result'

# Step: the probe saw "$op1" dispatched 1 time
echo '-- then: the probe saw "op1-6fe428f9" dispatched 1 time'

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
echo 'recorded run: lost-01 passed'
echo '  ok   A gets a result: expected a tools/call result with a receipt'
echo '  ok   the probe saw op1-6fe428f9 dispatched 1 times: expected 1 dispatch(es) of token op1-6fe428f9 at the upstream probe'
echo '  ok   the ledger has 1 debits and 0 refunds: expected 1 debit(s) and 0 refund(s)'
