#!/usr/bin/env bash
# The Cassette demo: starts the reference origin and the three services in a temporary
# folder, shows them answering on their sockets, then stops everything cleanly.
# Usage: deploy/demo.sh [BIN_DIR]   (default .build/debug; `make demo` builds first)
set -euo pipefail

BIN=${1:-.build/debug}
BIN=$(cd "$BIN" && pwd)
DEMO=$(mktemp -d /tmp/cassette-demo.XXXXXX)
RUN=$DEMO/run
STATE=$DEMO/state
PIDS=()

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cleanup() {
    local status=$?
    if [ ${#PIDS[@]} -gt 0 ]; then
        say "Stopping (SIGTERM; each service finishes in-flight requests and exits 0)"
        for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
        for pid in "${PIDS[@]}"; do
            if wait "$pid" 2>/dev/null; then echo "  pid $pid exited 0"; else echo "  pid $pid exited $?"; fi
        done
    fi
    if [ $status -ne 0 ]; then
        echo "demo failed (exit $status); logs:"
        tail -n 20 "$DEMO"/*.log 2>/dev/null || true
    fi
    rm -rf "$DEMO"
    exit $status
}
trap cleanup EXIT INT TERM

wait_for() {  # wait_for FILE-OR-SOCKET SECONDS
    local deadline=$((SECONDS + $2))
    until [ -e "$1" ]; do
        [ $SECONDS -lt "$deadline" ] || { echo "timed out waiting for $1"; return 1; }
        sleep 0.1
    done
}

say "Reference origin: generating a demo catalog with ffmpeg and serving it on loopback"
"$BIN/cassette-origin" serve --data "$DEMO/origin" --port 0 --port-file "$DEMO/origin.port" \
    >"$DEMO/origin.log" 2>&1 &
PIDS+=($!)
wait_for "$DEMO/origin.port" 180
ORIGIN="http://127.0.0.1:$(cat "$DEMO/origin.port")"
echo "  origin at $ORIGIN"

export CASSETTE_CLIENT_TOKEN=demo CASSETTE_CLIENT_SECRET=demo
COMMON=(--runtime-dir "$RUN" --state-dir "$STATE" --origin "$ORIGIN")

say "Starting downloader, player (ALSA null PCM, paced to the wall clock) and reporter in $DEMO"
"$BIN/downloader" "${COMMON[@]}" >"$DEMO/downloader.log" 2>&1 & PIDS+=($!)
"$BIN/player" "${COMMON[@]}" --audio-device null --audio-pace realtime >"$DEMO/player.log" 2>&1 & PIDS+=($!)
"$BIN/reporter" "${COMMON[@]}" >"$DEMO/reporter.log" 2>&1 & PIDS+=($!)
for s in downloader player reporter; do wait_for "$RUN/$s.sock" 30; done

CTL=("$BIN/cassettectl")
say "cassettectl status"
"${CTL[@]}" status --runtime-dir "$RUN"

say "cassettectl call player service.status"
"${CTL[@]}" call player service.status --runtime-dir "$RUN"

say "The same call by hand: 4-byte big-endian length + JSON-RPC, from Python"
python3 - "$RUN/reporter.sock" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "service.status"}).encode()
s.sendall(struct.pack(">I", len(req)) + req)
n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
print("  reporter says:", json.loads(s.recv(n, socket.MSG_WAITALL))["result"]["service"], "is up")
PY

say "What the origin offers for offline use"
curl -s -u demo:demo "$ORIGIN/v1/stations" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["offlineStations"]:
    print("  %-8s %-10s %3d tracks, %4.0f s" % (s["id"], s["name"], s["itemCount"], s["durationSeconds"]))'

echo
echo "Next steps (later issues): stations.sync downloads a station, station.tune plays it through ALSA,"
echo "and the reporter delivers the play log to the origin."
