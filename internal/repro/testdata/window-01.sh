#!/usr/bin/env bash
# mcpconform repro window-01: A retry 1 ms after a bucket boundary replays
#
# Scenario:    window-01 (windows.feature:11, @must)
# Requirement: Before minting, the previous bucket's key is looked up and joined, so a retry 1 ms after the boundary replays instead of dispatching again.
# Source:      seeds/sel-498-unkeyed-retry-review.txt (Blocking: "Bucket boundary breaks the SEL-498 acceptance")
# Recorded:    against reference (sqlite): passed
#
# Replays what the recorded run sent, in the order it started (what overlapped then
# overlaps now), then observes again what its checks observed and ends with REPRODUCED
# (exit 0) or NOT REPRODUCED (exit 1); 2 when the replay itself could not run.
# Environment: GATEWAY (default http://127.0.0.1:8719); CONTROL_TOKEN (the gateway's control API token); PROBE (a running `mcpconform probe`, e.g. http://127.0.0.1:8720, that the gateway reaches at that address).
# Needs bash, curl, sed and grep.
set -uo pipefail

need() { [ -n "${!1:-}" ] || { echo "repro.sh: $2" >&2; echo "NOT REPRODUCED (the replay could not run)"; exit 2; }; }
GATEWAY="${GATEWAY:-http://127.0.0.1:8719}"
GATEWAY="${GATEWAY%/}"
need CONTROL_TOKEN "set CONTROL_TOKEN to the --control-token of the gateway"
need PROBE "start mcpconform probe and set PROBE to its address (http://HOST:PORT)"
PROBE="${PROBE%/}"
RUN="rp$(date +%s)$$-"  # fresh tokens, keys and tool names for each run of the script
TMP=$(mktemp -d)
MISMATCH=0 OBSERVED=0

cleanup() {
  jobs -p | while read -r pid; do kill "$pid" 2>/dev/null || true; done
  ctl DELETE /clock >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

die() { echo "repro.sh: $*" >&2; echo "NOT REPRODUCED (the replay could not run)"; exit 2; }

# ctl METHOD PATH [BODY]: one control API call; prints the answer, fails on an error status.
ctl() {
  local method=$1 path=$2 body=${3:-} status
  local args=(-sS --max-time 60 -X "$method" -H "Authorization: Bearer $CONTROL_TOKEN" -o "$TMP/ctl.out" -w '%{http_code}')
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-raw "$body"); fi
  status=$(curl "${args[@]}" "$GATEWAY/control$path") || status=000
  cat "$TMP/ctl.out" 2>/dev/null
  if [ "${status#2}" = "$status" ]; then
    echo "repro.sh: control API $method $path: HTTP $status" >&2
    return 1
  fi
}

# probe ACTION BODY: one call of the probe's observation API.
probe() {
  curl -sS --max-time 70 -X POST -H 'Content-Type: application/json' --data-raw "$2" "$PROBE/probe/v1/$1"
}

# probe_count TOKEN: how often the probe saw TOKEN dispatched.
probe_count() {
  curl -sS --max-time 30 -G --data-urlencode "token=$1" "$PROBE/probe/v1/count" | number count
}

# mcp [--settle] NAME LABEL PATH [curl args]: POST $TMP/NAME.req; keeps the answer, its
# headers and status. With --settle (the recorded call ended in a result) an answer of
# the retryable idempotency_in_progress is sent again after a backoff, as the harness's
# client does: a busy store may answer so before the call is admitted.
mcp() {
  local settle=0; [ "$1" = --settle ] && { settle=1; shift; }
  local name=$1 label=$2 path=$3 status tries=0 delay=10; shift 3
  while :; do
    status=$(curl -sS --max-time 60 -X POST "$GATEWAY$path" "$@" --data-binary "@$TMP/$name.req" \
      -o "$TMP/$name.body" -D "$TMP/$name.headers" -w '%{http_code}' 2>"$TMP/$name.err") || status=000
    touch "$TMP/$name.body" "$TMP/$name.headers"
    [ "$settle" = 1 ] && [ "$tries" -lt 10 ] && grep -q '"reason":"idempotency_in_progress"' "$TMP/$name.body" || break
    tries=$((tries + 1))
    sleep "$(printf '0.%03d' "$delay")"; delay=$((delay * 2 > 320 ? 320 : delay * 2))
  done
  echo "$status" > "$TMP/$name.status"
  local again=""; [ "$tries" -gt 0 ] && again=" (sent again after $tries in-progress answers)"
  echo "-> $label: HTTP $status $(kind "$name")$again"
}

# kind NAME: how answer NAME ended, as the generator named it for the recorded run.
kind() {
  local body status
  body=$(cat "$TMP/$1.body" 2>/dev/null); status=$(cat "$TMP/$1.status" 2>/dev/null || echo 000)
  if [ "$status" = 000 ]; then echo "no answer"
  elif grep -q '"error":{' <<<"$body"; then
    local r; r=$(grep -o '"reason":"[^"]*"' <<<"$body" | head -n 1 | sed 's/^"reason":"\(.*\)"$/\1/')
    if [ -n "$r" ]; then echo "refusal $r"; else echo "refusal"; fi
  elif grep -q '"io\.mcpconform/receipt":{[^}]*"replayed":true' <<<"$body"; then echo "replay"
  elif grep -q '"result":' <<<"$body"; then echo "result"
  else echo "http $status"
  fi
}

# distinct NAME...: how many distinct receipts the answers carry.
distinct() {
  local n
  for n in "$@"; do grep -o '"io\.mcpconform/receipt":{[^}]*"id":"[^"]*"' "$TMP/$n.body" | head -n 1 | sed 's/.*"id":"\([^"]*\)"$/\1/'; done | sort -u | grep -c . || true
}

# await PID...: waits for requests the recorded run saw answered by now, at most 5 s in
# all: in the replay another twin may be the one held at the probe. The final wait
# collects what is left.
await() {
  local i pid left
  for i in $(seq 100); do
    left=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.05
  done
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then echo "-- still waiting for an answer the recorded run had by now; going on"
    else wait "$pid" || true; fi
  done
}

# at_gate GATE N: waits until N requests wait at GATE (at most 5 s).
at_gate() {
  local i
  for i in $(seq 500); do
    [ "$(ls "$TMP" | grep -c "^$1\.")" -ge "$2" ] && { sleep 0.02; return; }
    sleep 0.01
  done
}

# most_debits FILE: the most debits one receipt has in a ledger answer.
most_debits() {
  tr '{' '\n' < "$1" | grep '"kind":"debit"' | grep -o '"receipt":"[^"]*"' | sort | uniq -c | sort -rn | head -n 1 | sed 's/^ *\([0-9]*\).*/\1/'
}

# more_than_one N: yes when N > 1.
more_than_one() { if [ "${1:-0}" -gt 1 ] 2>/dev/null; then echo yes; else echo no; fi; }

# ended NAME TICKS: "answered" when request NAME has its answer within TICKS × 50 ms
# (mcp writes its status last), else "still waiting".
ended() {
  local i
  for i in $(seq "$2"); do [ -e "$TMP/$1.status" ] && { echo answered; return; }; sleep 0.05; done
  echo "still waiting"
}

# observe WHAT GOT WANT: one observation of the replay beside the recorded run's.
observe() {
  OBSERVED=$((OBSERVED + 1))
  if [ "$2" = "$3" ]; then echo "  same:      $1: $2"
  else echo "  different: $1: $2 (the recorded run: $3)"; MISMATCH=1
  fi
}

verdict() {
  if [ "$OBSERVED" -eq 0 ]; then
    echo "NOT REPRODUCED (nothing the recorded run's checks looked at can be observed again)"; exit 1
  elif [ "$MISMATCH" -eq 0 ]; then
    echo "REPRODUCED"; exit 0
  fi
  echo "NOT REPRODUCED"; exit 1
}

# field NAME: the first string value of "NAME" in the JSON on stdin.
field() { { grep -o "\"$1\":\"[^\"]*\"" || true; } | head -n 1 | sed 's/^.*:"\(.*\)"$/\1/'; }

# number NAME: the first number value of "NAME" in the JSON on stdin.
number() { { grep -o "\"$1\":-\{0,1\}[0-9.]*" || true; } | head -n 1 | sed 's/^.*://'; }

# header NAME: a response header's value from a curl -D dump on stdin.
header() { { grep -i "^$1:" || true; } | head -n 1 | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r\n'; }

# count PATTERN FILE: how often PATTERN occurs in FILE.
count() { { grep -o "$1" "$2" || true; } | wc -l | tr -d ' '; }

curl -sS -o /dev/null --max-time 10 "$GATEWAY/" 2>/dev/null || die "no server answers at GATEWAY=$GATEWAY (set GATEWAY to the gateway's base URL)"
curl -sSf -o /dev/null --max-time 10 "$PROBE/probe/v1" 2>/dev/null || die "no mcpconform probe answers at PROBE=$PROBE (start mcpconform probe; PROBE is its base URL, without /mcp)"
ctl POST '/wallets' '{"balance":100}' > "$TMP/c01.body" || die 'control call c01 (POST) failed'
C01_WALLET_ID=$(field wallet_id < "$TMP/c01.body")
ctl POST '/keys' '{"wallet_id":"'"${C01_WALLET_ID}"'"}' > "$TMP/c02.body" || die 'control call c02 (POST) failed'
C02_API_KEY=$(field api_key < "$TMP/c02.body")
C02_KEY_ID=$(field key_id < "$TMP/c02.body")
ctl GET '/wallets/'"${C01_WALLET_ID}" > "$TMP/c03.body" || die 'control call c03 (GET) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}"'/ledger' > "$TMP/c04.body" || die 'control call c04 (GET) failed'
ctl POST '/tools' '{"name":"'"${RUN}"'probe.write.e135da10","price":3,"read_only":false,"approval":false,"upstream_url":"'"${PROBE}"'/mcp","upstream_tool":"probe.write"}' > "$TMP/c05.body" || die 'control call c05 (POST) failed'
ctl PUT '/clock' '{"now":"2026-12-03T14:07:59.999Z"}' > "$TMP/c06.body" || die 'control call c06 (PUT) failed'

# #1 initialize (A lane)
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"mcpconform","version":"1"},"protocolVersion":"2025-11-25"}}' > "$TMP/x01.req"
mcp --settle x01 '#1 initialize' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${C02_API_KEY}" \
  -H 'Content-Type: application/json' &
PID_x01=$!
await "$PID_x01"
SESSION_x01=$(header Mcp-Session-Id < "$TMP/x01.headers")

# #2 initialized (A lane)
printf '%s' '{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}' > "$TMP/x02.req"
mcp x02 '#2 initialized' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${C02_API_KEY}" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Protocol-Version: 2025-11-25' \
  -H 'Mcp-Session-Id: '"${SESSION_x01}" &
PID_x02=$!
await "$PID_x02"

# #3 A: write (A lane)
printf '%s' '{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"'"${RUN}"'r709ee676-op1-3fc22f10"},"name":"'"${RUN}"'probe.write.e135da10"}}' > "$TMP/x03.req"
mcp --settle x03 '#3 A: write' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${C02_API_KEY}" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Protocol-Version: 2025-11-25' \
  -H 'Mcp-Session-Id: '"${SESSION_x01}" &
PID_x03=$!
await "$PID_x03"
ctl POST '/clock/advance' '{"by":"2ms"}' > "$TMP/c07.body" || die 'control call c07 (POST) failed'

# #4 A: retry (A lane)
printf '%s' '{"id":3,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"token":"'"${RUN}"'r709ee676-op1-3fc22f10"},"name":"'"${RUN}"'probe.write.e135da10"}}' > "$TMP/x04.req"
mcp --settle x04 '#4 A: retry' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${C02_API_KEY}" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Protocol-Version: 2025-11-25' \
  -H 'Mcp-Session-Id: '"${SESSION_x01}" &
PID_x04=$!
await "$PID_x04"
ctl GET '/wallets/'"${C01_WALLET_ID}" > "$TMP/c08.body" || die 'control call c08 (GET) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}"'/ledger' > "$TMP/c09.body" || die 'control call c09 (GET) failed'
ctl DELETE '/clock' > "$TMP/c10.body" || die 'control call c10 (DELETE) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}" > "$TMP/c11.body" || die 'control call c11 (GET) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}"'/ledger' > "$TMP/c12.body" || die 'control call c12 (GET) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}" > "$TMP/c13.body" || die 'control call c13 (GET) failed'
ctl GET '/wallets/'"${C01_WALLET_ID}"'/ledger' > "$TMP/c14.body" || die 'control call c14 (GET) failed'

# ---- Observe again what the recorded run's checks (none was violated) observed ----
wait
echo
echo 'check: A gets a result'
observe 'how #3 A: write ended' "$(kind x03)" 'result'
echo 'check: the last answer of A replays answer 1 of A'
observe 'how #4 A: retry ended' "$(kind x04)" 'replay'
observe 'distinct receipts among x04, x03' "$(distinct x04 x03)" 1
echo 'check: the probe saw r709ee676-op1-3fc22f10 dispatched 1 times'
observe 'dispatches of r709ee676-op1-3fc22f10 at the probe' "$(probe_count "${RUN}"'r709ee676-op1-3fc22f10')" 1
echo 'check: the ledger has 1 debits and 0 refunds'
ctl GET '/wallets/'"${C01_WALLET_ID}"'/ledger' > "$TMP/ledger.json" || die 'read the ledger'
observe 'debits in the wallet'\''s ledger' "$(count '"kind":"debit"' "$TMP/ledger.json")" 1
observe 'refunds in the wallet'\''s ledger' "$(count '"kind":"refund"' "$TMP/ledger.json")" 0
echo
verdict
