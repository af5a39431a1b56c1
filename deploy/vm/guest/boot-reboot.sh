# Second boot (sourced by runner.sh): the sockets again, the offline half of 9 (plays kept
# across the reboot, a play offline, delivery once the origin is back), network detection
# under NetworkManager, then remove and purge.

check_boot_sockets() {
    sockets_listen_services_wait || return 1
    DETAIL="after the reboot: sockets listening, no service started before a connection"
}

check_offline_reboot() {
    [ -f "$SHARE/offline-state" ] || why "the first boot left no offline-state" || return 1
    grep -q FAILED=1 "$SHARE/offline-state" && { why "the first half failed (above)"; return 1; }
    local ORIGIN_PLAYS PENDING_BEFORE_REBOOT
    . "$SHARE/offline-state"
    local pending after
    pending=$(pending_plays)
    [ "$pending" -ge "$PENDING_BEFORE_REBOOT" ] \
        || why "$pending play(s) pending after the reboot, $PENDING_BEFORE_REBOOT before it" || return 1
    # Still no origin: the station plays from the device.
    tune_and_play 3 || return 1
    [ "$(ctl_json now | jq -r '.playbackContext.offline')" = true ] || why "not playing the device copy" || return 1
    ctl stop >/dev/null || why "cassettectl stop failed" || return 1
    wait_until 30 sh -c "[ \"\$(cassettectl --json playlog status | jq .plays.pending)\" -gt $pending ]" \
        || why "the play after the reboot did not reach the reporter" || return 1
    pending=$(pending_plays)
    # The origin comes back: the reporter delivers by itself (it probes an unreachable origin).
    start_origin || why "the origin did not start again" || return 1
    wait_until 120 sh -c '[ "$(cassettectl --json playlog status | jq .plays.pending)" = 0 ]' \
        || why "$(pending_plays) play(s) still pending 120 s after the origin came back" || return 1
    after=$(origin_plays)
    [ "$after" -ge $((ORIGIN_PLAYS + pending)) ] \
        || why "the origin holds $after unique plays, expected at least $ORIGIN_PLAYS + $pending" || return 1
    local offline
    offline=$(jq -s '[.[] | select(.item.offline == true)] | length' "$ORIGIN_DATA/plays.jsonl")
    [ "$offline" -ge "$pending" ] || why "only $offline play(s) marked offline at the origin" || return 1
    DETAIL="$PENDING_BEFORE_REBOOT play(s) kept across the reboot, one more played offline after it; $pending delivered once the origin came back"
}

# NetworkManager takes the NIC over from systemd-networkd; the downloader, restarted as it
# would be at boot, must see Ethernet.
check_network_nm() {
    [ -e /lib/systemd/system/NetworkManager.service ] || { DETAIL="NetworkManager is not in the image"; return 2; }
    local iface
    iface=$(ip -4 route show default | awk '{print $5; exit}')
    systemctl stop systemd-networkd.service systemd-networkd.socket
    [ -n "$iface" ] || why "no default route before the switch to NetworkManager" || return 1
    ip -4 route flush dev "$iface"
    ip -4 addr flush dev "$iface"
    systemctl start NetworkManager.service || why "NetworkManager did not start" || return 1
    # The same network as under networkd: DHCP, and the gateway the VM's network does not announce.
    nmcli connection add type ethernet ifname "$iface" con-name vmtest ipv4.method auto \
        ipv4.routes "0.0.0.0/0 10.0.2.2" ipv6.method ignore >/dev/null || why "nmcli connection add failed" || return 1
    nmcli connection up vmtest >/dev/null || why "nmcli connection up failed" || return 1
    wait_until 90 sh -c '[ "$(nmcli -t -f STATE general)" = connected ]' \
        || why "NetworkManager not connected within 90 s ($(nmcli -t -f STATE general))" || return 1
    systemctl restart cassette-downloader.service
    wait_until 15 sh -c '[ "$(cassettectl --json network get | jq -r .type)" = ethernet ]'
    local got
    got=$(ctl_json network get | jq -c '{type, interface, source}')
    [ "$(jq -r .type <<<"$got")" = ethernet ] || why "cassettectl network get says $got under NetworkManager" || return 1
    DETAIL="$got"
}

check_remove() {
    local out
    out=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y cassette 2>&1) || { DETAIL_LINES=("$(tail -n 3 <<<"$out")"); why "apt-get remove failed"; return 1; }
    [ "$(dpkg-query -W -f='${db:Status-Abbrev}' cassette 2>/dev/null | tr -d ' ')" = rc ] || why "dpkg status is not rc (config-files)" || return 1
    local s
    for s in "${SERVICES[@]}"; do
        for unit in "cassette-$s.socket" "cassette-$s.service"; do
            ! is_active "$unit" || why "$unit still active" || return 1
        done
        [ ! -e "/run/cassette/$s.sock" ] || why "/run/cassette/$s.sock left behind" || return 1
        [ ! -e "/lib/systemd/system/cassette-$s.service" ] || why "cassette-$s.service still installed" || return 1
    done
    ! pgrep -u cassette >/dev/null || why "a cassette process still runs" || return 1
    [ ! -e /usr/bin/cassettectl ] && [ ! -e /usr/libexec/cassette ] && [ ! -e /usr/lib/cassette ] || why "binaries or the runtime left behind" || return 1
    grep -q "$ORIGIN" /etc/cassette/cassette.json || why "the edited config is gone" || return 1
    [ -f /var/lib/cassette/catalog.sqlite ] || why "the catalog is gone" || return 1
    DETAIL="units stopped and gone, binaries gone; the edited config and the catalog kept"
}

check_purge() {
    local out
    out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y cassette 2>&1) || { DETAIL_LINES=("$(tail -n 3 <<<"$out")"); why "apt-get purge failed"; return 1; }
    local status
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' cassette 2>/dev/null | tr -d ' ')
    case "$status" in ""|un) ;; *) why "dpkg status of cassette is $status after the purge"; return 1 ;; esac
    [ ! -e /etc/cassette ] || why "/etc/cassette left behind: $(ls -A /etc/cassette | tr '\n' ' ')" || return 1
    [ ! -e /var/lib/cassette ] || why "/var/lib/cassette left behind" || return 1
    ! dpkg-statoverride --list | grep -q cassette || why "statoverrides left behind: $(dpkg-statoverride --list | grep cassette)" || return 1
    local left
    left=$(find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked -name 'cassette*' 2>/dev/null)
    [ -z "$left" ] || why "unit links left behind: $(echo $left)" || return 1
    # The users and groups stay, as Debian does for system users (postrm says why).
    getent passwd cassette >/dev/null && getent group cassette-clients >/dev/null || why "the users were removed" || return 1
    DETAIL="config, state, statoverrides and unit links gone; users kept (as documented)"
}

run_check 1b "socket activation after a reboot" check_boot_sockets
run_check 9 "offline play across a reboot, plays delivered once the origin is back" check_offline_reboot
DETAIL="" DETAIL_LINES=()
check_network_nm
case $? in
    0) result PASS 8b "network detection under NetworkManager: $DETAIL" ;;
    2) result SKIP 8b "network detection under NetworkManager: $DETAIL" ;;
    *) result FAIL 8b "network detection under NetworkManager: $DETAIL" ;;
esac
run_check 10a "apt-get remove" check_remove
run_check 10b "apt-get purge" check_purge
