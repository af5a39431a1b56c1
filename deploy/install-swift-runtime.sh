#!/usr/bin/env bash
# Installs the Swift runtime beside Cassette's binaries: copies the shared libraries of the Swift
# toolchain that the given binaries load (libswiftCore, Foundation, Dispatch, ...) into DEST and
# sets each binary's RUNPATH to RUNPATH_DIR, where DEST will be on the device.
#
# Why not link the runtime into each binary (--static-swift-stdlib): the three daemons then map
# three copies of it, and the pages of one are never shared with another's. With one copy on
# disk the kernel keeps one copy in memory for all of them: measured with `cassette-bench
# footprint`, the three daemons' proportional memory (PSS) in all went from 99 to 55-64 MiB.
#
# Usage: deploy/install-swift-runtime.sh DEST RUNPATH_DIR BINARY...   (`make install` runs it)
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 DEST RUNPATH_DIR BINARY..." >&2; exit 64; }
dest=$1 runpath=$2
shift 2
command -v patchelf >/dev/null || { echo "install-swift-runtime: patchelf is missing (apt install patchelf)" >&2; exit 1; }

for binary in "$@"; do
    resolved=$(ldd "$binary")
    if grep -q 'not found' <<<"$resolved"; then
        echo "install-swift-runtime: $binary needs a library the loader cannot find:" >&2
        grep 'not found' <<<"$resolved" >&2
        exit 1
    fi
    # The libraries the loader resolves from a Swift toolchain's runtime folder.
    libraries=$(awk '$3 ~ /\/lib\/swift\/linux\/[^\/]+\.so/ { print $3 }' <<<"$resolved")
    [ -n "$libraries" ] || continue
    install -d -m 0755 "$dest"
    for library in $libraries; do
        [ -e "$dest/$(basename "$library")" ] || install -m 0644 "$library" "$dest/"
    done
    patchelf --set-rpath "$runpath" "$binary"
done
