#!/usr/bin/env bash
# Proves the Debian package under a real systemd as PID 1: boots a Debian 12 VM (qemu) made
# from the machine's apt mirror, installs the package there with apt-get, and checks
#    1  sockets enabled and listening, services started only by the first connection
#    2  users and groups, services running as cassette
#    3  a station synced from the reference origin (running in the VM) and played through
#       ALSA's null device; 3b the player's MPRIS name on the system bus, owned by cassette
#       under the package's D-Bus policy, which admits cassette-clients and refuses others
#    4  kill -9 restarts only the killed service
#    5  the watchdog restarts a service stopped with SIGSTOP (WatchdogSec lowered to 10 s by a
#       runtime drop-in, from the unit's 30 s, to keep the test short)
#    6  systemctl stop takes at most 10 s and the service exits 0
#    7  the journal fields, and no warning-or-worse line from a clean start/sync/play/stop
#    8  network detection with systemd-networkd, then with NetworkManager
#    9  after a reboot, offline play, and the plays delivered once the origin is back
#   10  apt-get remove and purge leave what deploy/debian/postrm says
#   11  a read-only root: ProtectSystem=strict in effect, the metrics file written in the state
#       dir, nothing changed under /etc, /usr, /var/lib outside the state dirs
# The guest side is deploy/vm/guest/ (runner.sh); it reaches the test through a 9p share and
# reboots once. The VM's network is qemu's user network with restrict=on: it reaches nothing
# outside the VM. KVM is used when it boots the guest, else TCG (slower: 20-60 s a boot).
# The image (deploy/vm/build-image.sh) is cached in $VM_CACHE, keyed by its package list and
# build script, so only the first run pays for debootstrap.
#
# Usage (as root): deploy/vm/vm-test.sh PATH/cassette_<version>_<arch>.deb   (`make vm-test`)
# Environment: RELEASE_BIN (.build/release: cassette-origin), VM_CACHE (/var/cache/cassette-vm),
#   VM_ACCEL (auto, kvm or tcg), VM_TIMEOUT (seconds for the VM run, 900), VM_KEEP=1 keeps
#   the work folder. The last run's results, console and journals are copied to .build/vm/last-run.
set -euo pipefail
STARTED=$SECONDS

[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 PATH/cassette_<version>_<arch>.deb" >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "vm-test: needs root (debootstrap, chroot)" >&2; exit 77; }
DEB=$(realpath "$1")
cd "$(dirname "$0")/../.."
REPO=$PWD
BIN=${RELEASE_BIN:-.build/release}
CACHE=${VM_CACHE:-/var/cache/cassette-vm}
TIMEOUT=${VM_TIMEOUT:-900}
ACCEL=${VM_ACCEL:-auto}
LAST=$REPO/.build/vm/last-run
# What the guest needs besides the package's dependencies: systemd as init, udev, D-Bus,
# the kernel, networking (networkd is in systemd; NetworkManager for check 8), and the
# tools the guest scripts use.
GUEST_PACKAGES=(systemd systemd-sysv udev dbus linux-image-amd64 kmod iproute2 procps jq curl network-manager)
# The host's tools: debootstrap, qemu, mke2fs -d, and ffmpeg for the origin's catalog.
HOST_PACKAGES=(debootstrap qemu-system-x86 qemu-utils e2fsprogs ffmpeg)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "vm-test: $*" >&2; exit 1; }

missing=()
for p in "${HOST_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "Installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ -x "$BIN/cassette-origin" ] || die "$BIN/cassette-origin is missing: make release"

# The apt sources of this machine's Debian suite (one-line or deb822 files): the image is
# made from the same mirror, with the suite's updates and security sources when present.
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
[ -n "$SUITE" ] || die "no VERSION_CODENAME in /etc/os-release"
host_sources() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        if [ -f "$f" ]; then
            awk '$1 == "deb" { sub(/\[[^]]*\][ \t]*/, ""); print "deb", $2, $3, $4 }' "$f"
        fi
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '
            function flush() { if (types ~ /(^| )deb( |$)/ && enabled != "no") { n = split(uris, u, " "); m = split(suites, s, " ");
                for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print "deb", u[i], s[j], comps } types = uris = suites = comps = ""; enabled = "" }
            /^[ \t]*$/ { flush(); next }
            /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
            /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
            /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
            /^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
            /^Enabled:/ { sub(/^Enabled:[ \t]*/, ""); enabled = $0 }
            END { flush() }' "$f"
    done
}
SOURCES_TEXT=$(host_sources | awk -v s="$SUITE" '$3 == s || $3 == s "-updates" || $3 == s "-security" { print "deb", $2, $3, "main" }' | sort -u)
MIRROR=$(awk -v s="$SUITE" '$3 == s { print $2; exit }' <<<"$SOURCES_TEXT")
[ -n "$MIRROR" ] || die "no apt source for $SUITE in /etc/apt/sources.list*"

# The image: the guest's packages and the package's dependencies (the VM cannot fetch them).
DEPENDS=$(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^$')
mapfile -t PACKAGES < <(printf '%s\n' "${GUEST_PACKAGES[@]}" $DEPENDS | sort -u)
KEY=$( { printf '%s\n' "${PACKAGES[@]}"; echo "$SOURCES_TEXT"; cat deploy/vm/build-image.sh; } | sha256sum | cut -c1-16)
IMAGE=$CACHE/image-$KEY
# Building (and pruning) takes the cache's lock alone; a run holds it shared until it ends,
# so no other run removes the image under its VM.
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
IMAGE_NOTE="cached"
if [ ! -f "$IMAGE/ready" ]; then
    say "Building the VM image $KEY (${#PACKAGES[@]} packages from $MIRROR; cached afterwards)"
    build_start=$SECONDS
    rm -rf "$IMAGE"
    printf '%s\n' "$SOURCES_TEXT" >"$CACHE/sources-$KEY"
    bash deploy/vm/build-image.sh "$IMAGE" "$SUITE" "$MIRROR" "$CACHE/sources-$KEY" "${PACKAGES[@]}"
    rm -f "$CACHE/sources-$KEY"
    touch "$IMAGE/ready"
    # Only the current image is kept.
    find "$CACHE" -mindepth 1 -maxdepth 1 -name 'image-*' ! -name "image-$KEY" -exec rm -rf {} +
    IMAGE_NOTE="built in $((SECONDS - build_start)) s"
fi
flock -s 9

WORK=$(mktemp -d /var/tmp/cassette-vm-test.XXXXXX)
SHARE=$WORK/share
QEMU_PID=""
cleanup() {
    local status=$?
    [ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
    if [ -d "$SHARE" ]; then
        rm -rf "$LAST" && mkdir -p "$LAST"
        cp "$WORK/console.log" "$LAST/" 2>/dev/null || true
        cp "$SHARE"/results "$SHARE"/*.txt "$SHARE"/*.log "$LAST/" 2>/dev/null || true
    fi
    if [ "${VM_KEEP:-0}" = 1 ]; then echo "vm-test: kept $WORK"; else rm -rf "$WORK"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "The test's share: guest scripts, the package, the reference origin and its catalog"
mkdir -p "$SHARE/origin/lib"
cp -r deploy/vm/guest "$SHARE/guest"
cp "$DEB" "$SHARE/cassette.deb"
cp "$BIN/cassette-origin" "$SHARE/origin/"
# The origin's Swift libraries that the package does not carry (it carries those the daemons
# load, in /usr/lib/cassette): every library it loads from outside the system's folders.
ldd "$BIN/cassette-origin" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
    case "$lib" in /lib/*|/usr/lib/*|/lib64/*) ;; *) cp -L "$lib" "$SHARE/origin/lib/" ;; esac
done
ldd "$BIN/cassette-origin" | grep -q 'not found' && die "cassette-origin misses libraries: $(ldd "$BIN/cassette-origin" | grep 'not found')"
# The demo catalog (ffmpeg runs here: the VM has no ffmpeg command).
gen_start=$SECONDS
"$BIN/cassette-origin" generate --out "$SHARE/origin-data" --tracks-per-station 3 --seconds 6 >/dev/null 2>"$WORK/generate.log" \
    || { tail -n 20 "$WORK/generate.log"; die "cassette-origin generate failed"; }
echo "  catalog generated in $((SECONDS - gen_start)) s; $(du -sh "$SHARE/origin-data" | cut -f1)"
: >"$SHARE/results"

qemu-img create -q -f qcow2 -b "$IMAGE/rootfs.ext4" -F raw "$WORK/disk.qcow2"
CMDLINE="root=/dev/vda rw console=ttyS0 no_timer_check panic=-1 systemd.firstboot=no"
# The VM: its console on a serial file, no display, no default devices. Its NIC is on qemu's
# user network with restrict=on (nothing leaves the VM) and has no boot ROM (none is needed).
QEMU=(qemu-system-x86_64 -smp 2 -m 2048 -nodefaults -no-user-config -display none
    -kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initrd.img")

# KVM only when it boots the guest to power-off (some hosts' KVM does not); else TCG.
if [ "$ACCEL" = auto ]; then
    ACCEL=tcg
    if [ -w /dev/kvm ]; then
        say "Probing KVM (boot to power-off)"
        # In a subshell: a qemu that aborts is reported there, not on this output.
        if (timeout 90 "${QEMU[@]}" -accel kvm -cpu host -append "$CMDLINE systemd.unit=poweroff.target" \
                -drive "file=$IMAGE/rootfs.ext4,if=virtio,format=raw,snapshot=on" -serial "file:$WORK/kvm-probe.log" \
                >/dev/null 2>&1; exit $?) 2>/dev/null && grep -q 'reboot: Power down' "$WORK/kvm-probe.log"; then
            ACCEL=kvm
        fi
        echo "  KVM $([ $ACCEL = kvm ] && echo works || echo "does not boot the guest here: TCG")"
    fi
fi
CPU=max
[ "$ACCEL" = kvm ] && CPU=host

say "Booting the VM ($ACCEL; image $KEY, $IMAGE_NOTE)"
vm_start=$SECONDS
"${QEMU[@]}" -accel "$ACCEL" -cpu "$CPU" -append "$CMDLINE" \
    -drive "file=$WORK/disk.qcow2,if=virtio,format=qcow2,cache=unsafe" \
    -virtfs "local,path=$SHARE,mount_tag=vmtest,security_model=none" \
    -netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0,romfile= \
    -serial "file:$WORK/console.log" &
QEMU_PID=$!
tail -n +1 -F --pid="$QEMU_PID" "$SHARE/results" 2>/dev/null &
while kill -0 "$QEMU_PID" 2>/dev/null; do
    if [ $((SECONDS - vm_start)) -ge "$TIMEOUT" ]; then
        echo "vm-test: the VM ran longer than $TIMEOUT s: stopping it"
        kill "$QEMU_PID"
        break
    fi
    sleep 1
done
qemu_status=0
wait "$QEMU_PID" || qemu_status=$?
QEMU_PID=""
wait || true
vm_seconds=$((SECONDS - vm_start))

# The verdict: every check must have reported, and passed (or been skipped).
EXPECTED=(0 1 2 8a 3 3b 6 7a 7b 11 4 5 1b 9 8b 10a 10b)
passed=$(grep -c '^PASS ' "$SHARE/results" || true)
failed=$(grep -c '^FAIL ' "$SHARE/results" || true)
skipped=$(grep -c '^SKIP ' "$SHARE/results" || true)
for id in "${EXPECTED[@]}"; do
    if ! grep -q "^[A-Z]* $id " "$SHARE/results"; then
        echo "FAIL $id not reported: the guest stopped early"
        failed=$((failed + 1))
    fi
done
if [ "$(cat "$SHARE/state" 2>/dev/null)" != "done" ]; then
    echo "FAIL the guest did not finish (qemu exit $qemu_status); last console lines:"
    grep -v '^\[' "$WORK/console.log" | tail -n 15 | sed 's/^/    | /'
    failed=$((failed + 1))
fi
echo
echo "vm-test: $ACCEL, image $IMAGE_NOTE, VM run $vm_seconds s, total $((SECONDS - STARTED)) s; logs in $LAST"
summary="vm-test: $passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
