#!/usr/bin/env bash
# Prepares the QEMU guest used to test nvmeof4j against the Linux kernel NVMe host and target.
#
#   integration-tests/vm/prepare.sh [--refresh] [--quiet]
#
# 1. Installs the Debian packages the harness needs (root only; otherwise prints the apt-get command and fails).
# 2. Downloads Debian's stock kernel (linux-image-amd64 -> linux-image-<ver>-amd64), unpacks it with dpkg -x
#    and runs depmod on it.
# 3. Builds a busybox initramfs carrying the modules the guest needs (with their dependencies from modules.dep)
#    and an /init that mounts the host's root read-only over 9p, puts a tmpfs overlay on top, chroots in and
#    runs the job that run-guest.sh prepared.
#
# Everything lands in a cache directory (default ${NVMEOF4J_VM_CACHE:-$HOME/.cache/nvmeof4j-vm}) keyed by the
# kernel version and by a hash of this file, so a second run only checks and returns (about a second).
# On success the last line printed is the path of "$CACHE/current.env", which run-guest.sh sources
# (KVER, KERNEL, INITRD, MODULES_DIR).
# 4. Builds a debootstrap'd trixie root (nvme-cli, tlshd, keyutils, fio) for the TLS guest scripts (TRIXIE_ROOT).
# 5. Prepares a second kernel the same way: Debian's 6.12 from bookworm-backports (NVMe in-band authentication,
#    CONFIG_NVME_HOST_AUTH / CONFIG_NVME_TARGET_AUTH), described by "$CACHE/linux-6.12.env" (run-guest.sh --kernel 6.12).
set -euo pipefail

CACHE="${NVMEOF4J_VM_CACHE:-$HOME/.cache/nvmeof4j-vm}"
REFRESH=0
QUIET=0
for arg in "$@"; do
    case "$arg" in
        --refresh) REFRESH=1 ;;
        --quiet) QUIET=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "prepare.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

log() { [ "$QUIET" = 1 ] || echo "prepare.sh: $*" >&2; }
die() { echo "prepare.sh: ERROR: $*" >&2; exit 1; }

SELF="$(readlink -f "${BASH_SOURCE[0]}")"

# ---------------------------------------------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------------------------------------------
# debootstrap: step 4's trixie root (without it a fresh machine built that root only later, inside the 6.12 test).
PACKAGES=(qemu-system-x86 busybox-static kmod cpio nvme-cli fio iproute2 util-linux
          rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest debootstrap)

missing=()
for p in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "prepare.sh: missing Debian packages: ${missing[*]}" >&2
        echo "prepare.sh: run as root:  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${PACKAGES[*]}" >&2
        exit 3
    fi
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -q >&2
    timeout 1200 apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

mkdir -p "$CACHE"
# Serialise concurrent runs (two ITs preparing at once).
# The second-kernel step (4) runs this script again for its kernel while holding the lock already.
if [ -z "${NVMEOF4J_VM_LOCK_HELD:-}" ]; then
    exec 9>"$CACHE/.lock"
    flock -w 1800 9 || die "timed out waiting for the lock on $CACHE/.lock"
fi
# Step 4 names its kernel package, the apt options that reach its suite and its env file; by default: the stock
# kernel of the apt sources, described by current.env.
ENV_NAME="${NVMEOF4J_VM_ENV_NAME:-current.env}"
read -r -a APT_OPTS <<< "${NVMEOF4J_VM_APT_OPTS:-}"

# ---------------------------------------------------------------------------------------------------------------
# 2. The kernel
# ---------------------------------------------------------------------------------------------------------------
# The versioned kernel package the metapackage points at: download linux-image-amd64 and read its Depends.
kernel_pkg_from_metapackage() {
    local tmp dep
    tmp="$(mktemp -d "$CACHE/meta.XXXXXX")"
    if (cd "$tmp" && timeout 300 apt-get download -q -o APT::Sandbox::User=root linux-image-amd64 >&2); then
        dep="$(dpkg-deb -f "$tmp"/linux-image-amd64_*.deb Depends \
               | tr ',|' '\n\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)"
    fi
    rm -rf "$tmp"
    echo "${dep:-}"
}

KPKG="${NVMEOF4J_VM_KPKG:-}"
if [ -z "$KPKG" ] && [ "$REFRESH" = 0 ] && [ -f "$CACHE/current.env" ]; then
    # Stay on the kernel we already have unless asked to refresh: keeps runs reproducible and offline.
    KPKG="$(sed -n 's/^KPKG=//p' "$CACHE/current.env")"
fi
if [ -z "$KPKG" ]; then
    KPKG="$(kernel_pkg_from_metapackage)"
    if [ -z "$KPKG" ]; then
        [ "$(id -u)" = 0 ] || die "apt-get download linux-image-amd64 failed; run: apt-get update"
        timeout 600 apt-get update -q >&2
        KPKG="$(kernel_pkg_from_metapackage)"
    fi
    [ -n "$KPKG" ] || die "could not resolve the versioned kernel package behind linux-image-amd64"
fi
# Package linux-image-6.1.0-41-amd64 (or ...-amd64-unsigned) carries kernel version 6.1.0-41-amd64.
KVER="${KPKG#linux-image-}"
KVER="${KVER%-unsigned}"
KDIR="$CACHE/kernel-$KVER"
KROOT="$KDIR/root"

if [ ! -f "$KDIR/.complete" ]; then
    log "downloading kernel package $KPKG"
    rm -rf "$KDIR"
    mkdir -p "$KDIR/debs"
    (cd "$KDIR/debs" && timeout 900 apt-get download -q -o APT::Sandbox::User=root "${APT_OPTS[@]}" "$KPKG" >&2) \
        || die "apt-get download $KPKG failed"
    deb="$(ls "$KDIR"/debs/"$KPKG"_*.deb 2>/dev/null | head -n1)"
    [ -n "$deb" ] || die "no .deb for $KPKG after apt-get download"
    log "unpacking $(basename "$deb")"
    dpkg -x "$deb" "$KROOT"
    # merged-/usr packages put modules under usr/lib/modules
    if [ ! -d "$KROOT/lib/modules/$KVER" ] && [ -d "$KROOT/usr/lib/modules/$KVER" ]; then
        mkdir -p "$KROOT/lib"
        ln -s ../usr/lib/modules "$KROOT/lib/modules"
    fi
    [ -d "$KROOT/lib/modules/$KVER" ] || die "no lib/modules/$KVER in $deb"
    [ -f "$KROOT/boot/vmlinuz-$KVER" ] || die "no boot/vmlinuz-$KVER in $deb"
    log "depmod $KVER"
    depmod -b "$KROOT" "$KVER"
    rm -rf "$KDIR/debs"
    touch "$KDIR/.complete"
fi
KERNEL="$KROOT/boot/vmlinuz-$KVER"
MODULES_DIR="$KROOT/lib/modules/$KVER"

# ---------------------------------------------------------------------------------------------------------------
# 3. The initramfs
# ---------------------------------------------------------------------------------------------------------------
# Modules loaded at boot, in this order (dependencies come first automatically). Names that are built into
# the kernel or absent are skipped. Anything else can still be modprobe'd in the guest: the full module tree
# of the kernel is bind-mounted at /lib/modules/$KVER inside the chroot.
BOOT_MODULES=(
    virtio_pci virtio_net virtio_console virtio_rng
    9p 9pnet_virtio overlay configfs loop
    crc32_generic crc32-pclmul crc32c_generic crc32c-intel crct10dif_generic crct10dif-pclmul
    nvme-core nvme-fabrics nvme-tcp nvme-rdma
    nvmet nvmet-tcp nvmet-rdma
    ib_core ib_uverbs rdma_cm rdma_ucm rdma_rxe
)
# Step 4 adds what its kernel needs at boot (modules the guest cannot load on demand from the initramfs root).
read -r -a EXTRA_MODULES <<< "${NVMEOF4J_VM_EXTRA_MODULES:-}"
BOOT_MODULES+=("${EXTRA_MODULES[@]}")

HASH="$(sha256sum "$SELF" | cut -c1-16)"
IDIR="$CACHE/initramfs-$KVER-$HASH"
INITRD="$IDIR/initramfs.cpio.gz"

if [ ! -f "$IDIR/.complete" ]; then
    log "building initramfs for $KVER"
    rm -rf "$IDIR"
    STAGE="$IDIR/stage"
    mkdir -p "$STAGE"/{bin,sbin,dev,proc,sys,newroot,lib/modules/"$KVER",etc,tmp,run}
    cp /bin/busybox "$STAGE/bin/busybox"
    file_out="$(file -b "$STAGE/bin/busybox" 2>/dev/null || true)"
    case "$file_out" in *dynamically*) die "/bin/busybox is dynamically linked; install busybox-static" ;; esac

    # Resolve each module with its dependencies, in load order, using kmod's modprobe on the unpacked tree.
    : > "$STAGE/etc/modules.order"
    declare -A seen=()
    for m in "${BOOT_MODULES[@]}"; do
        if ! deps="$(modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" 2>/dev/null)"; then
            log "  module $m: not found, skipped"
            continue
        fi
        while read -r kind path _rest; do
            [ "$kind" = insmod ] || continue   # "builtin xyz" lines need nothing
            rel="${path#"$KROOT"}"
            rel="${rel#/usr}"                  # /lib/modules/... inside the initramfs
            [ -n "${seen[$rel]:-}" ] && continue
            seen[$rel]=1
            dest="$STAGE$rel"
            mkdir -p "$(dirname "$dest")"
            case "$path" in
                *.ko.xz) xz -dc "$path" > "${dest%.xz}"; rel="${rel%.xz}" ;;
                *.ko.zst) zstd -qdc "$path" > "${dest%.zst}"; rel="${rel%.zst}" ;;
                *.ko.gz) gzip -dc "$path" > "${dest%.gz}"; rel="${rel%.gz}" ;;
                *) cp "$path" "$dest" ;;
            esac
            echo "$rel" >> "$STAGE/etc/modules.order"
        done <<< "$deps"
    done
    log "  $(wc -l < "$STAGE/etc/modules.order") module files"
    echo "$KVER" > "$STAGE/etc/kver"

    cat > "$STAGE/init" <<'INIT'
#!/bin/busybox sh
# nvmeof4j guest init (generated by integration-tests/vm/prepare.sh)
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || mdev -s
KVER="$(cat /etc/kver)"

say() { echo "nvmeof4j-init: $*" > /dev/console; }
halt_now() {
    sync
    poweroff -f
    echo o > /proc/sysrq-trigger
    sleep 5
}
fail() { say "FATAL: $*"; echo "NVMEOF4J-GUEST-EXIT=125" > /dev/console; halt_now; }

arg() { # value of nvmeof4j.<name>= on the kernel command line
    for w in $(cat /proc/cmdline); do
        case "$w" in "nvmeof4j.$1="*) echo "${w#nvmeof4j.$1=}"; return 0 ;; esac
    done
    return 1
}

while read -r m; do
    insmod "$m" 2>/dev/null || true   # already loaded / not needed on this CPU (e.g. pclmul): ignore
done < /etc/modules.order

ROOTTAG="$(arg roottag || echo nvmeof4j_root)"
mkdir -p /lower /upper
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose "$ROOTTAG" /lower \
    || fail "cannot mount host root over 9p (tag $ROOTTAG)"
mount -t tmpfs -o mode=0755,size=75% tmpfs /upper || fail "tmpfs"
mkdir -p /upper/upper /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/upper,workdir=/upper/work /newroot \
    || fail "cannot mount the overlay"
R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
# devtmpfs has no /dev/fd & co (udev makes them on a normal system); bash process substitution needs /dev/fd.
ln -sfn /proc/self/fd $R/dev/fd
ln -sfn /proc/self/fd/0 $R/dev/stdin
ln -sfn /proc/self/fd/1 $R/dev/stdout
ln -sfn /proc/self/fd/2 $R/dev/stderr
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t configfs configfs $R/sys/kernel/config 2>/dev/null || true
mount -t tmpfs -o mode=0755 tmpfs $R/run
# A plain tmpfs (not the overlay) for kernel-target backing files: on the overlay the block size reads as 1.
mkdir -p $R/nvmeof4j-tmpfs
mount -t tmpfs -o mode=1777,size=1536m tmpfs $R/nvmeof4j-tmpfs
# The kernel's full module tree (unpacked on the host, seen through 9p) so modprobe works in the chroot.
MODHOST="$(arg modules || true)"
if [ -L $R/lib ]; then MODBASE=$R/usr/lib/modules; else MODBASE=$R/lib/modules; fi
mkdir -p "$MODBASE/$KVER"
if [ -n "$MODHOST" ] && [ -d "$R$MODHOST" ]; then
    mount --bind "$R$MODHOST" "$MODBASE/$KVER"
else
    mount --bind /lib/modules/$KVER "$MODBASE/$KVER"
fi
# Control share (writable): job.sh from the host, exit code back to the host.
CTL=/run/nvmeof4j-ctl
mkdir -p $R$CTL
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 nvmeof4j_ctl $R$CTL || fail "cannot mount control share"
# Results share (writable), mounted at the same path as on the host.
RES="$(arg results || true)"
if [ -n "$RES" ]; then
    mkdir -p "$R$RES"
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 nvmeof4j_results "$R$RES" \
        || fail "cannot mount results share at $RES"
fi

# Network: guest 10.0.2.15/24 on the user-mode network; deliberately no default route, so nothing outside
# 10.0.2.0/24 (the guest itself and 10.0.2.2 = the host's loopback) is reachable.
ip link set lo up
if ip link show eth0 >/dev/null 2>&1; then
    ip addr add 10.0.2.15/24 dev eth0
    ip link set eth0 up
fi
hostname nvmeof4j-guest

[ -f $R$CTL/job.sh ] || fail "no job.sh in the control share"
chroot $R /bin/sh $CTL/job.sh < /dev/null > /dev/console 2>&1
rc=$?
echo "$rc" > $R$CTL/exit-code
sync
echo "NVMEOF4J-GUEST-EXIT=$rc" > /dev/console
umount $R$CTL 2>/dev/null
[ -n "$RES" ] && umount "$R$RES" 2>/dev/null
halt_now
INIT
    chmod 0755 "$STAGE/init"
    (cd "$STAGE" && find . -mindepth 1 | sort | cpio -o -H newc --quiet | gzip -1 > "$INITRD.tmp")
    mv "$INITRD.tmp" "$INITRD"
    rm -rf "$STAGE"
    touch "$IDIR/.complete"
    # Old initramfs builds for this kernel are dead weight (the other kernel's stay).
    for old in "$CACHE"/initramfs-"$KVER"-*; do
        [ "$old" = "$IDIR" ] || rm -rf "$old"
    done
fi

# ---------------------------------------------------------------------------------------------------------------
# 4. Trixie root file system for NVMe/TCP TLS (owned by the TLS work; the second-kernel block is separate)
# ---------------------------------------------------------------------------------------------------------------
# The Linux host's TLS needs tlshd (ktls-utils) and nvme-cli >= 2.7; bookworm has neither, trixie has both. A
# debootstrap'd trixie root (as deploy/base-image does for bookworm) lives in the cache; the guest sees it through
# the 9p root and a guest script chroots into it (trixie_chroot in guest/tls-lib.sh) for nvme-cli, tlshd, keyctl
# and fio. Keyed by a hash of the package list so a changed list builds a new root. A failure here does not stop
# the 6.1 harness: TRIXIE_ROOT stays empty and the TLS guest script reports why it cannot run.
TRIXIE_PACKAGES=nvme-cli,ktls-utils,keyutils,fio,kmod,iproute2,procps,util-linux
TRIXIE_HASH="$(echo "$TRIXIE_PACKAGES" | sha256sum | cut -c1-12)"
TRIXIE_DIR="$CACHE/trixie-$TRIXIE_HASH"
TRIXIE_ROOT=""
if [ -f "$TRIXIE_DIR/.complete" ]; then
    TRIXIE_ROOT="$TRIXIE_DIR/root"
elif [ "${NVMEOF4J_VM_NO_TRIXIE:-0}" = 1 ]; then
    log "trixie root skipped (NVMEOF4J_VM_NO_TRIXIE=1): TLS guest tests cannot run"
elif [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
    log "trixie root not built: needs root and debootstrap (apt-get install debootstrap); TLS guest tests cannot run"
else
    TRIXIE_MIRROR="$(sed -n 's/^URIs:[ \t]*\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
                     | grep -v security | head -n1 || true)"
    TRIXIE_MIRROR="${TRIXIE_MIRROR:-http://deb.debian.org/debian}"
    log "debootstrap trixie from $TRIXIE_MIRROR with $TRIXIE_PACKAGES (a few minutes, once)"
    rm -rf "$TRIXIE_DIR"
    mkdir -p "$TRIXIE_DIR"
    if timeout 1800 debootstrap --variant=minbase --include="$TRIXIE_PACKAGES" trixie "$TRIXIE_DIR/root" \
            "$TRIXIE_MIRROR" > "$TRIXIE_DIR/debootstrap.log" 2>&1; then
        rm -rf "$TRIXIE_DIR/root/var/cache/apt/archives/"*.deb "$TRIXIE_DIR/root/var/lib/apt/lists/"*
        # tlshd reads its keyrings from this file; ".nvme" is the kernel keyring nvme-cli inserts PSKs into.
        mkdir -p "$TRIXIE_DIR/root/etc/tlshd"
        printf '[debug]\nloglevel=1\ntls=1\nnl=0\n\n[authenticate]\nkeyrings=.nvme\n' \
            > "$TRIXIE_DIR/root/etc/tlshd.conf"
        touch "$TRIXIE_DIR/.complete"
        TRIXIE_ROOT="$TRIXIE_DIR/root"
        for old in "$CACHE"/trixie-*; do
            [ "$old" = "$TRIXIE_DIR" ] || rm -rf "$old"
        done
    else
        log "debootstrap trixie failed (TLS guest tests cannot run); the end of its log:"
        tail -n 20 "$TRIXIE_DIR/debootstrap.log" >&2 || true
        tail -n 20 "$TRIXIE_DIR/root/debootstrap/debootstrap.log" >&2 2>/dev/null || true
    fi
fi
# ----------------------------------------------------------------------------------------- end of trixie block

cat > "$CACHE/$ENV_NAME.tmp" <<EOF
KPKG=$KPKG
KVER=$KVER
KERNEL=$KERNEL
INITRD=$INITRD
MODULES_DIR=$MODULES_DIR
TRIXIE_ROOT=$TRIXIE_ROOT
EOF
mv "$CACHE/$ENV_NAME.tmp" "$CACHE/$ENV_NAME"
log "ready: kernel $KVER"

# ---------------------------------------------------------------------------------------------------------------
# 5. Second kernel: Linux 6.12 from bookworm-backports (auth-chap; keep this block self-contained)
# ---------------------------------------------------------------------------------------------------------------
# Debian 12's 6.1 has neither CONFIG_NVME_HOST_AUTH nor CONFIG_NVME_TARGET_AUTH; the backports kernel, built for
# Debian 12, has both. apt reaches bookworm-backports through a sources list and package lists private to this
# cache (the system's apt configuration is left alone), on the same Debian mirror the system's sources name.
# Its kernel package is pinned in linux-6.12.env like the stock one (--refresh resolves it again). A failure
# here leaves the 6.1 kernel usable and says so; run-guest.sh --kernel 6.12 then fails for want of the env file.
prepare_backports_kernel() {
    local apt_dir="$CACHE/apt-bookworm-backports" env="$CACHE/linux-6.12.env" mirror kpkg="" tmp opts
    if [ "$REFRESH" = 0 ] && [ -f "$env" ]; then
        kpkg="$(sed -n 's/^KPKG=//p' "$env")"
    fi
    opts="-o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/dev/null"
    opts="$opts -o Dir::State::Lists=$apt_dir/lists -o Dir::Cache=$apt_dir/cache"
    mirror="$(sed -n 's|^URIs: *\(https\{0,1\}://[^ ]*/debian\)/\{0,1\} *$|\1|p' \
              /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
    mirror="${mirror:-http://deb.debian.org/debian}"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" \
        > "$apt_dir/sources.list"
    if [ -z "$kpkg" ]; then
        # shellcheck disable=SC2086  # $opts is a word list on purpose
        timeout 300 apt-get $opts -o APT::Sandbox::User=root update -q >&2 || return 1
        tmp="$(mktemp -d "$CACHE/meta612.XXXXXX")"
        # shellcheck disable=SC2086
        if (cd "$tmp" && timeout 300 apt-get $opts -o APT::Sandbox::User=root download -q linux-image-amd64 >&2); then
            kpkg="$(dpkg-deb -f "$tmp"/linux-image-amd64_*.deb Depends \
                    | tr ',|' '\n\n' | sed -n 's/^ *\(linux-image-6\.12[^ ]*\).*/\1/p' | head -n1)"
        fi
        rm -rf "$tmp"
        [ -n "$kpkg" ] || return 1
    fi
    local quiet=()
    [ "$QUIET" = 1 ] && quiet=(--quiet)
    # The kernel's crypto API loads hmac, the hashes and the ffdhe groups on demand through the initramfs root,
    # which only holds the boot modules: so they are boot modules here.
    NVMEOF4J_VM_EXTRA_MODULES="nvme-auth nvme-keyring hmac sha256_generic sha512_generic dh_generic" \
    NVMEOF4J_VM_LOCK_HELD=1 NVMEOF4J_VM_KPKG="$kpkg" NVMEOF4J_VM_ENV_NAME=linux-6.12.env \
        NVMEOF4J_VM_APT_OPTS="$opts" "$SELF" "${quiet[@]}" >/dev/null
}
if [ -z "${NVMEOF4J_VM_KPKG:-}" ]; then
    prepare_backports_kernel || log "WARNING: the Linux 6.12 kernel (bookworm-backports) could not be prepared;" \
        "the 6.1 guest is ready, run-guest.sh --kernel 6.12 is not"
fi
# ---- end of the second-kernel block -----------------------------------------------------------------------------
echo "$CACHE/$ENV_NAME"
