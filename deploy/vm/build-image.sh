#!/usr/bin/env bash
# Builds the disk image the package test boots (deploy/vm/vm-test.sh calls it when its cache
# has no image for the current package list):
#   OUT/rootfs.ext4   an ext4 file system made from a debootstrapped Debian (mke2fs -d: no loop
#                     mount), with systemd as init, systemd-networkd managing the NIC,
#                     NetworkManager installed but disabled, and the packages the Cassette
#                     package depends on (the VM has no network to fetch them);
#   OUT/vmlinuz, OUT/initrd.img   its kernel and initramfs, for qemu -kernel/-initrd.
# The image knows nothing of Cassette: the test installs the package itself, under the
# running systemd. What it brings is a runner unit that, at every boot, mounts the test's
# 9p share (mount tag `vmtest`) at /mnt/vmtest and runs /mnt/vmtest/guest/runner.sh.
# Usage (as root): build-image.sh OUT_DIR SUITE MIRROR SOURCES_FILE PACKAGE...
#   SOURCES_FILE holds the one-line apt sources the image's apt uses while it is built
#   (the suite, its updates and security), MIRROR the one debootstrap starts from.
set -euo pipefail

[ $# -ge 4 ] || { echo "usage: $0 OUT_DIR SUITE MIRROR SOURCES_FILE PACKAGE..." >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "build-image: needs root (debootstrap, chroot)" >&2; exit 77; }
OUT=$1 SUITE=$2 MIRROR=$3 SOURCES=$4
shift 4
PACKAGES=("$@")
# Room for the packages, the test's origin catalog and media, and the downloader's default
# free-space floor (minFreeBytes, 1 GiB). The file is sparse: it takes what is written.
IMAGE_SIZE=${VM_IMAGE_SIZE:-4G}

# Everything below runs in a private mount namespace: the chroot's /proc, /sys and /dev go
# away with it, whatever happens.
if [ "${CASSETTE_VM_BUILD_INSIDE:-}" != 1 ]; then
    exec env CASSETTE_VM_BUILD_INSIDE=1 unshare --mount --propagation private "$BASH" "$0" "$OUT" "$SUITE" "$MIRROR" "$SOURCES" "${PACKAGES[@]}"
fi

ROOT=$(mktemp -d /var/tmp/cassette-vm-root.XXXXXX)
chmod 0755 "$ROOT"
LOG=$(mktemp /var/tmp/cassette-vm-build.XXXXXX.log)
trap 'umount -R "$ROOT/proc" "$ROOT/sys" "$ROOT/dev" 2>/dev/null || true; rm -rf --one-file-system "$ROOT" "$LOG"' EXIT
in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

echo "build-image: debootstrap $SUITE from $MIRROR"
debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; exit 1; }

mount -t proc proc "$ROOT/proc"
mount -t sysfs sysfs "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
cp "$SOURCES" "$ROOT/etc/apt/sources.list"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# Nothing starts in the chroot; the mirror's Release files may be past their Valid-Until.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99vm-build"

echo "build-image: apt-get install ${#PACKAGES[@]} packages and their dependencies"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; exit 1; }
in_root apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT/usr/sbin/policy-rc.d" "$ROOT/etc/apt/apt.conf.d/99vm-build"

echo "build-image: configuring"
echo cassette-vm >"$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tcassette-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"
: >"$ROOT/etc/resolv.conf"
# A fixed machine id: no first-boot questions on the console, one journal across the reboots.
echo 5a1e77e0c0de4ca55e77e0000000c0de >"$ROOT/etc/machine-id"
printf '/dev/vda\t/\text4\trw,relatime\t0\t1\nvmtest\t/mnt/vmtest\t9p\ttrans=virtio,version=9p2000.L,msize=262144,nofail\t0\t0\n' >"$ROOT/etc/fstab"
mkdir -p "$ROOT/mnt/vmtest" "$ROOT/var/log/journal"
printf '9p\n9pnet_virtio\n' >"$ROOT/etc/modules-load.d/vmtest-9p.conf"
# systemd-networkd brings the NIC up with DHCP (qemu's user network answers it). With
# restrict=on that network announces no router: its gateway address is made the default
# route by hand, as on a LAN without Internet (the gateway forwards nothing out of the VM).
cat >"$ROOT/etc/systemd/network/80-vm.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
Gateway=10.0.2.2
EOF
cat >"$ROOT/etc/systemd/system/vmtest-runner.service" <<'EOF'
[Unit]
Description=Cassette VM test runner (from the 9p share)
RequiresMountsFor=/mnt/vmtest
ConditionPathExists=/mnt/vmtest/guest/runner.sh
After=multi-user.target

[Service]
Type=simple
ExecStart=/bin/bash /mnt/vmtest/guest/runner.sh
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
in_root systemctl enable systemd-networkd.service vmtest-runner.service >/dev/null 2>&1
if [ -e "$ROOT/lib/systemd/system/NetworkManager.service" ]; then
    in_root systemctl disable NetworkManager.service NetworkManager-wait-online.service \
        NetworkManager-dispatcher.service >/dev/null 2>&1 || true
fi
# Nothing waits for a network the test brings up itself.
in_root systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1 || true

echo "build-image: kernel, initramfs and the ext4 image"
kernel=$(ls "$ROOT"/boot/vmlinuz-* | sort -V | tail -n1)
initrd=$(ls "$ROOT"/boot/initrd.img-* | sort -V | tail -n1)
[ -f "$kernel" ] && [ -f "$initrd" ] || { echo "build-image: no kernel or initramfs in /boot" >&2; exit 1; }
mkdir -p "$OUT"
cp "$kernel" "$OUT/vmlinuz"
cp "$initrd" "$OUT/initrd.img"
umount -R "$ROOT/proc" "$ROOT/sys" "$ROOT/dev"
rm -f "$OUT/rootfs.ext4"
mke2fs -q -t ext4 -L cassette-vm -E root_owner=0:0 -d "$ROOT" "$OUT/rootfs.ext4" "$IMAGE_SIZE"
echo "build-image: $(du -sh --apparent-size "$OUT/rootfs.ext4" | cut -f1) image, $(du -sh "$OUT/rootfs.ext4" | cut -f1) on disk"
