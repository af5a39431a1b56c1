#!/usr/bin/env bash
# The Cassette demo: in a temporary folder, starts the reference origin (its catalog made
# with ffmpeg) and the three services, takes a station offline with a progress bar, plays
# part of it through ALSA, stops, and shows the play log arriving at the origin. Every
# process is stopped at the end, whatever happens.
# Usage: deploy/demo.sh [BIN_DIR]   (default .build/debug; `make demo` builds first)
# Environment: DEMO_STATION (default st-9), DEMO_PLAY_SECONDS (default 12), DEMO_KEEP=1 keeps the folder.
set -euo pipefail

BIN=${1:-.build/debug}
for exe in cassette-origin downloader player reporter cassettectl; do
    [ -x "$BIN/$exe" ] || { echo "demo: $BIN/$exe is missing: build first (make demo does)"; exit 1; }
done
BIN=$(cd "$BIN" && pwd)
command -v ffmpeg >/dev/null || { echo "demo: ffmpeg is missing (make deps installs it)"; exit 1; }
command -v curl >/dev/null || { echo "demo: curl is missing (make deps installs it)"; exit 1; }
command -v python3 >/dev/null || { echo "demo: python3 is missing (make deps installs it)"; exit 1; }

STATION=${DEMO_STATION:-st-9}
PLAY_SECONDS=${DEMO_PLAY_SECONDS:-12}
DEMO=$(mktemp -d /tmp/cassette-demo.XXXXXX)
RUN=$DEMO/run
STATE=$DEMO/state
PIDS=()
NAMES=()
STEP="starting"
STARTED=$SECONDS

say() { STEP="$*"; printf '\n\033[1m== %s\033[0m\n' "$*"; }
ctl() { "$BIN/cassettectl" "$@" --runtime-dir "$RUN"; }

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ $status -ne 0 ]; then
        printf '\n\033[1;31mdemo failed (exit %d) at: %s\033[0m\n' "$status" "$STEP"
        for log in "$DEMO"/*.log; do
            [ -s "$log" ] || continue
            echo "--- last lines of $(basename "$log")"
            tail -n 15 "$log"
        done
    fi
    if [ ${#PIDS[@]} -gt 0 ]; then
        printf '\n\033[1m== %s\033[0m\n' "Stopping everything (SIGTERM; each service finishes in-flight requests and exits 0)"
        for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
        local i code
        for i in "${!PIDS[@]}"; do
            code=0
            wait "${PIDS[$i]}" 2>/dev/null || code=$?
            echo "  ${NAMES[$i]} (pid ${PIDS[$i]}) exited $code"
        done
    fi
    if [ "${DEMO_KEEP:-0}" = 1 ]; then echo "kept $DEMO"; else rm -rf "$DEMO"; fi
    [ $status -eq 0 ] && printf '\nDemo finished in %d s.\n' $((SECONDS - STARTED))
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() {  # start NAME COMMAND... : runs it in the background, logging to $DEMO/NAME.log
    local name=$1; shift
    "$@" >"$DEMO/$name.log" 2>&1 &
    PIDS+=($!)
    NAMES+=("$name")
}

wait_for() {  # wait_for PATH SECONDS WHAT
    local deadline=$((SECONDS + $2))
    until [ -e "$1" ]; do
        [ $SECONDS -lt "$deadline" ] || { echo "demo: $3 did not appear within $2 s"; return 1; }
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || { echo "demo: a process exited early"; return 1; }; done
        sleep 0.1
    done
}

json_field() {  # json_field EXPR < JSON : prints a Python expression of the parsed object `j`
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

say "Reference origin: generating its catalog with ffmpeg and serving it on loopback"
start origin "$BIN/cassette-origin" serve --data "$DEMO/origin" --port 0 --port-file "$DEMO/origin.port" \
    --tracks-per-station 3 --seconds 6
wait_for "$DEMO/origin.port" 120 "the origin's port file"
ORIGIN="http://127.0.0.1:$(cat "$DEMO/origin.port")"
echo "  origin at $ORIGIN, catalog ready after $((SECONDS - STARTED)) s"

if aplay -l 2>/dev/null | grep -q '^card'; then
    AUDIO=(--audio-device default)
    AUDIO_TEXT="the default ALSA device"
else
    AUDIO=(--audio-device null --audio-pace realtime)
    AUDIO_TEXT="ALSA's null device, paced to the wall clock (aplay -l shows no sound card)"
fi

say "Starting downloader, player and reporter in $DEMO"
export CASSETTE_CLIENT_TOKEN=demo CASSETTE_CLIENT_SECRET=demo CASSETTE_LOG_LEVEL=info
COMMON=(--runtime-dir "$RUN" --state-dir "$STATE" --origin "$ORIGIN")
start downloader "$BIN/downloader" "${COMMON[@]}"
start player "$BIN/player" "${COMMON[@]}" "${AUDIO[@]}"
start reporter "$BIN/reporter" "${COMMON[@]}"
for s in downloader player reporter; do wait_for "$RUN/$s.sock" 30 "the $s socket"; done
echo "  the player plays through $AUDIO_TEXT"
ctl status

say "cassettectl stations"
ctl stations

say "cassettectl sync $STATION (a progress bar on a terminal; the origin paces media at 100 kB/s, like a modest link)"
curl -fsS -X POST "$ORIGIN/_control/faults" \
    -d '{"path":"/media/","faults":[{"bytesPerSecond":100000,"repeat":20}]}' >/dev/null
ctl sync "$STATION"
curl -fsS -X DELETE "$ORIGIN/_control/faults" >/dev/null

say "cassettectl tune $STATION, then the player's status every 2 s for ${PLAY_SECONDS} s"
ctl tune "$STATION"
for _ in $(seq 1 $((PLAY_SECONDS / 2))); do
    sleep 2
    ctl now --short
done

say "cassettectl stop: the play ends and the player hands it to the reporter"
ctl stop
deadline=$((SECONDS + 20))
until [ "$(ctl playlog status --json | json_field 'j["plays"]["pending"] + j["plays"]["delivered"]')" -gt 0 ]; do
    [ $SECONDS -lt $deadline ] || { echo "demo: the reporter received no play within 20 s"; exit 1; }
    sleep 0.2
done

say "cassettectl playlog flush: deliver the play log to the origin now"
ctl playlog flush
deadline=$((SECONDS + 20))
until [ "$(curl -fsS "$ORIGIN/_control/stats" | json_field 'j["plays"]["unique"]')" -gt 0 ]; do
    [ $SECONDS -lt $deadline ] || { echo "demo: the origin received no play within 20 s"; exit 1; }
    sleep 0.2
done

say "What the origin received (/_control/stats and its plays.jsonl)"
curl -fsS "$ORIGIN/_control/stats" | json_field '"  plays: unique %(unique)d, received %(received)d, duplicates %(duplicates)d, rejected %(rejected)d, requests %(requests)d" % j["plays"]'
python3 - "$DEMO/origin/plays.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    entry = json.loads(line)
    item = entry["item"]
    print("  %s  %-6s %-6s %6.1f s → %6.1f s  %s  offline=%s" % (
        entry["receivedAt"], item.get("productId"), item.get("stationId") or "-",
        item.get("startPosition", 0), item.get("endPosition", 0), item.get("eventId", "")[:8],
        item.get("offline")))
PY
