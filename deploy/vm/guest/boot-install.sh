# First boot (sourced by runner.sh): install the package under the running systemd, then
# checks 1-8 and the offline half of 9. The clean part (install, start, sync, play, stop)
# comes first and check 7 reads its journal before anything is killed on purpose.

install_package() {
    say "apt-get install ./cassette.deb"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$SHARE/cassette.deb" >"$SHARE/apt-install.log" 2>&1; then
        DETAIL_LINES=("$(tail -n 5 "$SHARE/apt-install.log")")
        why "apt-get install failed (apt-install.log)"; return 1
    fi
    DETAIL="$(dpkg-query -W -f='${Package} ${Version}' cassette)"
}

# Check 1, before the first connection: recorded now, reported with the activation below.
PREACTIVATION_OK=0 PREACTIVATION_DETAIL=""
record_preactivation() {
    DETAIL=""
    if sockets_listen_services_wait; then PREACTIVATION_OK=1; else PREACTIVATION_DETAIL=$DETAIL; fi
}

# The config an admin writes: the origin in this VM, its credentials, ALSA's null device
# paced to the wall clock (the VM has no sound card), and the downloader's metrics file in the
# state dir, rewritten every 2 s (check 11). Every other key keeps its default. The listing
# taken after it is what check 11 compares the root file system with.
configure() {
    local tmp
    tmp=$(mktemp)
    jq --arg origin "$ORIGIN" --arg metrics "$METRICS_FILE" '.origin = $origin | .clientToken = "vmtest" | .clientSecret = "vmtest"
        | .player = ((.player // {}) + {audioDevice: "null", audioPace: "realtime"})
        | .downloader = ((.downloader // {}) + {metricsFile: $metrics, metricsIntervalSeconds: 2})' \
        /etc/cassette/cassette.json >"$tmp" && cat "$tmp" >/etc/cassette/cassette.json
    rm -f "$tmp"
    # An app's user in cassette-clients, for check 3b; made before the listing, as an admin would.
    getent passwd vmclient >/dev/null || useradd --system --no-create-home --groups cassette-clients vmclient
    root_listing >"$ROOT_BEFORE"
}

# Every path under /etc, /usr and /var/lib with its size, modification time and inode, but the
# state dirs (the services' and the test origin's) and those the system's own jobs keep
# (systemd, apt's and man-db's daily timers, DHCP leases, logrotate). Compared as listings, not
# with `find -newer`: the image's files may carry times ahead of the VM's clock.
root_listing() {
    find /etc /usr /var/lib -xdev \( -path /var/lib/cassette -o -path "$ORIGIN_DATA" -o -path /var/lib/systemd -o -path /var/lib/apt \
        -o -path /var/lib/dpkg -o -path /var/lib/man-db -o -path /var/lib/dhcp -o -path /var/lib/NetworkManager -o -path /var/lib/logrotate \) \
        -prune -o -printf '%p %s %T@ %i\n' 2>/dev/null | sort
}

check_activation() {
    [ "$PREACTIVATION_OK" = 1 ] || why "after install: $PREACTIVATION_DETAIL" || return 1
    local out
    out=$(ctl status 2>&1) || { DETAIL_LINES=("$out"); why "cassettectl status failed"; return 1; }
    all_active || why "not every service is active after cassettectl status" || return 1
    DETAIL="sockets enabled and listening, services inactive after install; cassettectl status started all three"
}

check_users() {
    getent passwd cassette >/dev/null || why "no user cassette" || return 1
    getent group cassette >/dev/null || why "no group cassette" || return 1
    getent group cassette-clients >/dev/null || why "no group cassette-clients" || return 1
    id -nG cassette | tr ' ' '\n' | grep -qx cassette-clients || why "cassette is not in cassette-clients" || return 1
    local s pid user
    for s in "${SERVICES[@]}"; do
        pid=$(main_pid "$s")
        [ "$pid" -gt 0 ] || why "cassette-$s.service has no main pid" || return 1
        user=$(ps -o user= -p "$pid" | tr -d ' ')
        [ "$user" = cassette ] || why "cassette-$s.service runs as $user" || return 1
    done
    DETAIL="cassette, cassette-clients exist; the three services run as cassette"
}

check_network_networkd() {
    wait_until 90 sh -c 'ip -4 route show default | grep -q .' || why "systemd-networkd gave the NIC no default route within 90 s" || return 1
    local iface
    iface=$(ip -4 route show default | awk '{print $5; exit}')
    # The downloader polls every second.
    wait_until 15 sh -c '[ "$(cassettectl --json network get | jq -r .type)" = ethernet ]'
    local got
    got=$(ctl_json network get | jq -c '{type, interface, source}')
    [ "$(jq -r .type <<<"$got")" = ethernet ] || why "cassettectl network get says $got with $iface up under systemd-networkd" || return 1
    DETAIL="$got ($iface)"
}

check_sync_play() {
    local before out
    before=$(origin_plays)
    out=$(ctl sync "$STATION" --no-progress --wait-timeout 240 2>&1) || { DETAIL_LINES=("$(tail -n 3 <<<"$out")"); why "cassettectl sync $STATION failed"; return 1; }
    local audio
    audio=$(ctl_json call player service.status | jq -r '"\(.audioDevice)/\(.audioPace)"')
    [ "$audio" = null/realtime ] || why "the player uses $audio, not null/realtime" || return 1
    tune_and_play 4 || return 1
    local offline
    offline=$(ctl_json now | jq -r '.playbackContext.offline')
    [ "$offline" = true ] || why "the station plays from the network (offline=$offline), not from the synced copy" || return 1
    ctl stop >/dev/null || why "cassettectl stop failed" || return 1
    wait_until 60 sh -c "[ \"\$(curl -fsS $ORIGIN/_control/stats | jq .plays.unique)\" -gt $before ]" \
        || why "the origin received no play within 60 s of the stop" || return 1
    DETAIL="$STATION synced, played from the device copy through ALSA null, play delivered"
    [ "${NETWORK_OVERRIDE:-0}" = 1 ] && DETAIL="$DETAIL (network overridden to ethernet: see 8a)"
    DETAIL_LINES=("$(tail -n 1 <<<"$out")")
}

STOP_DETAIL="" STOP_OK=1
stop_services() {
    local s start ms rc result code status
    tune_and_play 2 || { STOP_OK=0; STOP_DETAIL="before the stop: $DETAIL"; return; }
    for s in player downloader reporter; do
        start=$(date +%s%N)
        systemctl stop "cassette-$s.service"
        rc=$?
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        result=$(prop "cassette-$s.service" Result)
        code=$(prop "cassette-$s.service" ExecMainCode)
        status=$(prop "cassette-$s.service" ExecMainStatus)
        STOP_DETAIL="$STOP_DETAIL $s ${ms}ms"
        if [ $rc -ne 0 ] || [ $ms -gt 10000 ] || [ "$result" != success ] || [ "$code" != 1 ] || [ "$status" != 0 ]; then
            STOP_OK=0
            STOP_DETAIL="$STOP_DETAIL (systemctl exit $rc, Result=$result, exit code $code status $status)"
        fi
        is_active "cassette-$s.socket" || { STOP_OK=0; STOP_DETAIL="$STOP_DETAIL (socket not active after the stop)"; }
    done
}
check_stop() {
    DETAIL="while playing:$STOP_DETAIL"
    [ "$STOP_OK" = 1 ]
}

# Every service logs with its identifier, the code location, message ids and CASSETTE_* fields.
check_journal_fields() {
    local s summary ids
    for s in "${SERVICES[@]}"; do
        summary=$(journalctl -b -u "cassette-$s.service" -o json --output-fields=SYSLOG_IDENTIFIER,CODE_FILE,MESSAGE_ID,CASSETTE_SERVICE,_PID \
            | jq -s --arg id "cassette-$s" '[.[] | select(.SYSLOG_IDENTIFIER == $id)] |
                {entries: length, code: ([.[] | select(.CODE_FILE)] | length),
                 ids: ([.[] | .MESSAGE_ID // empty] | unique), cassette: ([.[] | keys[] | select(startswith("CASSETTE_"))] | unique)}')
        [ "$(jq .entries <<<"$summary")" -gt 0 ] || why "no entry with SYSLOG_IDENTIFIER=cassette-$s" || return 1
        [ "$(jq .code <<<"$summary")" -gt 0 ] || why "cassette-$s: no entry with CODE_FILE" || return 1
        ids=$(jq -r '.ids | join(" ")' <<<"$summary")
        # listening (291f9ab8…) and stopped (fb0e2cbc…) from every service.
        grep -q 291f9ab8ec9c4d8d9e3a34b032787aa3 <<<"$ids" || why "cassette-$s: no MESSAGE_ID of 'listening'" || return 1
        grep -q fb0e2cbc541141b8a264d62482b9535b <<<"$ids" || why "cassette-$s: no MESSAGE_ID of 'stopped'" || return 1
        [ "$(jq '.cassette | length' <<<"$summary")" -gt 0 ] || why "cassette-$s: no CASSETTE_* field" || return 1
    done
    # A completed sync (fbb926d8…) from the downloader, a delivery (d5fff399…) from the reporter.
    journalctl -b -u cassette-downloader.service MESSAGE_ID=fbb926d8a2714a93b95d5bfc68ade9ec -q | grep -q . || why "no 'sync completed' MESSAGE_ID" || return 1
    journalctl -b -u cassette-reporter.service MESSAGE_ID=d5fff399fa874eb0ba1095b190d8e228 -q | grep -q . || why "no 'plays delivered' MESSAGE_ID" || return 1
    DETAIL="SYSLOG_IDENTIFIER, CODE_*, MESSAGE_ID (listening, stopped, sync completed, plays delivered), CASSETTE_* from each service"
}

# Warning-or-worse entries, and anything the services' processes put in the journal other
# than through their own logger (SYSLOG_IDENTIFIER=cassette-<name>): a library's syslog(3)
# or a line on stdout/stderr is noise an operator reads too.
check_journal_clean() {
    local lines foreign
    lines=$(journalctl -b -p warning -u 'cassette-*' --no-pager -q -o short-monotonic)
    foreign=$(journalctl -b -u 'cassette-*' -o json --output-fields=_SYSTEMD_UNIT,_TRANSPORT,SYSLOG_IDENTIFIER,MESSAGE,PRIORITY \
        | jq -r 'select((._SYSTEMD_UNIT // "") | test("^cassette-.*[.]service$"))
            | select((.SYSLOG_IDENTIFIER // "") != (._SYSTEMD_UNIT | sub("[.]service$"; "")))
            | "\(._SYSTEMD_UNIT): \(.SYSLOG_IDENTIFIER) via \(._TRANSPORT), priority \(.PRIORITY): \(.MESSAGE)"')
    if [ -n "$lines" ] || [ -n "$foreign" ]; then
        local nl=0 nf=0
        [ -n "$lines" ] && nl=$(wc -l <<<"$lines")
        [ -n "$foreign" ] && nf=$(wc -l <<<"$foreign")
        mapfile -t DETAIL_LINES < <( { [ -n "$lines" ] && head -n 15 <<<"$lines"
            [ -n "$foreign" ] && sed 's/0x[0-9a-f]*/0x.../g' <<<"$foreign" | sort | uniq -c | sort -rn | head -n 10; } )
        why "$nl warning-or-worse line(s) (journalctl -p warning -u 'cassette-*'), $nf line(s) not from the services' loggers (counted below)"
        return 1
    fi
    DETAIL="nothing at warning or worse, nothing but the services' own log entries, from install, start, sync, play and stop"
}

# Check 11: a read-only root works. Each unit runs with ProtectSystem=strict in effect (the
# whole file system read-only to it but for its state, runtime and log dirs), the downloader
# writes its metrics file in the state dir, nothing under /etc, /usr or /var/lib outside the
# state dirs changed since the config was written (start, sync, play, stop; see
# root_listing), and no file on the root file system outside the state dir belongs to the
# services' user (what they create anywhere would: /var/tmp, a private /tmp on the root).
check_readonly_root() {
    local s value changed owned
    for s in "${SERVICES[@]}"; do
        value=$(prop "cassette-$s.service" ProtectSystem)
        [ "$value" = strict ] || why "cassette-$s.service runs with ProtectSystem=$value" || return 1
    done
    [ -s "$METRICS_FILE" ] || why "no metrics file at $METRICS_FILE" || return 1
    grep -q '^cassette_storage_bytes_written_total ' "$METRICS_FILE" || why "$METRICS_FILE has no cassette_storage_bytes_written_total" || return 1
    changed=$(diff "$ROOT_BEFORE" <(root_listing) | awk '/^[<>]/ { print $2 }' | sort -u)
    if [ -n "$changed" ]; then
        mapfile -t DETAIL_LINES < <(head -n 15 <<<"$changed")
        why "$(wc -l <<<"$changed") path(s) under /etc, /usr, /var/lib changed since the config was written"; return 1
    fi
    owned=$(find / -xdev \( -path /var/lib/cassette -o -path /run -o -path /proc -o -path /sys -o -path /dev -o -path /mnt \) -prune \
        -o -user cassette -print 2>/dev/null)
    if [ -n "$owned" ]; then
        mapfile -t DETAIL_LINES < <(head -n 15 <<<"$owned")
        why "files of the user cassette outside the state and runtime dirs"; return 1
    fi
    DETAIL="ProtectSystem=strict in effect for all three; $METRICS_FILE written ($(grep '^cassette_storage_bytes_written_total ' "$METRICS_FILE" | cut -d' ' -f2) bytes written by the downloader); nothing else changed under /etc /usr /var/lib, no file of cassette outside the state dir"
}

# kill -9 one service: systemd restarts it and only it.
# The player's MPRIS name on the system bus (player.mprisBus defaults to "system"): owned by the
# service user under the package's D-Bus policy, readable by a member of cassette-clients
# (vmclient, made by configure), and refused to a user outside it.
check_mpris() {
    local name=org.mpris.MediaPlayer2.cassette uid status
    wait_until 30 sh -c "busctl --system status $name >/dev/null 2>&1" || {
        DETAIL_LINES=("$(ctl_json call player service.status | jq -c .mpris)")
        why "$name is not on the system bus within 30 s"; return 1
    }
    uid=$(busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetConnectionUnixUser s "$name" | awk '{print $2}')
    [ "$uid" = "$(id -u cassette)" ] || why "$name is owned by uid $uid, not cassette" || return 1
    [ "$(ctl_json call player service.status | jq -r .mpris.state)" = serving ] || why "service.status says mpris is not serving" || return 1
    status=$(runuser -u vmclient -- busctl --system get-property "$name" /org/mpris/MediaPlayer2 org.mpris.MediaPlayer2.Player PlaybackStatus 2>&1) \
        || why "a member of cassette-clients cannot read PlaybackStatus: $status" || return 1
    if runuser -u nobody -- busctl --system call "$name" /org/mpris/MediaPlayer2 org.mpris.MediaPlayer2.Player Play >/dev/null 2>&1; then
        why "nobody (not in cassette-clients) may call Play"; return 1
    fi
    DETAIL="$name owned by cassette (uid $uid); cassette-clients reads PlaybackStatus $status; nobody is refused"
}

check_kill9() {
    ctl status >/dev/null || why "cassettectl status failed before the kill" || return 1
    local victim=player s old new
    declare -A pids
    for s in "${SERVICES[@]}"; do pids[$s]=$(main_pid "$s"); done
    old=${pids[$victim]}
    kill -9 "$old"
    wait_until 30 sh -c "[ \"\$(systemctl is-active cassette-$victim.service)\" = active ] && p=\$(systemctl show -p MainPID --value cassette-$victim.service) && [ \"\$p\" != 0 ] && [ \"\$p\" != $old ]" \
        || why "cassette-$victim.service did not come back within 30 s" || return 1
    new=$(main_pid "$victim")
    [ "$(prop "cassette-$victim.service" NRestarts)" -ge 1 ] || why "NRestarts of cassette-$victim.service did not grow" || return 1
    for s in "${SERVICES[@]}"; do
        [ "$s" = "$victim" ] && continue
        [ "$(main_pid "$s")" = "${pids[$s]}" ] || why "cassette-$s.service restarted too (pid ${pids[$s]} → $(main_pid "$s"))" || return 1
    done
    ctl status >/dev/null || why "cassettectl status failed after the restart" || return 1
    DETAIL="cassette-$victim pid $old → $new, the other two kept their pids"
}

# SIGSTOP one service: the watchdog (lowered to 10 s by a runtime drop-in, instead of the
# unit's 30 s, to keep the test short) kills it and systemd restarts it, and only it.
check_watchdog() {
    local victim=downloader s old new
    mkdir -p "/run/systemd/system/cassette-$victim.service.d"
    printf '[Service]\nWatchdogSec=10s\nTimeoutAbortSec=5s\n' >"/run/systemd/system/cassette-$victim.service.d/vmtest-watchdog.conf"
    systemctl daemon-reload
    systemctl restart "cassette-$victim.service" || why "restart with the 10 s watchdog failed" || return 1
    ctl status >/dev/null || why "cassettectl status failed before SIGSTOP" || return 1
    declare -A pids
    for s in "${SERVICES[@]}"; do pids[$s]=$(main_pid "$s"); done
    old=${pids[$victim]}
    local restarts since
    restarts=$(prop "cassette-$victim.service" NRestarts)
    since=$(date '+%F %T')
    kill -STOP "$old"
    wait_until 60 sh -c "[ \"\$(systemctl is-active cassette-$victim.service)\" = active ] && p=\$(systemctl show -p MainPID --value cassette-$victim.service) && [ \"\$p\" != 0 ] && [ \"\$p\" != $old ]" \
        || why "cassette-$victim.service was not restarted within 60 s of SIGSTOP" || return 1
    new=$(main_pid "$victim")
    journalctl -u "cassette-$victim.service" --since "$since" -q | grep -qi 'watchdog timeout' \
        || why "no 'Watchdog timeout' in the journal of cassette-$victim" || return 1
    [ "$(prop "cassette-$victim.service" NRestarts)" -gt "$restarts" ] || why "NRestarts did not grow" || return 1
    for s in "${SERVICES[@]}"; do
        [ "$s" = "$victim" ] && continue
        [ "$(main_pid "$s")" = "${pids[$s]}" ] || why "cassette-$s.service restarted too" || return 1
    done
    rm -r "/run/systemd/system/cassette-$victim.service.d"
    systemctl daemon-reload
    DETAIL="WatchdogSec=10s drop-in: cassette-$victim pid $old stopped, killed by the watchdog, restarted as $new; the others kept their pids"
}

# The first half of 9: the origin goes away, the station plays from the device, and the
# play waits in the reporter's outbox across the reboot.
offline_before_reboot() {
    local plays pending
    plays=$(origin_plays)
    stop_origin
    tune_and_play 3 || return 1
    ctl stop >/dev/null || why "cassettectl stop failed" || return 1
    wait_until 30 sh -c '[ "$(cassettectl --json playlog status | jq .plays.pending)" -ge 1 ]' \
        || why "no play pending in the reporter with the origin down" || return 1
    pending=$(pending_plays)
    printf 'ORIGIN_PLAYS=%s\nPENDING_BEFORE_REBOOT=%s\n' "$plays" "$pending" >"$SHARE/offline-state"
    say "offline: $pending play(s) pending, origin had $plays"
}

say "installing and configuring"
mkdir -p "$ORIGIN_DATA"
cp -a "$SHARE/origin-data/." "$ORIGIN_DATA/"
start_origin || result FAIL origin "the reference origin did not start (journalctl -u vmtest-origin)" \
    "$(journalctl -u vmtest-origin -q --no-pager | tail -n 5)"
run_check 0 "package installed with apt-get under systemd" install_package
record_preactivation
configure
run_check 1 "socket activation" check_activation
run_check 2 "users and groups" check_users
run_check 8a "network detection under systemd-networkd" check_network_networkd
# The downloader only downloads on a network it allows: when detection failed (8a says so),
# an override lets the remaining checks test what they are about.
if [ "$(ctl_json network get | jq -r .type)" != ethernet ]; then
    say "network detection failed: cassettectl network set ethernet for the other checks"
    ctl network set ethernet >/dev/null
    NETWORK_OVERRIDE=1
fi
run_check 3 "station synced from the origin and played through ALSA null" check_sync_play
run_check 3b "MPRIS name on the system bus, policy for cassette-clients" check_mpris
stop_services
run_check 6 "systemctl stop of each service within 10 s, exit 0" check_stop
run_check 7a "journal fields" check_journal_fields
run_check 7b "no warning in the journal of a clean start/sync/play/stop" check_journal_clean
run_check 11 "read-only root: ProtectSystem=strict, metrics file in the state dir, nothing else written" check_readonly_root
run_check 4 "kill -9 restarts only that service" check_kill9
run_check 5 "watchdog restarts a stopped (SIGSTOP) service" check_watchdog
DETAIL=""
if ! offline_before_reboot; then
    result FAIL 9 "offline play and later delivery: before the reboot: $DETAIL"
    echo "FAILED=1" >>"$SHARE/offline-state"
fi
[ "${NETWORK_OVERRIDE:-0}" = 1 ] && ctl network set auto >/dev/null
