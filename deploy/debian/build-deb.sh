#!/usr/bin/env bash
# Builds the Debian packages from the release binaries (`make deb` builds those first):
#   cassette_<version>-<revision>_<arch>.deb         daemons, cassettectl, units, config, docs
#   cassette-dbgsym_<version>-<revision>_<arch>.deb  their debug symbols (/usr/lib/debug/.build-id)
# The layout is `make install PREFIX=/usr`'s; the binaries are stripped, Depends: is computed
# from them (dpkg-shlibdeps), and dpkg-deb --root-owner-group makes every file root's (the
# postinst gives the config its group). No debhelper, no debian/ folder in the tree.
# Environment: VERSION (required), DEB_REVISION (1), DEB_OUT (.build/deb), RELEASE_BIN
# (.build/release), DEB_MAINTAINER, SOURCE_DATE_EPOCH (default: the last commit's time).
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${VERSION:?VERSION is required (make deb sets it)}"
REVISION=${DEB_REVISION:-1}
OUT=${DEB_OUT:-.build/deb}
BIN=${RELEASE_BIN:-.build/release}
MAINTAINER=${DEB_MAINTAINER:-Cassette Maintainers <cassette-maintainers@users.noreply.github.com>}
ARCH=$(dpkg --print-architecture)
FULL="$VERSION-$REVISION"
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH=$EPOCH
EXECUTABLES=(usr/libexec/cassette/downloader usr/libexec/cassette/player usr/libexec/cassette/reporter usr/bin/cassettectl)

die() { echo "build-deb: $*" >&2; exit 1; }

STAGE=$(mktemp -d /tmp/cassette-deb.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/cassette
DBG=$STAGE/cassette-dbgsym

# The binaries must be the version being packaged.
for exe in downloader player reporter cassettectl; do
    [ -x "$BIN/$exe" ] || die "$BIN/$exe is missing: make release"
    printed=$("$BIN/$exe" --version)
    [ "$printed" = "$VERSION" ] || die "$BIN/$exe --version says '$printed', not $VERSION: rebuild with make release"
done

# The files, where `make install` puts them for PREFIX=/usr on Debian 12: with the Swift runtime
# in /usr/lib/cassette unless the binaries carry it (SWIFT_RUNTIME=static).
RUNTIME=/usr/lib/cassette
make --no-print-directory -s install DESTDIR="$ROOT" PREFIX=/usr RELEASE_BIN="$BIN" RUNTIMEDIR="$RUNTIME" \
    UNITDIR=/lib/systemd/system SYSUSERSDIR=/usr/lib/sysusers.d TMPFILESDIR=/usr/lib/tmpfiles.d \
    DBUSPOLICYDIR=/usr/share/dbus-1/system.d \
    EXAMPLEDIR=/usr/share/doc/cassette/examples ZSHCOMPDIR=/usr/share/zsh/vendor-completions >/dev/null
chmod 0755 "$ROOT"

# Each binary finds every Swift library it loads in the package, and nothing in a toolchain.
for exe in "${EXECUTABLES[@]}"; do
    for lib in $(objdump -p "$ROOT/$exe" | awk '/NEEDED/ {print $2}' | grep '^libswift\|^libFoundation\|^lib_Foundation\|^libdispatch\|^libBlocksRuntime' || true); do
        [ -f "$ROOT$RUNTIME/$lib" ] || die "$exe loads $lib, which is not in $RUNTIME"
    done
    runpath=$(readelf -d "$ROOT/$exe" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
    [ -z "$runpath" ] || [ "$runpath" = "$RUNTIME" ] || die "$exe has the RUNPATH $runpath, not $RUNTIME"
done

# Debug symbols out, into the -dbgsym package under their build id; a debuglink in.
BUILD_IDS=()
for exe in "${EXECUTABLES[@]}"; do
    id=$(readelf -n "$ROOT/$exe" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')
    if [ -n "$id" ]; then
        debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
        BUILD_IDS+=("$id")
    else
        debug=/usr/lib/debug/$exe.debug
    fi
    install -d "$DBG$(dirname "$debug")"
    objcopy --only-keep-debug --compress-debug-sections "$ROOT/$exe" "$DBG$debug"
    chmod 0644 "$DBG$debug"
    strip --remove-section=.comment --remove-section=.note "$ROOT/$exe"
    objcopy --add-gnu-debuglink="$DBG$debug" "$ROOT/$exe"
done

# The Swift runtime's libraries as the toolchain ships them carry their full symbol tables
# (.symtab/.strtab, 13 of their 75 MiB): the loader needs only the dynamic symbols, which stay.
# A backtrace then names Cassette's frames (their symbols are in the -dbgsym package) and the
# runtime's exported functions.
if [ -d "$ROOT$RUNTIME" ]; then
    strip --strip-unneeded --remove-section=.comment "$ROOT$RUNTIME"/*.so
fi

# What lintian wants of the docs: the man pages and changelog compressed, a copyright file.
DOC=$ROOT/usr/share/doc/cassette
find "$ROOT/usr/share/man" -type f -exec gzip -9n {} +
install -m 0644 deploy/debian/copyright "$DOC/copyright"
install -D -m 0644 deploy/debian/lintian-overrides "$ROOT/usr/share/lintian/overrides/cassette"
{
    echo "cassette ($FULL) unstable; urgency=medium"
    echo
    echo "  * Cassette $VERSION, packaged from the sources with make deb."
    echo
    echo " -- $MAINTAINER  $(date -u -R -d "@$EPOCH")"
} > "$DOC/changelog.Debian"
gzip -9n "$DOC/changelog.Debian"
chmod 0644 "$DOC/changelog.Debian.gz"
install -d "$DBG/usr/share/doc"
ln -s cassette "$DBG/usr/share/doc/cassette-dbgsym"

# Depends: the packages holding the shared libraries the binaries load, at the versions
# whose symbols they use (dpkg-shlibdeps wants a debian/control to run in).
mkdir -p "$STAGE/shlibs/debian"
printf 'Source: cassette\n\nPackage: cassette\nArchitecture: any\n' > "$STAGE/shlibs/debian/control"
# The Swift runtime's libraries are the package's own: dpkg-shlibdeps reads them (for what they
# load from the system) from the package root, and they need no package of their own.
PRIVATE=()
[ -d "$ROOT$RUNTIME" ] && PRIVATE=("$ROOT$RUNTIME"/*.so*)
DEPENDS=$(cd "$STAGE/shlibs" && dpkg-shlibdeps -O -l"$ROOT$RUNTIME" --ignore-missing-info \
        "${EXECUTABLES[@]/#/$ROOT/}" "${PRIVATE[@]}" 2>"$STAGE/shlibs.log" | sed -n 's/^shlibs:Depends=//p') \
    || { cat "$STAGE/shlibs.log" >&2; die "dpkg-shlibdeps failed"; }
[ -n "$DEPENDS" ] || die "dpkg-shlibdeps found no dependencies"
# The daemons open libcurl, and the player FFmpeg's libraries, on first use instead of linking
# them, so dpkg-shlibdeps cannot see them: add the packages of the sonames the loaders open
# (libcurl's is written in Shared/CCurl/loader.c; FFmpeg's are the major versions it was built
# against), at the minimum versions their shlibs files name.
curl_major=$(sed -n 's/.*"libcurl\.so\.\([0-9]*\)".*/\1/p' Shared/CCurl/loader.c)
[ -n "$curl_major" ] || die "no libcurl soname in Shared/CCurl/loader.c"
OPENED=("libcurl $curl_major")
for lib in libavutil libavcodec libavformat libswresample; do
    major=$(pkg-config --modversion "$lib" | cut -d. -f1) || die "pkg-config knows no $lib"
    OPENED+=("$lib $major")
done
for entry in "${OPENED[@]}"; do
    read -r lib major <<<"$entry"
    dep=$(awk -v l="$lib" -v m="$major" '$1 == l && $2 == m { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' /var/lib/dpkg/info/*.shlibs)
    [ -n "$dep" ] || die "no shlibs entry for $lib $major"
    DEPENDS="$DEPENDS, $dep"
done

# Control files.
install -d -m 0755 "$ROOT/DEBIAN" "$DBG/DEBIAN"
install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$ROOT/DEBIAN/"
echo /etc/cassette/cassette.json > "$ROOT/DEBIAN/conffiles"
chmod 0644 "$ROOT/DEBIAN/conffiles"
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print | sed 's#^\./##' | LC_ALL=C sort | xargs md5sum) > "$ROOT/DEBIAN/md5sums"
(cd "$DBG" && find . -path ./DEBIAN -prune -o -type f -print | sed 's#^\./##' | LC_ALL=C sort | xargs md5sum) > "$DBG/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/md5sums" "$DBG/DEBIAN/md5sums"

installed_size() { du -s -k --exclude=DEBIAN "$1" | cut -f1; }
cat > "$ROOT/DEBIAN/control" <<CONTROL
Package: cassette
Version: $FULL
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(installed_size "$ROOT")
Depends: $DEPENDS
Section: sound
Priority: optional
Description: offline-first media services for Linux devices
 Cassette keeps music and video playing on set-top boxes and other small
 devices whatever the network does. Three systemd services share one SQLite
 catalog: the downloader takes stations and products offline while the
 network policy allows, the player plays them (or streams) through ALSA, and
 the reporter delivers every play to the rights holder exactly once.
 .
 Apps talk to the services over Unix sockets in /run/cassette (length-prefixed
 JSON-RPC); members of the cassette-clients group may connect. cassettectl
 drives them from a shell.
CONTROL
cat > "$DBG/DEBIAN/control" <<CONTROL
Package: cassette-dbgsym
Source: cassette
Version: $FULL
Auto-Built-Package: debug-symbols
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(installed_size "$DBG")
Depends: cassette (= $FULL)
Section: debug
Priority: optional
Description: debug symbols for cassette
Build-Ids: ${BUILD_IDS[*]}
CONTROL

mkdir -p "$OUT"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT/cassette_${FULL}_$ARCH.deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$DBG" "$OUT/cassette-dbgsym_${FULL}_$ARCH.deb" >/dev/null
ls -l "$OUT/cassette_${FULL}_$ARCH.deb" "$OUT/cassette-dbgsym_${FULL}_$ARCH.deb"
