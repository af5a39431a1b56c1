#!/usr/bin/env bash
# Installs the Cassette Debian package into a throw-away root and runs it there, the way a
# device without a Swift toolchain would:
#   - the root is the host's own system seen through an overlay (writes go to a tmpfs and
#     vanish), with /opt/swift and /work hidden, in a private mount and PID namespace: the
#     binaries must find the Swift runtime the package carries (/usr/lib/cassette);
#   - `dpkg -i` runs the package's scripts (users, groups, folders, config permissions,
#     socket enablement; nothing is started: no systemd runs there);
#   - each daemon is started as the cassette user under umask 000 and must answer
#     `service.status` to the installed cassettectl, run as a member of cassette-clients only;
#   - that member may use the sockets but can read neither the catalog nor the config, and a
#     user outside the group cannot even connect;
#   - the daemons stop cleanly, a reinstall keeps the config's group, and remove/purge clean up.
# No systemd manager is started and `systemctl start` is never run.
# Usage (as root): deploy/deb-test.sh PATH/cassette_<version>_<arch>.deb   (`make deb-test`)
set -euo pipefail

[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 PATH/cassette_<version>_<arch>.deb" >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "deb-test: needs root (mount namespace, chroot, setpriv)" >&2; exit 77; }
DEB=$(realpath "$1")

# Everything below runs in its own mount and PID namespaces: the mounts disappear with it,
# and every process it started dies with it, whatever happens.
if [ "${CASSETTE_DEB_TEST_INSIDE:-}" != 1 ]; then
    exec env CASSETTE_DEB_TEST_INSIDE=1 unshare --mount --pid --fork --propagation private "$BASH" "$0" "$DEB"
fi

SERVICES=(downloader player reporter)
WORK=$(mktemp -d /tmp/cassette-deb-test.XXXXXX)
ROOT=$WORK/root
FAILURES=0
PIDS=()

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
check() {  # check DESCRIPTION COMMAND... : ok when the command succeeds
    local what=$1; shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
# A command inside the root, with a clean environment (no toolchain on PATH or LD_LIBRARY_PATH).
in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"; }
# The same, as USER with exactly USER's groups.
as_user() {
    local user=$1; shift
    in_root setpriv --reuid "$user" --regid "$(in_root id -gn "$user")" --init-groups "$@"
}

cleanup() {
    local status=$?
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    umount -R "$ROOT" 2>/dev/null || umount -l "$ROOT" 2>/dev/null || true
    umount -R "$WORK/rw" 2>/dev/null || true
    rm -rf "$WORK"
    exit $status
}
trap cleanup EXIT

say "A throw-away root: this system through an overlay, toolchain hidden"
mkdir -p "$WORK/rw" "$ROOT"
mount -t tmpfs -o mode=0755 tmpfs "$WORK/rw"
mkdir -p "$WORK/rw/upper" "$WORK/rw/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$WORK/rw/upper,workdir=$WORK/rw/work" "$ROOT"
for hidden in /opt/swift /work; do
    [ -d "$ROOT$hidden" ] && mount -t tmpfs -o ro,mode=0755 tmpfs "$ROOT$hidden"
done
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount -t tmpfs -o mode=0755 tmpfs "$ROOT/run"
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
cp "$DEB" "$ROOT/tmp/cassette.deb"
check "no Swift toolchain in the root (/opt/swift empty, no swift on PATH)" \
    in_root sh -c '[ -z "$(ls -A /opt/swift 2>/dev/null)" ] && ! command -v swift >/dev/null'
check "no systemd manager in the root (/run/systemd/system absent)" in_root test ! -d /run/systemd/system

say "dpkg -i $(basename "$DEB")"
in_root dpkg -i /tmp/cassette.deb
in_root dpkg -s cassette | grep -E '^(Status|Version|Depends):'
check "Depends names libcurl4 (the daemons open libcurl at run time, where dpkg-shlibdeps cannot see it)" \
    in_root sh -c "dpkg -s cassette | grep -q '^Depends:.*libcurl4'"
in_root id cassette
check "cassette is in cassette-clients (the services reach each other's sockets)" \
    in_root sh -c 'id -nG cassette | tr " " "\n" | grep -qx cassette-clients'
in_root stat -c '%A %U:%G %n' /etc/cassette /etc/cassette/cassette.json /var/lib/cassette
check "config folder root:cassette 0750" in_root sh -c '[ "$(stat -c %a:%U:%G /etc/cassette)" = 750:root:cassette ]'
check "config root:cassette 0640 (a dpkg-statoverride)" \
    in_root sh -c '[ "$(stat -c %a:%U:%G /etc/cassette/cassette.json)" = 640:root:cassette ] && dpkg-statoverride --list /etc/cassette/cassette.json >/dev/null'
check "state folder cassette:cassette 0750" in_root sh -c '[ "$(stat -c %a:%U:%G /var/lib/cassette)" = 750:cassette:cassette ]'
check "the three sockets are enabled, not started" \
    in_root sh -c 'for s in downloader player reporter; do [ -L /etc/systemd/system/sockets.target.wants/cassette-$s.socket ] || exit 1; done; [ -z "$(ls -A /run/cassette 2>/dev/null)" ]'

say "The installed binaries and units"
for exe in /usr/libexec/cassette/downloader /usr/libexec/cassette/player /usr/libexec/cassette/reporter /usr/bin/cassettectl; do
    printf '%-32s --version: %s\n' "$exe" "$(in_root "$exe" --version)"
    check "$exe finds every library, the Swift runtime's in /usr/lib/cassette (its RUNPATH) and nowhere else" \
        in_root sh -c "ldd $exe | grep -q '/usr/lib/cassette/libswiftCore.so' && ! ldd $exe | grep -i swift | grep -vq '/usr/lib/cassette/' \
            && readelf -d $exe | grep -q 'RUNPATH.*\[/usr/lib/cassette\]' && ! ldd $exe | grep -q 'not found'"
done
check "systemd-analyze verify passes on the installed units" \
    in_root systemd-analyze verify --man=yes /lib/systemd/system/cassette-downloader.service \
        /lib/systemd/system/cassette-player.service /lib/systemd/system/cassette-reporter.service \
        /lib/systemd/system/cassette-downloader.socket /lib/systemd/system/cassette-player.socket \
        /lib/systemd/system/cassette-reporter.socket
check "every file:// in the units' Documentation= is installed" \
    in_root sh -c 'for p in $(grep -ho "file://[^ ]*" /lib/systemd/system/cassette-*); do [ -f "${p#file://}" ] || { echo "missing ${p#file://}"; exit 1; }; done'
check "every man: page in the units' Documentation= is installed" \
    in_root sh -c 'for m in $(grep -ho "man:[^ ]*" /lib/systemd/system/cassette-* | sort -u); do n=${m#man:}; page=${n%%(*}; sec=${n#*(}; sec=${sec%)}; [ -f /usr/share/man/man$sec/$page.$sec.gz ] || { echo "missing $m"; exit 1; }; done'
check "the units keep a wrong config from restarting in a loop, and set UMask=0027" \
    in_root sh -c 'for s in downloader player reporter; do grep -qx RestartPreventExitStatus=78 /lib/systemd/system/cassette-$s.service && grep -qx UMask=0027 /lib/systemd/system/cassette-$s.service || exit 1; done'

say "An admin edits the config (origin on a closed local port: nothing leaves the machine)"
in_root sed -i 's#https://origin.example.com#http://127.0.0.1:9#' /etc/cassette/cassette.json
check "the edited config kept root:cassette 0640" in_root sh -c '[ "$(stat -c %a:%U:%G /etc/cassette/cassette.json)" = 640:root:cassette ]'

# Without socket units the daemons bind their sockets themselves, in a runtime dir of their
# user's (the one a daemon creates is the same: 0750, in the socket group).
say "Each daemon started as cassette (umask 000), binding its own socket"
in_root install -d -o cassette -g cassette-clients -m 0750 /run/cassette
for service in "${SERVICES[@]}"; do
    chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        sh -c "umask 000; exec setpriv --reuid cassette --regid cassette --init-groups /usr/libexec/cassette/$service" \
        >"$ROOT/tmp/$service.log" 2>&1 &
    PIDS+=($!)
done
for service in "${SERVICES[@]}"; do
    for _ in $(seq 200); do [ -S "$ROOT/run/cassette/$service.sock" ] && break; sleep 0.1; done
    if [ -S "$ROOT/run/cassette/$service.sock" ]; then
        ok "$service listens on /run/cassette/$service.sock"
    else
        fail "$service listens on /run/cassette/$service.sock"
        tail -n 20 "$ROOT/tmp/$service.log"
    fi
done
in_root stat -c '%A %U:%G %n' /run/cassette/downloader.sock /run/cassette/player.sock /run/cassette/reporter.sock || true
check "sockets are cassette:cassette-clients 0660" \
    in_root sh -c 'for s in downloader player reporter; do [ "$(stat -c %a:%U:%G /run/cassette/$s.sock)" = 660:cassette:cassette-clients ] || exit 1; done'
# libcurl is opened at a daemon's first transfer, not linked: the player's first look at the
# origin opens it (from what the package depends on), and the reporter, with nothing to
# deliver, never does. ($ROOT/proc is this PID namespace's.)
player_maps="$ROOT/proc/${PIDS[1]}/maps"
for _ in $(seq 100); do grep -q libcurl "$player_maps" 2>/dev/null && break; sleep 0.1; done
check "the player opened libcurl for its first transfer" grep -q libcurl "$player_maps"
check "the reporter, which has sent nothing, has not mapped libcurl" \
    sh -c "grep -q libsqlite3 '$ROOT/proc/${PIDS[2]}/maps' && ! grep -q libcurl '$ROOT/proc/${PIDS[2]}/maps'"

say "A member of cassette-clients only: service.status from each daemon"
in_root useradd --system --no-create-home --shell /usr/sbin/nologin --groups cassette-clients cassette-app
in_root id cassette-app
as_user cassette-app cassettectl status || fail "cassettectl status as cassette-app"
for service in "${SERVICES[@]}"; do
    if answer=$(as_user cassette-app cassettectl call "$service" service.status); then
        echo "$answer" | in_root python3 -c '
import json, sys
s = json.load(sys.stdin)
print("%s: version %s, pid %s, catalog %s, health %s" % (s["service"], s["version"], s["pid"], s["catalog"]["state"], "ok" if s["health"]["healthy"] else "NOT healthy"))'
        ok "$service answered service.status to cassette-app"
    else
        fail "$service did not answer service.status to cassette-app"
    fi
done

say "What the client group may not do"
denied() {  # denied USER DESCRIPTION COMMAND...: the command must fail with "Permission denied"
    local user=$1 what=$2 output; shift 2
    if output=$(as_user "$user" "$@" 2>&1); then
        fail "$what: it worked"
    elif grep -q "Permission denied" <<<"$output"; then
        ok "$what: $(head -n1 <<<"$output")"
    else
        fail "$what: $output"
    fi
}
denied cassette-app "cassette-app cannot read the config" cat /etc/cassette/cassette.json
denied cassette-app "cassette-app cannot list the state folder" ls /var/lib/cassette
denied cassette-app "cassette-app cannot open the catalog" cat /var/lib/cassette/catalog.sqlite
status=0
as_user nobody cassettectl status >"$ROOT/tmp/nobody.out" 2>&1 || status=$?
check "a user outside cassette-clients cannot connect (cassettectl exits 69: $(head -n1 "$ROOT/tmp/nobody.out"))" test "$status" = 69

say "What the daemons created under umask 000"
in_root find /var/lib/cassette -maxdepth 3 -exec stat -c '%A %U:%G %n' {} + || true
check "every folder in the state dir is exactly 0750" in_root sh -c '[ -z "$(find /var/lib/cassette -type d ! -perm 0750)" ]'
check "nothing in the state dir is open to other users" in_root sh -c '[ -z "$(find /var/lib/cassette -perm /o=rwx)" ]'

say "Stopping the daemons (SIGTERM: each exits 0)"
for i in "${!SERVICES[@]}"; do kill -TERM "${PIDS[$i]}"; done
for i in "${!SERVICES[@]}"; do
    code=0
    wait "${PIDS[$i]}" || code=$?
    check "${SERVICES[$i]} exited $code" test "$code" = 0
    [ "$code" = 0 ] || tail -n 20 "$ROOT/tmp/${SERVICES[$i]}.log"
done
PIDS=()

say "Reinstall (the upgrade path), remove, purge"
in_root dpkg -i /tmp/cassette.deb >/dev/null
check "after a reinstall the edited config is kept, root:cassette 0640" \
    in_root sh -c 'grep -q 127.0.0.1:9 /etc/cassette/cassette.json && [ "$(stat -c %a:%U:%G /etc/cassette/cassette.json)" = 640:root:cassette ]'
in_root dpkg -r cassette >/dev/null
check "remove keeps the config and the state" in_root test -f /etc/cassette/cassette.json -a -d /var/lib/cassette
in_root dpkg -P cassette >/dev/null
check "purge removes the config, its statoverrides and the state" \
    in_root sh -c '[ ! -e /etc/cassette/cassette.json ] && [ ! -e /var/lib/cassette ] && ! dpkg-statoverride --list | grep -q cassette'

echo
if [ "$FAILURES" -eq 0 ]; then
    echo "deb-test: every check passed"
else
    echo "deb-test: $FAILURES check(s) failed"
    for service in "${SERVICES[@]}"; do echo "--- $service.log"; tail -n 15 "$ROOT/tmp/$service.log" 2>/dev/null || true; done
    exit 1
fi
