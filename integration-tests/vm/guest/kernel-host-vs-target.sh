#!/bin/bash
# The Linux kernel NVMe host (nvme-cli, fio) against an NVMe/TCP target. Runs inside the guest as root.
# Prints "PASS name" or "FAIL name: reason" per check and "SUMMARY: N passed, M failed"; exits non-zero on any
# failure.
#
# Environment:
#   SUBNQN             subsystem NQN (required)
#   TARGET_ADDR        target address (default $NVMEOF4J_HOST_ADDR: the host's forwarded 127.0.0.1 ports)
#   TARGET_PORT        I/O port (default 4420)
#   DISCOVERY_PORT     discovery port (default: TARGET_PORT)
#   TRTYPE             tcp (default) or rdma
#   HOSTNQN, HOSTID    passed explicitly to nvme-cli (default: generated from a fresh UUID)
#   PHASE              space-separated list of: interop (default), fio-namespaces, write-pattern, check-pattern,
#                      ha-ana, ha-failover, resv-setup, resv-check (the high-availability checks of ha.sh)
#   FIO_NSIDS          fio-namespaces: the namespaces (other than NSID) that get a fio verify run and a discard
#                      check on one connection, e.g. block-device-backed ones (default "")
#   FIO_NS_JOBS        fio-namespaces: their fio jobs (default "4k:32:16M 128k:8:16M")
#   NSID               namespace used for fio, discard and the pattern (default 1)
#   EXPECT_MODEL, EXPECT_SERIAL   expected Identify Controller MN / SN (checked when set)
#   EXPECT_NSZE, EXPECT_LBADS     expected size in blocks and LBA data size (log2) of NSID (checked when set)
#   EXPECT_NAMESPACES  "nsid:nsze:lbads ..." to check several namespaces (overrides EXPECT_NSZE/EXPECT_LBADS)
#   CONNECTS           connect variants "queues:digest ..." (default "1:off 4:on"); the first FIO_FULL of
#                      them run the whole fio matrix, the others a quick dd write/read/compare
#   FIO_FULL           default 2
#   FIO_JOBS           fio matrix "bs:iodepth:size ..." (default "4k:1:4M 4k:32:16M 128k:1:16M 128k:32:16M
#                      1m:1:16M 1m:32:32M")
#   PATTERN_OFFSET     byte offset of the persistence pattern (default 48 MiB; must be 4 KiB aligned)
#   PATTERN_SIZE       bytes (default 1 MiB)      PATTERN_SEED  text mixed into the pattern (default nvmeof4j)
#   SKIP_DISCARD=1     skip the blkdiscard check
#   EXPECT_NVM_EXTRAS=1  the target serves Compare, Copy and Verify and fused Compare and Write (ours; nvmet does
#                      not): Identify must say so (ONCS bits 0/7/8, FUSES bit 0, OCFS bit 0, MSRC/MSSRL/MCL) and
#                      nvme compare / nvme copy / nvme verify run on NSID with the data checked
#   RESULTS_DIR        fio outputs and a pattern checksum are saved here when set
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=ha.sh
. "$HERE/ha.sh"

: "${SUBNQN:?SUBNQN is required}"
TARGET_ADDR="${TARGET_ADDR:-${NVMEOF4J_HOST_ADDR:-10.0.2.2}}"
TARGET_PORT="${TARGET_PORT:-4420}"
DISCOVERY_PORT="${DISCOVERY_PORT:-$TARGET_PORT}"
TRTYPE="${TRTYPE:-tcp}"
if [ -z "${HOSTID:-}" ]; then HOSTID="$(cat /proc/sys/kernel/random/uuid)"; fi
HOSTNQN="${HOSTNQN:-nqn.2014-08.org.nvmexpress:uuid:$HOSTID}"
PHASE="${PHASE:-interop}"
NSID="${NSID:-1}"
CONNECTS="${CONNECTS:-1:off 4:on}"
FIO_FULL="${FIO_FULL:-2}"
FIO_JOBS="${FIO_JOBS:-4k:1:4M 4k:32:16M 128k:1:16M 128k:32:16M 1m:1:16M 1m:32:32M}"
PATTERN_OFFSET="${PATTERN_OFFSET:-$((48 * 1024 * 1024))}"
PATTERN_SIZE="${PATTERN_SIZE:-$((1024 * 1024))}"
PATTERN_SEED="${PATTERN_SEED:-nvmeof4j}"
RESULTS_DIR="${RESULTS_DIR:-}"
FIO_NSIDS="${FIO_NSIDS:-}"
FIO_NS_JOBS="${FIO_NS_JOBS:-4k:32:16M 128k:8:16M}"
if [ -z "${EXPECT_NAMESPACES:-}" ] && { [ -n "${EXPECT_NSZE:-}" ] || [ -n "${EXPECT_LBADS:-}" ]; }; then
    EXPECT_NAMESPACES="$NSID:${EXPECT_NSZE:-}:${EXPECT_LBADS:-}"
fi
EXPECT_NAMESPACES="${EXPECT_NAMESPACES:-}"

HOSTARGS=(--hostnqn="$HOSTNQN" --hostid="$HOSTID")
CTRL=""      # e.g. nvme0
DEV=""       # e.g. /dev/nvme0n1
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

info "target $TRTYPE $TARGET_ADDR:$TARGET_PORT (discovery $DISCOVERY_PORT) subsystem $SUBNQN; host $HOSTNQN / $HOSTID; phases: $PHASE"
modprobe "nvme-$TRTYPE" 2>/dev/null
modprobe nvme-fabrics 2>/dev/null

# ---- building blocks ----------------------------------------------------------------------------------------------
disconnect_all() { # disconnects every controller of SUBNQN, waits until they are gone
    timeout 60 nvme disconnect -n "$SUBNQN" >/dev/null 2>&1
    wait_for 30 test -z "$(ctrls_of_subsys "$SUBNQN")"
}

connect() { # connect NAME QUEUES DIGEST(on|off): sets CTRL and DEV
    local name="$1" queues="$2" digest="$3" out
    local args=(-t "$TRTYPE" -a "$TARGET_ADDR" -s "$TARGET_PORT" -n "$SUBNQN" "${HOSTARGS[@]}" --nr-io-queues="$queues")
    [ "$digest" = on ] && args+=(--hdr-digest --data-digest)
    CTRL=""; DEV=""
    if ! out="$(timeout 90 nvme connect "${args[@]}" 2>&1)"; then
        fail "$name" "nvme connect ${args[*]}: $out"
        return 1
    fi
    if ! wait_for 30 test -n "$(ctrls_of_subsys "$SUBNQN")"; then
        fail "$name" "no controller of $SUBNQN in /sys/class/nvme after connect ($out)"
        return 1
    fi
    CTRL="$(ctrls_of_subsys "$SUBNQN" | head -n1)"
    if ! wait_for 30 ns_blockdev "$SUBNQN" "$NSID"; then
        fail "$name" "controller $CTRL up but no block device for nsid $NSID within 30 s"
        return 1
    fi
    DEV="$(ns_blockdev "$SUBNQN" "$NSID")"
    local state transport
    state="$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null)"
    transport="$(cat "/sys/class/nvme/$CTRL/transport" 2>/dev/null)"
    if [ "$state" != live ] || [ "$transport" != "$TRTYPE" ]; then
        fail "$name" "controller $CTRL state=$state transport=$transport"
        return 1
    fi
    pass "$name"
    info "$name: $CTRL $DEV address=$(cat "/sys/class/nvme/$CTRL/address" 2>/dev/null) ($(elapsed))"
}

no_blockdev() { ! ns_blockdev "$SUBNQN" "$NSID" >/dev/null; }

disconnect_check() { # disconnect_check NAME
    local out
    if ! out="$(timeout 60 nvme disconnect -n "$SUBNQN" 2>&1)"; then
        fail "$1" "nvme disconnect -n $SUBNQN: $out"; return 1
    fi
    if ! wait_for 30 test -z "$(ctrls_of_subsys "$SUBNQN")"; then
        fail "$1" "controllers still present after disconnect: $(ctrls_of_subsys "$SUBNQN" | tr '\n' ' ')"; return 1
    fi
    if ! wait_for 15 no_blockdev; then fail "$1" "block device $DEV still present"; return 1; fi
    case "$out" in *"disconnected 0 controller"*) fail "$1" "nvme disconnect said: $out"; return 1 ;; esac
    pass "$1"
}

check_discover() {
    local out
    if ! out="$(timeout 60 nvme discover -t "$TRTYPE" -a "$TARGET_ADDR" -s "$DISCOVERY_PORT" "${HOSTARGS[@]}" 2>&1)"; then
        fail discover "nvme discover -a $TARGET_ADDR -s $DISCOVERY_PORT: $out"; return 1
    fi
    # Find a log entry (blocks start with "=====Discovery Log Entry") with our subnqn and the I/O port.
    if echo "$out" | awk -v nqn="$SUBNQN" -v svc="$TARGET_PORT" -v tr="$TRTYPE" '
        /^=====Discovery Log Entry/ { if (n == nqn && s == svc && t == tr) ok = 1; n = s = t = "" }
        /^trtype:/  { t = $2 }
        /^trsvcid:/ { s = $2 }
        /^subnqn:/  { n = $2 }
        END { if (n == nqn && s == svc && t == tr) ok = 1; exit ok ? 0 : 1 }'; then
        pass discover
    else
        fail discover "no entry with subnqn $SUBNQN trtype $TRTYPE trsvcid $TARGET_PORT in: $(echo "$out" | tr '\n' '|')"
        return 1
    fi
}

check_id_ctrl() { # check_id_ctrl NAME
    local out v bad=""
    if ! out="$(timeout 60 nvme id-ctrl "/dev/$CTRL" 2>&1)"; then fail "$1" "nvme id-ctrl: $out"; return 1; fi
    v="$(echo "$out" | nvme_field subnqn)"; [ "$v" = "$SUBNQN" ] || bad="$bad subnqn='$v'"
    if [ -n "${EXPECT_MODEL:-}" ]; then
        v="$(echo "$out" | nvme_field mn)"; [ "$v" = "$EXPECT_MODEL" ] || bad="$bad mn='$v'(want '$EXPECT_MODEL')"
    fi
    if [ -n "${EXPECT_SERIAL:-}" ]; then
        v="$(echo "$out" | nvme_field sn)"; [ "$v" = "$EXPECT_SERIAL" ] || bad="$bad sn='$v'(want '$EXPECT_SERIAL')"
    fi
    v="$(echo "$out" | nvme_field nn)"; [ -n "$v" ] && [ "$((v))" -ge "$NSID" ] || bad="$bad nn='$v'"
    v="$(echo "$out" | nvme_field cntlid)"; [ -n "$v" ] || bad="$bad cntlid missing"
    if [ -n "$bad" ]; then fail "$1" "$bad"; return 1; fi
    pass "$1"
    info "$1: mn='$(echo "$out" | nvme_field mn)' sn='$(echo "$out" | nvme_field sn)' fr='$(echo "$out" | nvme_field fr)'" \
         "ver=$(echo "$out" | nvme_field ver) mdts=$(echo "$out" | nvme_field mdts) oncs=$(echo "$out" | nvme_field oncs)" \
         "vwc=$(echo "$out" | nvme_field vwc) ioccsz=$(echo "$out" | nvme_field ioccsz)"
}

check_id_ns() { # check_id_ns NAME: every namespace in EXPECT_NAMESPACES (or just NSID, sanity only)
    local spec nsid nsze lbads dev out v flbas inuse bad="" bytes
    local specs="${EXPECT_NAMESPACES:-$NSID::}"
    for spec in $specs; do
        IFS=: read -r nsid nsze lbads <<< "$spec"
        if ! wait_for 15 ns_blockdev "$SUBNQN" "$nsid"; then bad="$bad ns$nsid:no-blockdev"; continue; fi
        dev="$(ns_blockdev "$SUBNQN" "$nsid")"
        if ! out="$(timeout 60 nvme id-ns "$dev" -n "$nsid" 2>&1)"; then bad="$bad ns$nsid:id-ns-failed($out)"; continue; fi
        v="$(echo "$out" | nvme_field nsze)"
        flbas="$(echo "$out" | nvme_field flbas)"
        inuse="$(echo "$out" | grep -E '^lbaf +[0-9]+ *:.*in use' | sed -n 's/.*lbads:\([0-9]*\).*/\1/p' | head -n1)"
        [ "$((v))" -gt 0 ] || bad="$bad ns$nsid:nsze=$v"
        [ -n "$inuse" ] || bad="$bad ns$nsid:no-lbaf-in-use(flbas=$flbas)"
        if [ -n "$nsze" ] && [ "$((v))" != "$((nsze))" ]; then bad="$bad ns$nsid:nsze=$((v))(want $nsze)"; fi
        if [ -n "$lbads" ] && [ "$inuse" != "$lbads" ]; then bad="$bad ns$nsid:lbads=$inuse(want $lbads)"; fi
        bytes="$(blockdev --getsize64 "$dev" 2>/dev/null)"
        if [ -n "$inuse" ] && [ "$bytes" != "$(( v << inuse ))" ]; then
            bad="$bad ns$nsid:blockdev-size=$bytes(want $(( v << inuse )))"
        fi
        [ "$(blockdev --getss "$dev")" = "$((1 << ${inuse:-9}))" ] || bad="$bad ns$nsid:sector-size=$(blockdev --getss "$dev")"
        info "$1: ns$nsid $dev nsze=$((v)) lbads=$inuse bytes=$bytes"
    done
    if [ -n "$bad" ]; then fail "$1" "$bad"; return 1; fi
    pass "$1"
}

check_io_command_sets() { # check_io_command_sets NAME: CAP.CSS bit 43 made the host write CC.CSS 110b; CSI reported
    local cc descs
    if ! cc="$(timeout 60 nvme get-property "/dev/$CTRL" --offset=0x14 2>&1)"; then fail "$1" "get-property CC: $cc"; return 1; fi
    if ! echo "$cc" | grep -Eiq 'value: *(0x)?0*460061\b'; then fail "$1" "CC not 0x460061 (CSS 110b, EN): $cc"; return 1; fi
    if ! descs="$(timeout 60 nvme ns-descs "$DEV" 2>&1)"; then fail "$1" "ns-descs: $descs"; return 1; fi
    if ! echo "$descs" | grep -Eq '^csi +: +0$'; then fail "$1" "no CSI 0 descriptor: $(echo "$descs" | tr '\n' '|')"; return 1; fi
    pass "$1"
}

check_list_subsys() { # check_list_subsys NAME
    local out n
    if ! out="$(timeout 60 nvme list-subsys 2>&1)"; then fail "$1" "nvme list-subsys: $out"; return 1; fi
    n="$(echo "$out" | grep -c "NQN=$SUBNQN")"
    if [ "$n" != 1 ]; then fail "$1" "subsystem listed $n times: $(echo "$out" | tr '\n' '|')"; return 1; fi
    if ! echo "$out" | grep -Eq " $CTRL $TRTYPE traddr=$TARGET_ADDR,trsvcid=$TARGET_PORT.* live"; then
        fail "$1" "no live path '$CTRL $TRTYPE traddr=$TARGET_ADDR,trsvcid=$TARGET_PORT' in: $(echo "$out" | tr '\n' '|')"
        return 1
    fi
    pass "$1"
}

check_queues() { # check_queues NAME WANTED: the host maps min(WANTED, CPUs) I/O queues; the target may grant fewer
    local want="$1" path q cpus max
    path="$(ls -d /sys/block/"$CTRL"*/mq 2>/dev/null | head -n1)"
    [ -n "$path" ] || path="$(ls -d /sys/block/nvme*c*n*/mq 2>/dev/null | head -n1)"
    [ -n "$path" ] || path="/sys/block/$(basename "$DEV")/mq"
    q="$(ls "$path" 2>/dev/null | wc -l)"
    cpus="$(nproc)"; max=$(( want < cpus ? want : cpus ))
    if [ "$q" -ge 1 ] && [ "$q" -le "$max" ]; then
        pass "$2"; info "$2: $q I/O queue(s) (asked $want, $cpus CPUs)"
    else
        fail "$2" "$q hardware queues in $path (asked $want, $cpus CPUs)"
    fi
}

run_fio() { # run_fio NAME BS IODEPTH SIZE: random write then verify with crc32c
    local name="$1" bs="$2" qd="$3" size="$4" out rc t
    t=$(date +%s)
    out="$(timeout 300 fio --name="$name" --filename="$DEV" --ioengine=libaio --direct=1 --rw=randwrite \
        --bs="$bs" --iodepth="$qd" --size="$size" --offset=0 --numjobs=1 --verify=crc32c --do_verify=1 \
        --verify_fatal=1 --verify_backlog=0 --randrepeat=0 --norandommap=0 --group_reporting 2>&1)"
    rc=$?
    [ -n "$RESULTS_DIR" ] && [ -d "$RESULTS_DIR" ] && echo "$out" > "$RESULTS_DIR/fio-$name.txt" 2>/dev/null
    if [ "$rc" != 0 ]; then fail "$name" "fio exit $rc: $(echo "$out" | grep -iE 'err|verify|fail' | head -n 5 | tr '\n' '|')"; return 1; fi
    if echo "$out" | grep -iE 'verify.*(fail|bad|error)|bad magic|crc32c.*(fail|wanted)|err= *[1-9]' >/dev/null; then
        fail "$name" "verify errors: $(echo "$out" | grep -iE 'verify|bad magic|crc32c|err=' | head -n 5 | tr '\n' '|')"
        return 1
    fi
    if ! echo "$out" | grep -q 'err= 0'; then fail "$name" "no 'err= 0' in fio output"; return 1; fi
    pass "$name"
    info "$name: $(echo "$out" | grep -E '^ *(write|read):' | sed 's/^ *//' | tr '\n' ' ')($(( $(date +%s) - t ))s)"
}

quick_io() { # quick_io NAME: 4 MiB of random data written, read back, compared
    local name="$1" tmp; tmp="$(mktemp -d)"
    head -c $((4 * 1024 * 1024)) /dev/urandom > "$tmp/w"
    if timeout 120 dd if="$tmp/w" of="$DEV" bs=64k oflag=direct status=none conv=fsync \
       && timeout 120 dd if="$DEV" of="$tmp/r" bs=64k count=64 iflag=direct status=none \
       && cmp -s "$tmp/w" "$tmp/r"; then
        pass "$name"
    else
        fail "$name" "4 MiB written with dd did not read back equal"
    fi
    rm -rf "$tmp"
}

check_discard() { # check_discard NAME: discard 1 MiB at 4 MiB (after filling it), read back zeros
    local name="$1" off=$((4 * 1024 * 1024)) len=$((1024 * 1024)) out max
    max="$(cat "/sys/block/$(basename "$DEV")/queue/discard_max_bytes" 2>/dev/null || echo 0)"
    if [ "${max:-0}" = 0 ]; then fail "$name" "the device does not support discard (discard_max_bytes=0; ONCS DSM?)"; return 1; fi
    timeout 60 dd if=/dev/urandom of="$DEV" bs=64k seek=$((off / 65536)) count=$((len / 65536)) oflag=direct status=none conv=fsync
    if ! out="$(timeout 60 blkdiscard -o "$off" -l "$len" "$DEV" 2>&1)"; then fail "$name" "blkdiscard: $out"; return 1; fi
    local tmp; tmp="$(mktemp)"
    timeout 60 dd if="$DEV" of="$tmp" bs=64k skip=$((off / 65536)) count=$((len / 65536)) iflag=direct status=none
    if [ "$(stat -c %s "$tmp")" = "$len" ] && cmp -s "$tmp" <(head -c "$len" /dev/zero); then
        pass "$name"
    else
        fail "$name" "range $off+$len does not read back as zeros after blkdiscard:" \
             "$(stat -c %s "$tmp") bytes read, first difference: $(cmp "$tmp" <(head -c "$len" /dev/zero) 2>&1 | head -n1)"
    fi
    rm -f "$tmp"
}

# nvme compare / copy / verify (nvme-cli 2.x) on NSID, data checked with O_DIRECT dd. Block counts given to nvme-cli
# are 0-based (its -c and --blocks). The Linux host sends no fused commands (its passthrough takes no FUSE bits).
check_nvm_extras() { # check_nvm_extras NAME
    local name="$1" tmp bs ctrl_out ns_out v bad="" mcl out nsze at
    tmp="$(mktemp -d)"
    bs="$(blockdev --getss "$DEV")"
    if ! ctrl_out="$(timeout 60 nvme id-ctrl "/dev/$CTRL" 2>&1)" || ! ns_out="$(timeout 60 nvme id-ns "$DEV" -n "$NSID" 2>&1)"; then
        fail "$name-identify" "nvme id-ctrl / id-ns failed: $ctrl_out $ns_out"; rm -rf "$tmp"; return 1
    fi
    v="$(echo "$ctrl_out" | nvme_field oncs)"; [ $(( v & 0x181 )) = $(( 0x181 )) ] || bad="$bad oncs=$v(want bits 0,7,8)"
    v="$(echo "$ctrl_out" | nvme_field fuses)"; [ $(( v & 1 )) = 1 ] || bad="$bad fuses=$v"
    v="$(echo "$ctrl_out" | nvme_field ocfs)"; [ $(( v & 1 )) = 1 ] || bad="$bad ocfs=$v"
    v="$(echo "$ns_out" | nvme_field msrc)"; [ "$((v))" = 127 ] || bad="$bad msrc=$v(want 127, 0-based)"
    mcl="$(echo "$ns_out" | nvme_field mcl)"; [ "$((mcl))" = $(( 65536 / bs )) ] || bad="$bad mcl=$mcl(want $(( 65536 / bs )))"
    v="$(echo "$ns_out" | nvme_field mssrl)"; [ "$((v))" = $(( 65536 / bs )) ] || bad="$bad mssrl=$v"
    if [ -n "$bad" ]; then fail "$name-identify" "$bad"; else pass "$name-identify"; fi

    # Compare: 8 blocks at LBA 2048 equal to what was written; one byte changed is a miscompare.
    head -c $(( 8 * bs )) /dev/urandom > "$tmp/a"
    timeout 60 dd if="$tmp/a" of="$DEV" bs="$bs" seek=2048 oflag=direct status=none conv=fsync
    if out="$(timeout 60 nvme compare "$DEV" -n "$NSID" -s 2048 -c 7 -z $(( 8 * bs )) -d "$tmp/a" 2>&1)"; then
        pass "$name-compare-equal"
    else
        fail "$name-compare-equal" "nvme compare of the blocks just written: $out"
    fi
    # The byte is inverted, not overwritten with a constant: random data holds any given value 1 time in 256, and
    # then the "changed" data would equal what was written and the compare would rightly succeed.
    at=$(( 5 * bs + 17 ))
    cp "$tmp/a" "$tmp/b"
    v="$(od -An -tu1 -j "$at" -N1 "$tmp/a" | tr -d ' ')"
    printf "\\$(printf '%03o' $(( v ^ 0xFF )))" | dd of="$tmp/b" bs=1 seek="$at" conv=notrunc status=none
    if cmp -s "$tmp/a" "$tmp/b"; then
        fail "$name-compare-differs" "the check's own data: inverting byte $at left the two buffers equal"
    elif out="$(timeout 60 nvme compare "$DEV" -n "$NSID" -s 2048 -c 7 -z $(( 8 * bs )) -d "$tmp/b" 2>&1)"; then
        fail "$name-compare-differs" "nvme compare succeeded on data that differs in one byte: $out"
    elif echo "$out" | grep -qiE "miscompare|compare.?fail"; then
        pass "$name-compare-differs"
    else
        fail "$name-compare-differs" "nvme compare failed without a Compare Failure status: $out"
    fi

    # Copy: ranges (LBA 2048, 8 blocks) and (LBA 3000, 2 blocks) to LBA 4096, read back as their concatenation.
    head -c $(( 2 * bs )) /dev/urandom > "$tmp/c"
    timeout 60 dd if="$tmp/c" of="$DEV" bs="$bs" seek=3000 oflag=direct status=none conv=fsync
    cat "$tmp/a" "$tmp/c" > "$tmp/want"
    if ! out="$(timeout 60 nvme copy "$DEV" -n "$NSID" --sdlba=4096 --slbs=2048,3000 --blocks=7,1 2>&1)"; then
        fail "$name-copy" "nvme copy: $out"
    elif timeout 60 dd if="$DEV" of="$tmp/got" bs="$bs" skip=4096 count=10 iflag=direct status=none \
         && cmp -s "$tmp/want" "$tmp/got"; then
        pass "$name-copy"
    else
        fail "$name-copy" "the 10 blocks at LBA 4096 are not the two source ranges: $(cmp "$tmp/want" "$tmp/got" 2>&1 | head -n1)"
    fi
    # One block more than MCL: refused (Command Size Limit Exceeded), the destination unchanged.
    if out="$(timeout 60 nvme copy "$DEV" -n "$NSID" --sdlba=4096 --slbs=0 --blocks="$((mcl))" 2>&1)"; then
        fail "$name-copy-above-mcl" "a copy of $(( mcl + 1 )) blocks (MCL $mcl) succeeded: $out"
    elif timeout 60 dd if="$DEV" of="$tmp/got2" bs="$bs" skip=4096 count=10 iflag=direct status=none \
         && cmp -s "$tmp/want" "$tmp/got2"; then
        pass "$name-copy-above-mcl"; info "$name-copy-above-mcl: $out"
    else
        fail "$name-copy-above-mcl" "refused, but the destination changed"
    fi

    # Verify: 1024 blocks from LBA 0 pass; a range past the end is refused.
    nsze="$(echo "$ns_out" | nvme_field nsze)"
    if out="$(timeout 60 nvme verify "$DEV" -n "$NSID" -s 0 -c 1023 2>&1)"; then
        pass "$name-verify"
    else
        fail "$name-verify" "nvme verify of 1024 blocks: $out"
    fi
    if out="$(timeout 60 nvme verify "$DEV" -n "$NSID" -s $(( nsze - 1 )) -c 1 2>&1)"; then
        fail "$name-verify-beyond" "nvme verify of 2 blocks from the last one succeeded: $out"
    else
        pass "$name-verify-beyond"; info "$name-verify-beyond: $out"
    fi
    rm -rf "$tmp"
}

check_flush() {
    local out
    if out="$(timeout 60 nvme flush "$DEV" -n "$NSID" 2>&1)"; then pass "$1"; else fail "$1" "nvme flush: $out"; fi
}

make_pattern() { # the persistence pattern, deterministic from PATTERN_SEED ("yes" dies of SIGPIPE: not an error)
    { yes "nvmeof4j persistence pattern seed=$PATTERN_SEED offset=$PATTERN_OFFSET " 2>/dev/null || true; } \
        | head -c "$PATTERN_SIZE"
}

# ---- phases -------------------------------------------------------------------------------------------------------
phase_interop() {
    local i=0 variant q d name bsqd bs qd size
    disconnect_all
    check_discover
    for variant in $CONNECTS; do
        i=$((i + 1))
        q="${variant%%:*}"; d="${variant#*:}"
        name="q${q}-digest-${d}"
        connect "connect-$name" "$q" "$d" || { disconnect_all; continue; }
        check_queues "$q" "io-queues-$name"
        check_id_ctrl "id-ctrl-$name"
        if [ "$i" -le "$FIO_FULL" ]; then
            check_id_ns "id-ns-$name"
            if [ "$i" = 1 ]; then check_io_command_sets "io-command-sets-$name"; fi
            check_list_subsys "list-subsys-$name"
            for bsqd in $FIO_JOBS; do
                IFS=: read -r bs qd size <<< "$bsqd"
                run_fio "fio-verify-$name-bs$bs-qd$qd" "$bs" "$qd" "$size"
            done
            if [ "${SKIP_DISCARD:-0}" != 1 ] && [ "$i" = 1 ]; then check_discard "discard-zeroes-$name"; fi
            if [ "${EXPECT_NVM_EXTRAS:-0}" = 1 ] && [ "$i" = 1 ]; then check_nvm_extras "nvm-extras-$name"; fi
        else
            quick_io "dd-readback-$name"
        fi
        check_flush "flush-$name"
        disconnect_check "disconnect-$name"
        info "variant $name done ($(elapsed))"
    done
}

phase_fio_namespaces() { # fio verify and discard on each of FIO_NSIDS, over one connection
    local nsid bsqd bs qd size
    disconnect_all
    connect "connect-fio-namespaces" 1 off || return 1
    for nsid in $FIO_NSIDS; do
        if ! wait_for 15 ns_blockdev "$SUBNQN" "$nsid"; then fail "fio-ns$nsid" "no block device for nsid $nsid"; continue; fi
        DEV="$(ns_blockdev "$SUBNQN" "$nsid")"
        info "fio-namespaces: ns$nsid is $DEV, $(blockdev --getss "$DEV")-byte sectors"
        for bsqd in $FIO_NS_JOBS; do
            IFS=: read -r bs qd size <<< "$bsqd"
            run_fio "fio-verify-ns$nsid-bs$bs-qd$qd" "$bs" "$qd" "$size"
        done
        check_discard "discard-zeroes-ns$nsid"
    done
    DEV="$(ns_blockdev "$SUBNQN" "$NSID")"
    disconnect_check "disconnect-fio-namespaces"
}

phase_write_pattern() {
    disconnect_all
    connect "connect-write-pattern" 1 off || return 1
    local out
    if out="$(make_pattern | timeout 120 dd of="$DEV" bs=4096 seek=$((PATTERN_OFFSET / 4096)) iflag=fullblock \
                oflag=direct status=none conv=fsync 2>&1 && timeout 60 nvme flush "$DEV" -n "$NSID" 2>&1)"; then
        pass "write-pattern"
        [ -n "$RESULTS_DIR" ] && [ -d "$RESULTS_DIR" ] && make_pattern | sha256sum > "$RESULTS_DIR/pattern.sha256"
    else
        fail "write-pattern" "dd of the pattern to $DEV at $PATTERN_OFFSET failed: $out"
    fi
    disconnect_check "disconnect-write-pattern"
}

phase_check_pattern() {
    disconnect_all
    connect "connect-check-pattern" 1 off || return 1
    if timeout 120 dd if="$DEV" bs=4096 skip=$((PATTERN_OFFSET / 4096)) count=$((PATTERN_SIZE / 4096)) iflag=direct status=none \
        | cmp -s - <(make_pattern); then
        pass "check-pattern"
    else
        fail "check-pattern" "the data at $PATTERN_OFFSET on $DEV is not the pattern written before the restart"
    fi
    disconnect_check "disconnect-check-pattern"
}

for p in $PHASE; do
    case "$p" in
        interop) phase_interop ;;
        fio-namespaces) phase_fio_namespaces ;;
        write-pattern) phase_write_pattern ;;
        check-pattern) phase_check_pattern ;;
        ha-ana) phase_ha_ana ;;
        ha-failover) phase_ha_failover ;;
        resv-setup) phase_resv_setup ;;
        resv-check) phase_resv_check ;;
        *) fail "phase-$p" "unknown phase" ;;
    esac
done
disconnect_all >/dev/null 2>&1
info "total $(elapsed)"
summary
