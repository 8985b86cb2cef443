#!/usr/bin/env bash
# Builds the local base image for the nvmeof4j target image, for machines where the public default
# (eclipse-temurin:17-jre on Docker Hub) cannot be pulled: a Debian bookworm `debootstrap --variant=minbase` root
# with Debian's Java 17 runtime and the RDMA user-space libraries, imported with `docker import`.
#
#   deploy/base-image/build-base-image.sh [--print-tag]
#
# Packages come from the Debian mirror apt uses on this machine (read from /etc/apt/sources.list*), so a machine
# with a local mirror or a proxy needs nothing else. The image is tagged nvmeof4j/jre-base:bookworm-<hash>, the
# hash being that of this file: a second run finds the image and returns at once; a changed recipe builds a new
# one. The last line on stdout is the tag. --print-tag prints the tag without building.
# Needs root (debootstrap), debootstrap and a Docker engine (deploy/build-image.sh and bin/test provide both).
set -euo pipefail

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
SUITE=bookworm
# openjdk-17-jre-headless: the daemon's runtime. libibverbs1, librdmacm1, ibverbs-providers: what the RDMA JNI
# library (libnvmeof4j-rdma) loads at run time; the block-device library needs only libc. ca-certificates:
# Java's trust store. passwd: useradd/groupadd for the image's user (minbase has it, but say so).
PACKAGES=openjdk-17-jre-headless,libibverbs1,librdmacm1,ibverbs-providers,ca-certificates,passwd
HASH=$(sha256sum "$SELF" | cut -c1-12)
TAG="nvmeof4j/jre-base:$SUITE-$HASH"

log() { echo "build-base-image.sh: $*" >&2; }

if [ "${1:-}" = --print-tag ]; then
    echo "$TAG"
    exit 0
fi

if docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "$TAG"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { log "debootstrap needs root; run as root (bin/test does)"; exit 1; }
command -v debootstrap >/dev/null || { log "debootstrap is missing: apt-get install -y debootstrap"; exit 1; }

# The mirror apt uses for the suite: deb822 .sources stanzas (URIs + Suites) or one-line "deb URI SUITE ..." entries.
mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            function flush() { if (uris != "" && (" " suites " ") ~ (" " suite " ")) { split(uris, u, " "); print u[1]; found = 1; exit } uris = ""; suites = "" }
            /^[ \t]*$/ { flush(); next }
            /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
            /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
            END { if (!found) flush() }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) print $i }' "$f"
    done
}
MIRROR=$(mirror | head -n1 || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/nvmeof4j-base.XXXXXX")
trap 'umount "$work/root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
log "debootstrap --variant=minbase $SUITE from $MIRROR with $PACKAGES (a few minutes)"
if ! timeout 1800 debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/root" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
    log "debootstrap failed; the end of its log:"
    tail -n 30 "$work/debootstrap.log" >&2
    [ -f "$work/root/debootstrap/debootstrap.log" ] && tail -n 30 "$work/root/debootstrap/debootstrap.log" >&2
    exit 1
fi
# No package caches, lists or logs in the image; apt inside the image still works after an apt-get update.
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* "$work/root/var/log/"* \
    "$work/root/debootstrap"
# (java finds libjli.so through $ORIGIN, which the loader resolves through /proc: mount it for the check.)
mount -t proc proc "$work/root/proc"
chroot "$work/root" java -version >/dev/null 2>&1 || { log "java does not run in the new root"; exit 1; }
umount "$work/root/proc"

log "docker import as $TAG"
tar -C "$work/root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL org.opencontainers.image.description=\"Debian $SUITE minbase with openjdk-17-jre-headless (nvmeof4j local base)\"" \
    --change 'CMD ["/bin/bash"]' \
    - "$TAG" >/dev/null
echo "$TAG"
