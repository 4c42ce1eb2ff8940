#!/usr/bin/env bash
# mcpconform repro iga-01: Another principal on the same API key gets its own operation
#
# Scenario:    iga-01 (principals.feature:13, @must)
# Requirement: The derived key binds the verified principal, so a second principal on the same API key with identical arguments gets its own operation, not the first one's result.
# Source:      review of SEL-498 "make unkeyed /mcp tools/call safe to retry" (Blocking: "Cross-principal replay")
# Recorded:    against url: failed (observed: a result with receipt "rcpt-c7b46295-49cd-4574-956e-293ebff21b01" (HTTP 200); expected: a result whose receipt is none of [rcpt-c7b46295-49cd-4574-956e-293ebff21b01] (a new operation))
#
# Replays what the recorded run sent, in the order it started (what overlapped then
# overlaps now), then observes again what its checks observed and ends with REPRODUCED
# (exit 0) or NOT REPRODUCED (exit 1); 2 when the replay itself could not run.
# Environment: GATEWAY (default http://127.0.0.1:9262); PROBE (a running `mcpconform probe`, e.g. http://127.0.0.1:8720, that the gateway reaches at that address); KEY_28e81a31; TOKEN_ext_alice (a principal token for subject ext-alice that the gateway accepts; without it, IDP: the identity provider the gateway trusts, http://127.0.0.1:9261, e.g. `mcpconform idp --addr 127.0.0.1:9261 --key THE-RUN'S-IDP-KEY`, mints one); TOKEN_ext_bob (a principal token for subject ext-bob that the gateway accepts; without it, IDP: the identity provider the gateway trusts, http://127.0.0.1:9261, e.g. `mcpconform idp --addr 127.0.0.1:9261 --key THE-RUN'S-IDP-KEY`, mints one).
# Needs bash, curl, sed and grep.
# NOTE: alice: write: a principal token from http://127.0.0.1:9261, an identity provider the script cannot register; it takes the token from TOKEN_ext_alice, or mints one at IDP (which must be that issuer, with the recorded run's --idp-key)
# NOTE: bob: write: a principal token from http://127.0.0.1:9261, an identity provider the script cannot register; it takes the token from TOKEN_ext_bob, or mints one at IDP (which must be that issuer, with the recorded run's --idp-key)
# NOTE: alice: write: a credential the replay does not create (a profile's key or a principal's token); the script takes it from KEY_28e81a31
set -uo pipefail

need() { [ -n "${!1:-}" ] || { echo "repro.sh: $2" >&2; echo "NOT REPRODUCED (the replay could not run)"; exit 2; }; }
GATEWAY="${GATEWAY:-http://127.0.0.1:9262}"
GATEWAY="${GATEWAY%/}"
need PROBE "start mcpconform probe and set PROBE to its address (http://HOST:PORT)"
PROBE="${PROBE%/}"
IDP="${IDP:-}"
IDP="${IDP%/}"
need KEY_28e81a31 "set KEY_28e81a31 to the credential whose fingerprint the evidence shows"
RUN="rp$(date +%s)$$-"  # fresh tokens, keys and tool names for each run of the script
TMP=$(mktemp -d)
MISMATCH=0 OBSERVED=0

cleanup() {
  jobs -p | while read -r pid; do kill "$pid" 2>/dev/null || true; done
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

# mint CLAIMS TTL: a principal token with CLAIMS (JSON), fresh times and id, valid TTL
# seconds (negative: already expired), from the identity provider at IDP.
mint() {
  local tok
  [ -n "${IDP:-}" ] || return 1
  tok=$(curl -sS --max-time 30 -X POST -H 'Content-Type: application/json' \
    --data-raw "{\"claims\":$1,\"ttl_seconds\":$2}" "$IDP/idp/v1/token" | field token)
  [ -n "$tok" ] && echo "$tok"
}

curl -sS -o /dev/null --max-time 10 "$GATEWAY/" 2>/dev/null || die "no server answers at GATEWAY=$GATEWAY (set GATEWAY to the gateway's base URL)"
curl -sSf -o /dev/null --max-time 10 "$PROBE/probe/v1" 2>/dev/null || die "no mcpconform probe answers at PROBE=$PROBE (start mcpconform probe; PROBE is its base URL, without /mcp)"

# Principal tokens: fresh ones (new times and id) with the recorded tokens' claims.
PTOKEN_1="${TOKEN_ext_alice:-}"
[ -n "$PTOKEN_1" ] || PTOKEN_1=$(mint '{"aud":"mcpconform","sub":"ext-alice"}' 600) || die 'set TOKEN_ext_alice to a principal token for subject ext-alice that the gateway accepts, or IDP to the identity provider it trusts (the recorded run'\''s: mcpconform idp --addr 127.0.0.1:9261 --key THE-RUN'\''S-IDP-KEY)'
PTOKEN_2="${TOKEN_ext_bob:-}"
[ -n "$PTOKEN_2" ] || PTOKEN_2=$(mint '{"aud":"mcpconform","sub":"ext-bob"}' 600) || die 'set TOKEN_ext_bob to a principal token for subject ext-bob that the gateway accepts, or IDP to the identity provider it trusts (the recorded run'\''s: mcpconform idp --addr 127.0.0.1:9261 --key THE-RUN'\''S-IDP-KEY)'

# #1 alice: write (alice lane)
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpconform","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"token":"'"${RUN}"'r44c8c46c-op1-215b03c8"},"name":"ext.write"}}' > "$TMP/x01.req"
mcp --settle x01 '#1 alice: write' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${KEY_28e81a31}" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Method: tools/call' \
  -H 'Mcp-Name: ext.write' \
  -H 'Mcp-Protocol-Version: 2026-07-28' \
  -H 'X-Principal-Token: '"${PTOKEN_1}" &
PID_x01=$!
await "$PID_x01"

# #2 bob: write (bob lane)
printf '%s' '{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpconform","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"token":"'"${RUN}"'r44c8c46c-op1-215b03c8"},"name":"ext.write"}}' > "$TMP/x02.req"
mcp --settle x02 '#2 bob: write' '/mcp' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'Authorization: Bearer '"${KEY_28e81a31}" \
  -H 'Content-Type: application/json' \
  -H 'Mcp-Method: tools/call' \
  -H 'Mcp-Name: ext.write' \
  -H 'Mcp-Protocol-Version: 2026-07-28' \
  -H 'X-Principal-Token: '"${PTOKEN_2}" &
PID_x02=$!
await "$PID_x02"

# ---- Observe again what the recorded run's violated checks observed ----
wait
echo
echo 'check: bob gets a result with a new receipt'
observe 'how #2 bob: write ended' "$(kind x02)" 'replay'
echo 'check: the probe saw r44c8c46c-op1-215b03c8 dispatched 2 times'
observe 'dispatches of r44c8c46c-op1-215b03c8 at the probe' "$(probe_count "${RUN}"'r44c8c46c-op1-215b03c8')" 1
echo
verdict
