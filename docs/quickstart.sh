#!/usr/bin/env bash
# The quickstart: every main endpoint of a local server (`make dev`), in
# order, each id captured as it goes. Run it in a second shell:
#
#   bash docs/quickstart.sh
#
# API (default http://127.0.0.1:8090), AUTH (the Auth emulator, default
# 127.0.0.1:9099) and EMAIL (default quickstart@example.com, signed up on
# first use, signed in after) change where it goes. It stops at the first
# answer that is not the one expected. CI runs it against the local server.
set -euo pipefail

API=${API:-http://127.0.0.1:8090}
AUTH=${AUTH:-127.0.0.1:9099}
EMAIL=${EMAIL:-quickstart@example.com}
PASSWORD=${PASSWORD:-quickstart-password}

# json FIELD: reads JSON on stdin and prints one field (a.b.0.c).
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v?.[k];process.stdout.write(typeof v==="object"?JSON.stringify(v):String(v??""))})' "$1"; }

# call EXPECTED METHOD PATH [BODY]: the request as the signed-in user; the
# body answered is printed (and left in $OUT); any other status stops here.
call() {
  local want=$1 method=$2 path=$3 body=${4:-}
  local args=(-s -o /tmp/quickstart.$$ -w '%{http_code}' -X "$method" "$API$path" -H "Authorization: Bearer $TOKEN")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' -d "$body")
  local got
  got=$(curl "${args[@]}")
  OUT=$(cat /tmp/quickstart.$$)
  rm -f /tmp/quickstart.$$
  printf '%-6s %-48s %s\n' "$method" "$path" "$got"
  if [ "$got" != "$want" ]; then
    echo "quickstart: $method $path answered $got, not $want: $OUT" >&2
    exit 1
  fi
}

# stream PATTERN METHOD PATH BODY: a streamed request as the signed-in
# user; its status must be 200 and the whole stream must hold a line
# matching PATTERN, or the script stops here.
stream() {
  local want=$1 method=$2 path=$3 body=$4
  local got
  got=$(curl -sN -o /tmp/quickstart.$$ -w '%{http_code}' -X "$method" "$API$path" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -d "$body")
  OUT=$(cat /tmp/quickstart.$$)
  rm -f /tmp/quickstart.$$
  printf '%-6s %-48s %s (stream)\n' "$method" "$path" "$got"
  if [ "$got" != 200 ] || ! grep -q -- "$want" <<<"$OUT"; then
    echo "quickstart: $method $path (stream) answered $got without $want: $OUT" >&2
    exit 1
  fi
}

# Sign in, or sign up the first time (the Auth emulator takes any password).
signin() {
  curl -s "http://$AUTH/identitytoolkit.googleapis.com/v1/accounts:$1?key=any" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\",\"returnSecureToken\":true}" | json idToken
}
TOKEN=$(signin signInWithPassword)
[ -n "$TOKEN" ] || TOKEN=$(signin signUp)
[ -n "$TOKEN" ] || { echo "quickstart: no ID token from the Auth emulator at $AUTH" >&2; exit 1; }

RUN=$(date +%s)-$RANDOM # this run's keys: a second run starts afresh
call 200 GET /healthz

# A turn starts a session; a second continues it; a retry replays.
call 200 POST /chat "{\"message\":\"Plan a weekend in Lisbon\",\"clientMessageId\":\"q1-$RUN\"}"
SID=$(json sessionId <<<"$OUT")
REPLY=$(json reply.id <<<"$OUT")
call 200 POST /chat "{\"sessionId\":\"$SID\",\"message\":\"And where to eat?\",\"clientMessageId\":\"q2-$RUN\"}"
call 200 POST /chat "{\"sessionId\":\"$SID\",\"message\":\"And where to eat?\",\"clientMessageId\":\"q2-$RUN\"}"
[ "$(json replayed <<<"$OUT")" = true ] || { echo "quickstart: the retry did not replay" >&2; exit 1; }
QUESTION=$(json userMessage.id <<<"$OUT")
SECOND=$(json reply.id <<<"$OUT")

# Streamed: server-sent events.
stream '^event: done' POST /chat "{\"sessionId\":\"$SID\",\"message\":\"Stream it\",\"stream\":true}"

# Sessions.
call 201 POST /sessions '{"title":"Scratch","instructions":"Answer briefly."}'
SCRATCH=$(json id <<<"$OUT")
call 200 GET "/sessions?status=active&limit=20"
call 200 GET "/sessions/$SID"
call 200 PATCH "/sessions/$SID" '{"title":"Lisbon weekend"}'
call 200 GET "/sessions/$SID/messages?order=desc&limit=50"
call 200 GET "/sessions/$SID/context"
VERSION=$(json version <<<"$OUT")

# Messages an app composed itself, only if nothing changed since it read.
call 201 POST "/sessions/$SCRATCH/messages" '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}'
call 201 POST "/sessions/$SID/messages" "{\"ifMatch\":\"$VERSION\",\"messages\":[{\"role\":\"user\",\"content\":\"noted\"},{\"role\":\"assistant\",\"content\":\"ok\"}]}"
call 412 POST "/sessions/$SID/messages" "{\"ifMatch\":\"$VERSION\",\"messages\":[{\"role\":\"user\",\"content\":\"again\"}]}"

# Versions: answer again, edit, and show another version.
call 200 POST /chat "{\"sessionId\":\"$SID\",\"regenerate\":\"$SECOND\"}"
call 200 POST /chat "{\"sessionId\":\"$SID\",\"edit\":\"$QUESTION\",\"message\":\"And where to eat fish?\"}"
SEQ=$(curl -s "$API/sessions/$SID/messages?branch=all" -H "Authorization: Bearer $TOKEN" | json messages.1.seq)
call 200 POST "/sessions/$SID/branch" "{\"seq\":$SEQ}"
call 200 GET "/sessions/$SID/messages?branch=all"

# A reply in progress is stopped through its id (the stream's session
# event names it); this one is stored already.
call 404 POST "/sessions/$SID/replies/$REPLY/stop"

# An app that makes its own summaries stores one of the first exchange.
call 201 POST /sessions '{"title":"Own summaries","memory":{"strategy":"summary_buffer","summaries":"app"}}'
OWN=$(json id <<<"$OUT")
call 201 POST "/sessions/$OWN/messages" '{"messages":[{"role":"user","content":"one"},{"role":"assistant","content":"two"},{"role":"user","content":"three"},{"role":"assistant","content":"four"}]}'
call 201 POST "/sessions/$OWN/compactions" '{"fromSeq":0,"toSeq":1,"summary":"The user counted to two."}'

# Feedback on a reply.
call 200 PUT "/sessions/$SID/messages/$REPLY/feedback" '{"rating":"up","comment":"useful"}'
call 204 DELETE "/sessions/$SID/messages/$REPLY/feedback"

# The app's own tools: the reply asks for a call, the app sends its result.
TOOLS='[{"name":"lookup_order","description":"An order by number","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}]'
call 200 POST /chat "{\"message\":\"Please lookup_order 42\",\"tools\":$TOOLS,\"toolChoice\":\"required\"}"
TSID=$(json sessionId <<<"$OUT")
CALL=$(json toolCalls.0.id <<<"$OUT")
[ "$(json status <<<"$OUT")" = requires_action ] || { echo "quickstart: the reply asked for no call" >&2; exit 1; }
call 200 POST /chat "{\"sessionId\":\"$TSID\",\"tools\":$TOOLS,\"toolResults\":[{\"toolCallId\":\"$CALL\",\"content\":\"shipped Monday\"}]}"

# The Vercel AI SDK's chat protocol (what useChat's transport sends).
stream '"type":"finish"' POST /ai-sdk/chat "{\"id\":\"chat-$RUN\",\"trigger\":\"submit-message\",\"messages\":[{\"id\":\"m-$RUN\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"Hi from useChat\"}]}]}"
call 200 GET "/ai-sdk/chat/chat-$RUN/messages"
call 204 GET "/ai-sdk/chat/chat-$RUN/stream"
call 404 POST "/ai-sdk/chat/chat-$RUN/stop"

# The callable protocol (what the Firebase JS SDK's httpsCallable sends).
call 200 POST /callable/listSessions '{"data":{"limit":5}}'


# Search, usage, models, long-term memory.
call 200 GET "/search?q=Lisbon&limit=5"
call 200 GET /usage
call 200 GET /models
call 200 GET /memory
call 200 PATCH /memory '{"enabled":true}'
call 200 PATCH /memory/profile '{"work":"Plans trips for a living."}'
call 200 PATCH /memory/history '{"earlier":"Planning trips to Portugal."}'
call 404 DELETE /memory/facts/no-such-fact
call 204 DELETE /memory

# The lifecycle: archive, restore, delete (restorable), and the account.
call 200 POST "/sessions/$SCRATCH/archive"
call 200 POST "/sessions/$SCRATCH/restore"
call 200 DELETE "/sessions/$SCRATCH"
call 200 GET /account/export
call 404 GET /sessions/no-such-session
# Erasure: everything the account owns goes at once (the account stays).
call 200 DELETE /account/data
call 404 GET "/sessions/$SID"
echo "quickstart: every endpoint answered as expected"
