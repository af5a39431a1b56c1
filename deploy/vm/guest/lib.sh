# Helpers of the guest side of the package test, sourced by runner.sh. Everything here runs
# as root inside the VM, under its systemd.

SHARE=/mnt/vmtest
RESULTS=$SHARE/results
SERVICES=(downloader player reporter)
# The reference origin listens on the VM's own loopback, where nothing else does: a fixed
# port, so the config written at the install still names it after the reboot.
ORIGIN_PORT=8765
ORIGIN=http://127.0.0.1:$ORIGIN_PORT
ORIGIN_DATA=/var/lib/vmtest-origin
STATION=st-9
# Check 11: the downloader's metrics file (in the state dir) and the listing of the root file
# system it is compared with.
METRICS_FILE=/var/lib/cassette/downloader.prom
ROOT_BEFORE=/run/vmtest-root-before

say() { echo "vmtest[$(date +%T)]: $*"; }

# result PASS|FAIL|SKIP ID TEXT [DETAIL_LINE...]: one line in the results the host counts,
# then each detail line indented (the host shows them, never counts them).
result() {
    local verdict=$1 id=$2 text=$3 line
    shift 3
    {
        echo "$verdict $id $text"
        for line in "$@"; do printf '%s\n' "$line" | sed 's/^/    | /'; done
    } >>"$RESULTS"
    say "$verdict $id $text"
    sync
}

# run_check ID TEXT FUNCTION: the function returns 0 for PASS; it may set DETAIL (a short
# reason, appended to the text) and DETAIL_LINES (lines shown under it).
run_check() {
    local id=$1 text=$2 fn=$3
    DETAIL="" DETAIL_LINES=()
    if "$fn"; then
        result PASS "$id" "$text${DETAIL:+: $DETAIL}" "${DETAIL_LINES[@]}"
    else
        result FAIL "$id" "$text${DETAIL:+: $DETAIL}" "${DETAIL_LINES[@]}"
    fi
}

# why MESSAGE: sets the reason of a failing check and fails (`cond || why "..."` then `|| return 1`).
why() { DETAIL=$1; return 1; }

# wait_until SECONDS COMMAND...: polls the command every half second; fails after SECONDS.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.5
    done
}

ctl() { cassettectl --timeout 120 "$@"; }
ctl_json() { cassettectl --timeout 120 --json "$@"; }

prop() { systemctl show -p "$2" --value "$1"; }            # prop UNIT PROPERTY
main_pid() { prop "cassette-$1.service" MainPID; }
is_active() { [ "$(systemctl is-active "$1" 2>/dev/null)" = active ]; }
all_active() { local s; for s in "${SERVICES[@]}"; do is_active "cassette-$s.service" || return 1; done; }

origin_get() { curl -fsS --max-time 10 "$ORIGIN$1"; }
origin_up() { origin_get /_control/health | grep -q '"ok":true'; }
origin_plays() { origin_get /_control/stats | jq '.plays.unique'; }

# The reference origin, as a transient unit (so its log is in the journal, apart from
# cassette-*), serving the catalog the host generated. Its Swift runtime is the package's
# (/usr/lib/cassette) plus what the host copied beside the binary.
start_origin() {
    systemd-run --quiet --unit=vmtest-origin --collect \
        --setenv=LD_LIBRARY_PATH="$SHARE/origin/lib:/usr/lib/cassette" \
        --setenv=CASSETTE_CLIENT_TOKEN=vmtest --setenv=CASSETTE_CLIENT_SECRET=vmtest \
        "$SHARE/origin/cassette-origin" serve --data "$ORIGIN_DATA" --port "$ORIGIN_PORT" || return 1
    wait_until 120 origin_up
}
stop_origin() { systemctl stop vmtest-origin.service; }

# The sockets listen and the services wait for their first connection.
sockets_listen_services_wait() {
    local s
    for s in "${SERVICES[@]}"; do
        [ "$(systemctl is-enabled "cassette-$s.socket" 2>&1)" = enabled ] || why "cassette-$s.socket is $(systemctl is-enabled "cassette-$s.socket" 2>&1), not enabled" || return 1
        is_active "cassette-$s.socket" || why "cassette-$s.socket is $(systemctl is-active "cassette-$s.socket"), not active" || return 1
        [ -S "/run/cassette/$s.sock" ] || why "/run/cassette/$s.sock is not a socket" || return 1
        [ "$(systemctl is-active "cassette-$s.service")" = inactive ] \
            || why "cassette-$s.service is $(systemctl is-active "cassette-$s.service") before any connection" || return 1
    done
    ! pgrep -u cassette >/dev/null || why "a process of user cassette runs before any connection: $(pgrep -a -u cassette | head -n1)" || return 1
}

player_state() { ctl_json now | jq -r '.playbackState'; }
player_position() { ctl_json now | jq -r '.assetPosition // 0 | floor'; }
playing_past() { [ "$(player_state)" = PLAYING ] && [ "$(player_position)" -ge "$1" ]; }
pending_plays() { ctl_json playlog status | jq '.plays.pending'; }

# tune_and_play SECONDS: tunes the station and waits until the player has played past
# SECONDS of a track; sets DETAIL on failure.
tune_and_play() {
    ctl tune "$STATION" >/dev/null || why "cassettectl tune $STATION failed" || return 1
    wait_until 90 playing_past "$1" \
        || why "not PLAYING past $1 s within 90 s (state $(player_state), position $(player_position))" || return 1
}

# The journal of this boot, kept on the share for whoever reads a failure.
save_journal() { journalctl -b --no-pager -o short-precise >"$SHARE/journal-$1.txt" 2>&1 || true; }
