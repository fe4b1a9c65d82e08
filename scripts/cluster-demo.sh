#!/usr/bin/env bash
# Kuma cluster demo (issue P11, "Several nodes"): PostgreSQL, three Kuma nodes and HAProxy in front, on this
# machine, with one command. Ctrl-C (or SIGTERM) stops everything it started.
#
#   bash scripts/cluster-demo.sh            (or: npm run demo:cluster)
#
# Environment (all optional):
#   KUMA_DEMO_PORT       the balancer's port (default 8080); the nodes listen on the next three ports
#                        (KUMA_DEMO_NODE_PORT, default KUMA_DEMO_PORT+1 .. +3), the stats page on
#                        KUMA_DEMO_STATS_PORT (default KUMA_DEMO_PORT+4), everything on KUMA_DEMO_HOST (127.0.0.1)
#   KUMA_DEMO_RUN_DIR    where logs, pids and the keys go (default: a new /tmp/kuma-cluster.XXXXXX); kept on exit
#   KUMA_DATABASE_URL    use this PostgreSQL instead of starting a throwaway one (its first start prints keys)
#   KUMA_DEMO_MAX_QUEUE  jobs that may wait per model on each node (default 4096), see "Queues" below
#   KUMA_POSTGRES_BIN    the folder with initdb/pg_ctl (default: Debian's newest /usr/lib/postgresql/*/bin)
#   KUMA_HAPROXY         the haproxy binary (default: haproxy on the PATH or in /usr/sbin)
#   KUMA_MODELS_MANIFEST the manifest the demo's own is made from (default models/kuma-models.json; `none` as is)
#   any KUMA_* setting   passed to every node (README "Configuration"); the demo sets KUMA_HOST, KUMA_PORT,
#                        KUMA_DATABASE_URL and KUMA_MODELS_MANIFEST itself, and KUMA_DECODER_MAX_QUEUE (see
#                        "Queues") and KUMA_DRAIN_DELAY_MS (3000: HAProxy's fall × inter + 1 s) unless set
#
# The run dir holds: node1.log … node3.log (each node's stdout/stderr), haproxy.log, postgres.log (when the
# demo started PostgreSQL), node1.pid … node3.pid, haproxy.pid, start-node.sh (`start-node.sh 2` starts node 2
# again, as the script did, and rewrites node2.pid: what the kill test uses), manifest.json, and demo.env
# (KUMA_DEMO_URL, KUMA_DEMO_API_KEY, KUMA_DEMO_ADMIN_KEY, KUMA_DEMO_DATABASE_URL, …; mode 600).
#
# Queues. On a small machine many concurrent requests wait for a model or a decoder. A Kuma node refuses
# work it cannot queue with 503 + Retry-After (a model's `maxQueue` in the manifest, default 16 or as
# models/kuma-models.json sets; KUMA_DECODER_MAX_QUEUE, default 64), which is right for one node, but behind
# a balancer with nothing else to send the work to, a demo that waits is more useful than one that refuses.
# The demo writes its own manifest (the repository's, with maxQueue = KUMA_DEMO_MAX_QUEUE on every model)
# and sets KUMA_DECODER_MAX_QUEUE to the same; a waiting request costs memory (its upload), not CPU.
#
# Node 1 starts alone first and is waited for (banner and /readyz): it runs the migrations and creates the
# dev account and the dev admin key once (printed below); nodes 2 and 3 then start together and find them.
# Works as root (PostgreSQL then runs as the `postgres` user, as it refuses root) and as a normal user.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

HOST="${KUMA_DEMO_HOST:-127.0.0.1}"
LB_PORT="${KUMA_DEMO_PORT:-8080}"
NODE_PORT="${KUMA_DEMO_NODE_PORT:-$((LB_PORT + 1))}"
STATS_PORT="${KUMA_DEMO_STATS_PORT:-$((LB_PORT + 4))}"
MAX_QUEUE="${KUMA_DEMO_MAX_QUEUE:-4096}"
READY_TIMEOUT_S="${KUMA_DEMO_READY_TIMEOUT_S:-300}"
NODES=3

say() { printf '[cluster-demo] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# Debian installs haproxy in /usr/sbin, which a normal user's PATH lacks.
HAPROXY="${KUMA_HAPROXY:-$(PATH="$PATH:/usr/sbin:/usr/local/sbin:/sbin" command -v haproxy || true)}"
[ -n "$HAPROXY" ] || die "haproxy is not installed (Debian: apt-get install -y --no-install-recommends haproxy), or set KUMA_HAPROXY"
command -v curl >/dev/null || die "curl is not installed"
[ -d node_modules/tsx ] || die "node_modules/tsx is missing: run npm install first"

# The balancer, the nodes and the stats page need their ports free: a Kuma already serving on 8080 (npm start)
# would otherwise share the balancer's port (HAProxy binds with SO_REUSEPORT) and take half its connections.
port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
for port in "$LB_PORT" "$NODE_PORT" "$((NODE_PORT + 1))" "$((NODE_PORT + 2))" "$STATS_PORT"; do
  if port_in_use "$port"; then
    die "port $port on $HOST is in use (another Kuma, e.g. npm start?): stop it, or move the demo with KUMA_DEMO_PORT=<port>"
  fi
done

if [ -n "${KUMA_DEMO_RUN_DIR:-}" ]; then
  RUN="$KUMA_DEMO_RUN_DIR"
  mkdir -p "$RUN"
else
  RUN="$(mktemp -d /tmp/kuma-cluster.XXXXXX)"
fi
RUN="$(cd "$RUN" && pwd)"
chmod 700 "$RUN" # the dev keys land in node1.log and demo.env

PG_DIR=""
PG_BIN=""
AS_PG=() # the command prefix that runs PostgreSQL's binaries (runuser as root)

# ---------------------------------------------------------------- stopping everything (Ctrl-C, TERM, exit)
STOPPING=0
NODE_PIDS=()
HAPROXY_PID=""
# is_ours PID WORD: PID is a live process whose command line contains WORD.
is_ours() {
  [ -n "$1" ] && [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}
cleanup() {
  local status=$?
  [ "$STOPPING" = 1 ] && return
  STOPPING=1
  trap - INT TERM EXIT
  say "stopping…"
  set +e # stop all that can be stopped
  local f pid pids=()
  # The pids this script started, and those in the pid files now (a node started again by start-node.sh);
  # each checked to still be ours (a pid of a process that died could have been reused).
  for pid in "$HAPROXY_PID" "$(cat "$RUN/haproxy.pid" 2>/dev/null)"; do
    is_ours "$pid" haproxy && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${NODE_PIDS[@]}"; do is_ours "$pid" src/main.ts && pids+=("$pid"); done
  for f in "$RUN"/node*.pid; do
    pid="$(cat "$f" 2>/dev/null)"
    is_ours "$pid" src/main.ts && pids+=("$pid")
  done
  # Nodes get SIGTERM (graceful: in-flight work finishes within KUMA_SHUTDOWN_GRACE_MS), then SIGKILL.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  local waited=0
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 150 ]; do sleep 0.1; waited=$((waited + 1)); done
    kill -KILL "$pid" 2>/dev/null
  done
  if [ -n "$PG_DIR" ] && [ -d "$PG_DIR/data" ]; then
    "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    cp "$PG_DIR/postgres.log" "$RUN/postgres.log" 2>/dev/null || true
    rm -rf "$PG_DIR"
  fi
  say "stopped; logs are in $RUN"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- PostgreSQL
find_pg_bin() {
  if [ -n "${KUMA_POSTGRES_BIN:-}" ]; then echo "$KUMA_POSTGRES_BIN"; return; fi
  local v
  for v in $(ls /usr/lib/postgresql 2>/dev/null | sort -rn); do
    if [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then echo "/usr/lib/postgresql/$v/bin"; return; fi
  done
  if command -v initdb >/dev/null; then dirname "$(command -v initdb)"; return; fi
}

if [ -n "${KUMA_DATABASE_URL:-}" ]; then
  DATABASE_URL="$KUMA_DATABASE_URL"
  say "using the PostgreSQL at KUMA_DATABASE_URL"
else
  PG_BIN="$(find_pg_bin)"
  [ -n "$PG_BIN" ] || die "no PostgreSQL binaries (Debian: apt-get install -y postgresql), or set KUMA_DATABASE_URL"
  PG_DIR="$(mktemp -d /tmp/kuma-cluster-pg.XXXXXX)"
  if [ "$(id -u)" = 0 ]; then
    # initdb and postgres refuse to run as root: the cluster belongs to the postgres system user.
    id -u postgres >/dev/null 2>&1 || die "running as root needs the postgres system user (Debian's postgresql package creates it)"
    chown postgres:postgres "$PG_DIR"
    AS_PG=(runuser -u postgres --)
    PG_USER=postgres
  else
    AS_PG=()
    PG_USER="$(id -un)"
  fi
  chmod 700 "$PG_DIR"
  echo "$PG_DIR" >"$RUN/postgres.dir"
  say "starting PostgreSQL in $PG_DIR (Unix socket only)"
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U "$PG_USER" -A trust -E UTF8 --locale=C >"$RUN/initdb.log" 2>&1 ||
    die "initdb failed: see $RUN/initdb.log"
  # No TCP port: the socket in PG_DIR is all the nodes need on one machine (and nothing can collide).
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$PG_DIR' -c max_connections=100" start >/dev/null ||
    die "PostgreSQL did not start: see $PG_DIR/postgres.log"
  "${AS_PG[@]}" "$PG_BIN/createdb" -h "$PG_DIR" -U "$PG_USER" kuma
  DATABASE_URL="postgres://$PG_USER@/kuma?host=$PG_DIR"
fi

# ---------------------------------------------------------------- the nodes
# The repository's manifest (or KUMA_MODELS_MANIFEST's) with every model's maxQueue raised (see "Queues");
# directories made absolute, since a manifest's relative directories resolve against its own folder.
SRC_MANIFEST="${KUMA_MODELS_MANIFEST:-$ROOT/models/kuma-models.json}"
DEMO_MANIFEST="$RUN/manifest.json"
if [ "$SRC_MANIFEST" = none ]; then DEMO_MANIFEST=none; else node -e '
  const fs = require("fs"), path = require("path");
  const [src, dst, maxQueue] = process.argv.slice(1);
  const m = JSON.parse(fs.readFileSync(src, "utf8"));
  for (const e of m.models) { e.dir = path.resolve(path.dirname(src), e.dir); e.maxQueue = Number(maxQueue); }
  fs.writeFileSync(dst, JSON.stringify(m, null, 2) + "\n");
' "$SRC_MANIFEST" "$DEMO_MANIFEST" "$MAX_QUEUE"; fi

# start-node.sh N: starts node N in the background as this script does, writes its pid file and returns.
# Everything a node needs is in this file, so a node killed by a test can be started again the same way.
cat >"$RUN/start-node.sh" <<EOF
#!/usr/bin/env bash
# Starts Kuma node \$1 (1..$NODES) of the demo in $RUN; its output goes to node\$1.log (appended).
set -euo pipefail
n="\$1"
cd $(printf '%q' "$ROOT")
export KUMA_HOST=$(printf '%q' "$HOST")
export KUMA_PORT=\$(( $NODE_PORT + n - 1 ))
export KUMA_DATABASE_URL=$(printf '%q' "$DATABASE_URL")
export KUMA_MODELS_MANIFEST=$(printf '%q' "$DEMO_MANIFEST")
export KUMA_DECODER_MAX_QUEUE=$(printf '%q' "${KUMA_DECODER_MAX_QUEUE:-$MAX_QUEUE}")
# Stop receiving new requests before stopping to accept them: HAProxy needs fall x inter = 2 s to mark a
# draining node down (deploy/haproxy/kuma.cfg).
export KUMA_DRAIN_DELAY_MS=$(printf '%q' "${KUMA_DRAIN_DELAY_MS:-3000}")
echo "=== node \$n starting \$(date -u +%FT%T.%3NZ) on port \$KUMA_PORT" >>$(printf '%q' "$RUN")/node\$n.log
# What npm start runs, without the tsx CLI's wrapper process: the pid written is the server's own, so that a
# SIGKILL sent to it kills the server (the tsx CLI runs the server as its child, which would outlive it).
# setsid: its own session, so that the terminal's Ctrl-C reaches the script (which stops it in order), not it.
setsid node --import tsx src/main.ts >>$(printf '%q' "$RUN")/node\$n.log 2>&1 </dev/null &
echo \$! >$(printf '%q' "$RUN")/node\$n.pid
EOF
chmod 700 "$RUN/start-node.sh"

port_of() { echo $((NODE_PORT + $1 - 1)); }

# Waits until node N answers /readyz with 200 (and, for node 1, has printed its banner).
wait_ready() {
  local n="$1" port pid deadline
  port="$(port_of "$n")"
  deadline=$((SECONDS + READY_TIMEOUT_S))
  while :; do
    pid="$(cat "$RUN/node$n.pid")"
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$RUN/node$n.log" >&2; die "node $n exited during start (log: $RUN/node$n.log)"; }
    if curl -fsS -o /dev/null "http://$HOST:$port/readyz" 2>/dev/null &&
      { [ "$n" != 1 ] || grep -q 'Kuma is listening on' "$RUN/node1.log"; }; then
      return 0
    fi
    [ "$SECONDS" -lt "$deadline" ] || die "node $n not ready after ${READY_TIMEOUT_S}s (log: $RUN/node$n.log)"
    sleep 0.5
  done
}

# Environment of the nodes that the user set: shown, so that a run can be told apart from another.
say "run dir: $RUN"
say "starting node 1 on $HOST:$(port_of 1) (migrations, dev account, demo models)…"
bash "$RUN/start-node.sh" 1
NODE_PIDS+=("$(cat "$RUN/node1.pid")")
wait_ready 1
say "node 1 ready; starting nodes 2 and 3 on $HOST:$(port_of 2), $HOST:$(port_of 3)…"
bash "$RUN/start-node.sh" 2
NODE_PIDS+=("$(cat "$RUN/node2.pid")")
bash "$RUN/start-node.sh" 3
NODE_PIDS+=("$(cat "$RUN/node3.pid")")
wait_ready 2
wait_ready 3

# ---------------------------------------------------------------- HAProxy
export KUMA_LB_BIND="$HOST:$LB_PORT"
export KUMA_LB_STATS_BIND="$HOST:$STATS_PORT"
export KUMA_NODE1="$HOST:$(port_of 1)" KUMA_NODE2="$HOST:$(port_of 2)" KUMA_NODE3="$HOST:$(port_of 3)"
"$HAPROXY" -c -q -f deploy/haproxy/kuma.cfg || die "deploy/haproxy/kuma.cfg is not valid for this HAProxy"
"$HAPROXY" -db -f deploy/haproxy/kuma.cfg >>"$RUN/haproxy.log" 2>&1 </dev/null &
HAPROXY_PID=$!
echo "$HAPROXY_PID" >"$RUN/haproxy.pid"
deadline=$((SECONDS + 30))
until curl -fsS -o /dev/null "http://$HOST:$LB_PORT/readyz" 2>/dev/null; do
  kill -0 "$(cat "$RUN/haproxy.pid")" 2>/dev/null || { tail -n 20 "$RUN/haproxy.log" >&2; die "haproxy exited"; }
  [ "$SECONDS" -lt "$deadline" ] || die "the balancer does not answer on $HOST:$LB_PORT"
  sleep 0.2
done

# ---------------------------------------------------------------- what to use
# The banner of node 1 (src/main.ts) holds the keys on the line after their announcement, indented.
key_after() { grep -A2 "$1" "$RUN/node1.log" | grep -oE '^ +[A-Za-z0-9_.-]+$' | head -n1 | tr -d ' ' || true; }
API_KEY="$(key_after 'Its API key')"
ADMIN_KEY="$(key_after 'admin key for the admin API')"
URL="http://$HOST:$LB_PORT"
umask 077
cat >"$RUN/demo.env" <<EOF
KUMA_DEMO_URL=$URL
KUMA_DEMO_STATS_URL=http://$HOST:$STATS_PORT/stats
KUMA_DEMO_API_KEY=$API_KEY
KUMA_DEMO_ADMIN_KEY=$ADMIN_KEY
KUMA_DEMO_DATABASE_URL=$DATABASE_URL
KUMA_DEMO_NODES=$HOST:$(port_of 1),$HOST:$(port_of 2),$HOST:$(port_of 3)
KUMA_DEMO_RUN_DIR=$RUN
EOF
cat <<EOF

Kuma cluster is up: three nodes behind HAProxy, one PostgreSQL.

  API (balancer)  $URL/openai/v1        (Kuma Studio: $URL/)
  HAProxy stats   http://$HOST:$STATS_PORT/stats
  nodes           $HOST:$(port_of 1) $HOST:$(port_of 2) $HOST:$(port_of 3)   (each answer names its node in x-kuma-backend)
  PostgreSQL      $DATABASE_URL
  run dir         $RUN   (logs, pids; start-node.sh N restarts node N)
  dev API key     ${API_KEY:-(none: the store already had accounts)}
  dev admin key   ${ADMIN_KEY:-(none: the store already had an admin key)}

Try: curl -i -H "Authorization: Bearer ${API_KEY:-<key>}" $URL/openai/v1/models
Ctrl-C stops everything.
EOF
echo "cluster-demo: ready $RUN/demo.env"

# Until Ctrl-C / TERM: a node that dies is reported (HAProxy takes it out); the demo ends if HAProxy does.
while kill -0 "$(cat "$RUN/haproxy.pid")" 2>/dev/null; do sleep 1; done
die "haproxy exited (log: $RUN/haproxy.log)"
