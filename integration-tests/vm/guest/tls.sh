#!/bin/bash
# NVMe/TCP with TLS 1.3 (pre-shared keys) against Linux 6.12, in the 6.12 guest as root. nvme-cli >= 2.7, tlshd
# (ktls-utils) and keyctl come from the trixie root file system prepare.sh builds ($TRIXIE_ROOT); the guest's
# bookworm tools (fio, the JDK) come from the host root as usual. Prints PASS/FAIL lines and a SUMMARY; exits
# non-zero on any failure. All checks of both directions run in this one boot.
#
# Phase kernel-host (the Linux host with tlshd against our target, which runs on the host at TARGET_ADDR):
#   the PSK is inserted into the .nvme keyring with `nvme check-tls-key --insert` (identity version 0, which the
#   kernel looks up by itself for `nvme connect --tls`, and version 1, passed by key serial with --tls_key);
#   fio verify on each connection; a host whose keyring holds a wrong PSK is refused; a plain connect to the
#   TLS-required port is refused; then fio 4 KiB random read QD1 and QD32 over TLS and over plain TCP.
# Phase our-initiator (bin/nvmeof against the Linux nvmet TLS port in the guest): write 1 MiB, read it back and
#   compare; a wrong PSK and a plain connect refused; nvmeof perf QD1/QD32 over TLS and plain.
#
# Environment:
#   TRIXIE_ROOT        the trixie root (required)
#   PHASES             "kernel-host our-initiator" (default both)
#   TARGET_ADDR        our target (default 10.0.2.2 = the host's 127.0.0.1); TLS_PORT (TLS required) and
#   PLAIN_PORT         (plain) ports exporting SUBNQN; HOSTNQN/HOSTID: the host our target holds TLS_KEY for;
#   WRONG_HOSTNQN      a host our target holds another key for (the guest inserts TLS_KEY for it: wrong PSK)
#   TLS_KEY            the configured PSK (NVMeTLSkey-1:01:...:)
#   PERF_SECONDS       per perf run (default 5)
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nvmet.sh
. "$HERE/nvmet.sh"

: "${TRIXIE_ROOT:?TRIXIE_ROOT (the trixie root from prepare.sh) is required}"
: "${TLS_KEY:?TLS_KEY is required}"
PHASES="${PHASES:-kernel-host our-initiator}"
TARGET_ADDR="${TARGET_ADDR:-10.0.2.2}"
SUBNQN="${SUBNQN:-nqn.2026-11.io.nvmeof4j:tls-guest}"
HOSTID="${HOSTID:-$(cat /proc/sys/kernel/random/uuid)}"
HOSTNQN="${HOSTNQN:-nqn.2014-08.org.nvmexpress:uuid:$HOSTID}"
WRONG_HOSTNQN="${WRONG_HOSTNQN:-}"
PERF_SECONDS="${PERF_SECONDS:-5}"
RES="${RESULTS_DIR:-/tmp}"
NVMEOF_CLI="${NVMEOF_CLI:-$PROJECT/bin/nvmeof}"
KSUBNQN="nqn.2026-11.io.nvmeof4j:linux-tls-target"
KTLS_PORT=4430
KPLAIN_PORT=4431
export NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

T() { chroot "$TRIXIE_ROOT" "$@"; }   # a trixie tool (nvme-cli 2.13, keyctl, tlshd)

info "kernel $(uname -r); trixie: $(T nvme version 2>&1 | head -n 1); phases: $PHASES"

# ---- the trixie tools ----------------------------------------------------------------------------------------------
for d in proc sys dev run; do
    mount --rbind "/$d" "$TRIXIE_ROOT/$d" || { fail trixie-mounts "cannot bind /$d into $TRIXIE_ROOT"; summary; exit 1; }
done
mkdir -p "$TRIXIE_ROOT/tmp" && mount -t tmpfs tmpfs "$TRIXIE_ROOT/tmp"
# kTLS: tlshd hands the session keys to the kernel, whose tls module then needs the AEAD. The crypto API would
# load gcm(aes) on demand through the initramfs' modprobe, which has no such modules: load them from here.
modprobe -a tls gcm ghash_generic aes_generic aesni_intel ghash_clmulni_intel ctr ccm chacha20poly1305 2>/dev/null
modprobe nvme-tcp 2>/dev/null
modprobe nvmet-tcp 2>/dev/null
grep -q '^tls' /proc/modules || [ -d /sys/module/tls ] || info "no tls module: tlshd's kTLS setup will fail"
T /usr/sbin/tlshd -s > "$RES/tlshd.log" 2>&1 &
TLSHD=$!
sleep 1
if kill -0 "$TLSHD" 2>/dev/null; then pass tlshd-running; else fail tlshd-running "$(tail -n 5 "$RES/tlshd.log")"; fi
KEYRING="$(T keyctl search %:.nvme keyring .nvme 2>/dev/null || awk '$9 == ".nvme:" {print $1}' /proc/keys | head -n1)"
info ".nvme keyring: ${KEYRING:-none}; $(grep -c 'psk' /proc/keys) psk keys"

insert_key() { # insert_key HOSTNQN SUBNQN IDENTITY_VERSION: prints the key serial
    local out
    out="$(T nvme check-tls-key --hostnqn="$1" --subsysnqn="$2" --keydata="$TLS_KEY" --identity="$3" --insert 2>&1)"
    echo "$out" | sed -n 's/.*Inserted TLS key \([0-9a-fx]*\).*/\1/p' | head -n1
    echo "$out" >> "$RES/keys.log"
}

fio_run() { # fio_run NAME DEV RW BS QD SECONDS [extra]: prints IOPS
    local name="$1" dev="$2" rw="$3" bs="$4" qd="$5" secs="$6"; shift 6
    fio --name="$name" --filename="$dev" --rw="$rw" --bs="$bs" --iodepth="$qd" --ioengine=libaio --direct=1 \
        --runtime="$secs" --time_based --size=32M --output-format=json "$@" > "$RES/fio-$name.json" 2>&1 \
        && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["jobs"][0]["read"]["iops"] + j["jobs"][0]["write"]["iops"]))' "$RES/fio-$name.json"
}

# ---- phase kernel-host ---------------------------------------------------------------------------------------------
kernel_connect() { # kernel_connect NAME PORT ARGS...: sets DEV; fails NAME otherwise
    local name="$1" port="$2" out; shift 2
    DEV=""
    if ! out="$(timeout 60 chroot "$TRIXIE_ROOT" nvme connect -t tcp -a "$TARGET_ADDR" -s "$port" -n "$SUBNQN" --hostnqn="$HOSTNQN" \
            --hostid="$HOSTID" --nr-io-queues=2 "$@" 2>&1)"; then
        fail "$name" "nvme connect $*: $out; tlshd: $(tail -n 3 "$RES/tlshd.log" | tr '\n' ' ')"
        return 1
    fi
    if ! wait_for 30 ns_blockdev "$SUBNQN" 1; then
        fail "$name" "no namespace block device after connect ($out)"
        return 1
    fi
    DEV="$(ns_blockdev "$SUBNQN" 1)"
    pass "$name"
}
kernel_disconnect() {
    timeout 60 chroot "$TRIXIE_ROOT" nvme disconnect -n "$SUBNQN" > /dev/null 2>&1
    wait_for 30 test -z "$(ctrls_of_subsys "$SUBNQN")"
}
kernel_verify() { # kernel_verify NAME: fio write + verify on $DEV
    if fio --name="$1" --filename="$DEV" --rw=randwrite --bs=4k --iodepth=16 --ioengine=libaio --direct=1 \
        --size=8M --verify=crc32c --do_verify=1 --verify_fatal=1 --output="$RES/fio-$1.txt" > /dev/null 2>&1 \
        && fio --name="$1-128k" --filename="$DEV" --rw=write --bs=128k --iodepth=4 --ioengine=libaio --direct=1 \
        --offset=16M --size=8M --verify=md5 --do_verify=1 --verify_fatal=1 >> "$RES/fio-$1.txt" 2>&1; then
        pass "$1"
    else
        fail "$1" "fio verify failed: $(grep -iE 'err|verify' "$RES/fio-$1.txt" | head -n 3 | tr '\n' ' ')"
    fi
}

if [[ " $PHASES " == *" kernel-host "* ]]; then
    : "${TLS_PORT:?TLS_PORT is required}"
    : "${PLAIN_PORT:?PLAIN_PORT is required}"
    info "kernel host $HOSTNQN -> our target $TARGET_ADDR:$TLS_PORT (TLS) / $PLAIN_PORT (plain), $SUBNQN"
    # Version 0 first, alone: what a plain `nvme connect --tls` finds in the keyring when nothing else is there
    # (the kernel prefers a version-1 key when it has one).
    serial0="$(insert_key "$HOSTNQN" "$SUBNQN" 0)"
    info "inserted PSK v0: ${serial0:-?}: $(grep -E 'NVMe[01]R' /proc/keys | awk '{print $9, $10, $11}' | tr '\n' ';')"
    if kernel_connect kernel-tls-connect-v0 "$TLS_PORT" --tls; then
        info "controller tls_key: $(cat /sys/class/nvme/"$(ctrls_of_subsys "$SUBNQN" | head -n1)"/tls_key 2>/dev/null || echo '?')"
        kernel_verify kernel-tls-fio-verify-v0
        iops_tls_qd1="$(fio_run tls-qd1 "$DEV" randread 4k 1 "$PERF_SECONDS")"
        iops_tls_qd32="$(fio_run tls-qd32 "$DEV" randread 4k 32 "$PERF_SECONDS")"
        kernel_disconnect
    fi
    serial1="$(insert_key "$HOSTNQN" "$SUBNQN" 1)"
    info "inserted PSK v1: ${serial1:-?}"
    # nvme-cli prints the serial in hex and takes it in decimal.
    if [ -n "$serial1" ] && kernel_connect kernel-tls-connect-v1 "$TLS_PORT" --tls --tls_key="$((16#$serial1))"; then
        info "controller tls_key: $(cat /sys/class/nvme/"$(ctrls_of_subsys "$SUBNQN" | head -n1)"/tls_key 2>/dev/null || echo '?')"
        kernel_verify kernel-tls-fio-verify-v1
        kernel_disconnect
    elif [ -z "$serial1" ]; then
        fail kernel-tls-connect-v1 "nvme check-tls-key --identity=1 --insert printed no serial: $(tail -n 2 "$RES/keys.log")"
    fi
    if kernel_connect kernel-plain-connect "$PLAIN_PORT"; then
        iops_plain_qd1="$(fio_run plain-qd1 "$DEV" randread 4k 1 "$PERF_SECONDS")"
        iops_plain_qd32="$(fio_run plain-qd32 "$DEV" randread 4k 32 "$PERF_SECONDS")"
        kernel_disconnect
    fi
    info "PERF kernel-host->our-target 4k randread IOPS: TLS QD1 ${iops_tls_qd1:-?} QD32 ${iops_tls_qd32:-?}; plain QD1 ${iops_plain_qd1:-?} QD32 ${iops_plain_qd32:-?}"

    # Refusals: the connect must run and fail (not time out), and no controller may remain.
    refused() { # refused NAME OUTFILE HOSTNQN ARGS...
        local name="$1" outfile="$2" host="$3" rc; shift 3
        timeout 60 chroot "$TRIXIE_ROOT" nvme connect -t tcp -a "$TARGET_ADDR" -n "$SUBNQN" --hostnqn="$host" "$@" \
            > "$outfile" 2>&1
        rc=$?
        if [ "$rc" = 0 ]; then
            fail "$name" "nvme connect $* succeeded"
            kernel_disconnect
        elif [ "$rc" -ge 124 ]; then
            fail "$name" "nvme connect $* did not run to a verdict (exit $rc): $(tail -n 2 "$outfile" | tr '\n' ' ')"
        elif [ -n "$(ctrls_of_subsys "$SUBNQN")" ]; then
            fail "$name" "a controller of $SUBNQN exists after the failed connect"
        else
            pass "$name"
            info "$name: exit $rc: $(tail -n 1 "$outfile")"
        fi
    }
    if [ -n "$WRONG_HOSTNQN" ]; then
        insert_key "$WRONG_HOSTNQN" "$SUBNQN" 0 > /dev/null   # TLS_KEY, but our target holds another key for it
        refused kernel-wrong-psk-refused "$RES/wrong-psk.txt" "$WRONG_HOSTNQN" -s "$TLS_PORT" --tls
    fi
    refused kernel-plain-on-tls-port-refused "$RES/plain-on-tls.txt" "$HOSTNQN" -s "$TLS_PORT" --hostid="$HOSTID"
fi

# ---- phase our-initiator -------------------------------------------------------------------------------------------
cli() { # cli ARGS...: bin/nvmeof against the kernel target
    timeout --kill-after=10 180 "$NVMEOF_CLI" "$@"
}
if [[ " $PHASES " == *" our-initiator "* ]]; then
    IHOSTID="$(cat /proc/sys/kernel/random/uuid)"
    IHOSTNQN="nqn.2014-08.org.nvmexpress:uuid:$IHOSTID"
    FILE="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}/tls-ns1.img"
    nvmet_clear
    if nvmet_subsystem "$KSUBNQN" "linux-nvmet-tls" "kerneltls0000001" && nvmet_file_ns "$KSUBNQN" 1 "$FILE" 64M \
        && nvmet_port 2 tcp 127.0.0.1 "$KTLS_PORT" \
        && echo tls1.3 > "$NVMET_CFS/ports/2/addr_tsas" && echo required > "$NVMET_CFS/ports/2/addr_treq" \
        && nvmet_link 2 "$KSUBNQN" && nvmet_port 3 tcp 127.0.0.1 "$KPLAIN_PORT" && nvmet_link 3 "$KSUBNQN" \
        && wait_tcp_port 127.0.0.1 "$KTLS_PORT" 20; then
        pass nvmet-tls-port-setup
        info "nvmet port 2: tsas $(cat "$NVMET_CFS/ports/2/addr_tsas"), treq $(cat "$NVMET_CFS/ports/2/addr_treq")"
    else
        fail nvmet-tls-port-setup "configfs: $(ls "$NVMET_CFS/ports/2" 2>&1 | tr '\n' ' ')"
    fi
    # nvme-cli 2.13 derives as libnvme < 1.16 does: our initiator offers the same identity with --tls-compat.
    iserial="$(insert_key "$IHOSTNQN" "$KSUBNQN" 1)"
    info "PSK for our initiator: ${iserial:-?} $(grep -F "$IHOSTNQN" /proc/keys | awk '{print $9}')"
    printf '%s\n' "$TLS_KEY" > "$RES/tls.key"
    chmod 600 "$RES/tls.key"
    # A generous connect timeout: a fresh JVM's first TLS handshake in this software-emulated guest takes seconds.
    TLSARGS=(-t tcp -a 127.0.0.1 -s "$KTLS_PORT" -n "$KSUBNQN" -q "$IHOSTNQN" -I "$IHOSTID" --tls --tls-compat
             --tls-key "@$RES/tls.key" --connect-timeout 60000)
    head -c $((1024 * 1024)) /dev/urandom > "$RES/data.bin"
    if cli write "${TLSARGS[@]}" --start-block 256 -z 1M -d "$RES/data.bin" > "$RES/cli-write.txt" 2>&1 \
        && cli read "${TLSARGS[@]}" --start-block 256 -z 1M -d "$RES/data.back" > "$RES/cli-read.txt" 2>&1 \
        && cmp -s "$RES/data.bin" "$RES/data.back"; then
        pass our-initiator-tls-verified-io
    else
        fail our-initiator-tls-verified-io "$(tail -n 3 "$RES/cli-write.txt" "$RES/cli-read.txt" 2>/dev/null | tr '\n' ' ')"
    fi
    python3 -c 'import base64, os, zlib; k = os.urandom(32)
print("NVMeTLSkey-1:01:" + base64.b64encode(k + zlib.crc32(k).to_bytes(4, "little")).decode() + ":")' \
        > "$RES/wrong.key"
    if cli read -t tcp -a 127.0.0.1 -s "$KTLS_PORT" -n "$KSUBNQN" -q "$IHOSTNQN" -I "$IHOSTID" --tls --tls-compat \
        --tls-key "@$RES/wrong.key" --connect-timeout 60000 -z 4k -d /dev/null > "$RES/cli-wrong.txt" 2>&1; then
        fail our-initiator-wrong-psk-refused "read with a wrong PSK succeeded"
    else
        if grep -q 'TLS handshake' "$RES/cli-wrong.txt"; then
            pass our-initiator-wrong-psk-refused
        else
            fail our-initiator-wrong-psk-refused "refused, but not in the TLS handshake: $(tail -n 1 "$RES/cli-wrong.txt")"
        fi
        info "wrong PSK: $(tail -n 1 "$RES/cli-wrong.txt")"
    fi
    if cli read -t tcp -a 127.0.0.1 -s "$KTLS_PORT" -n "$KSUBNQN" -q "$IHOSTNQN" -I "$IHOSTID" -z 4k -d /dev/null \
        > "$RES/cli-plain.txt" 2>&1; then
        fail our-initiator-plain-refused "a plain read on nvmet's TLS-required port succeeded"
    else
        pass our-initiator-plain-refused
    fi
    for qd in 1 32; do
        for mode in tls plain; do
            if [ "$mode" = tls ]; then args=("${TLSARGS[@]}"); else
                args=(-t tcp -a 127.0.0.1 -s "$KPLAIN_PORT" -n "$KSUBNQN" -q "$IHOSTNQN" -I "$IHOSTID"
                      --connect-timeout 60000); fi
            cli perf "${args[@]}" --queue-depth "$qd" --io-size 4096 --workload randread --time "$PERF_SECONDS" \
                --json > "$RES/perf-$mode-qd$qd.json" 2> "$RES/perf-$mode-qd$qd.err"
            iops="$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        j = json.loads(line); print(int(j.get("iops", 0))); break' "$RES/perf-$mode-qd$qd.json" 2>/dev/null)"
            info "PERF our-initiator->nvmet $mode QD$qd 4k randread IOPS ${iops:-?}"
        done
    done
    # The kernel pair on the same nvmet ports: the Linux host over TLS (kTLS through tlshd on both ends) and plain,
    # so the TLS / plain ratio of the kernel's own stack stands beside ours in the same run.
    kserial="$(insert_key "$HOSTNQN" "$KSUBNQN" 1)"
    kernel_pair() { # kernel_pair MODE PORT [CONNECT ARGS]: fio 4k randread QD1 then QD32 on nvmet; prints "QD1 QD32"
        local mode="$1" port="$2" out dev q1 q32; shift 2
        if ! out="$(timeout 60 chroot "$TRIXIE_ROOT" nvme connect -t tcp -a 127.0.0.1 -s "$port" -n "$KSUBNQN" \
                --hostnqn="$HOSTNQN" --hostid="$HOSTID" --nr-io-queues=2 "$@" 2>&1)" \
            || ! wait_for 30 ns_blockdev "$KSUBNQN" 1; then
            echo "kernel pair $mode: nvme connect $*: $out" >&2
            return 1
        fi
        dev="$(ns_blockdev "$KSUBNQN" 1)"
        q1="$(fio_run kpair-$mode-qd1 "$dev" randread 4k 1 "$PERF_SECONDS")"
        q32="$(fio_run kpair-$mode-qd32 "$dev" randread 4k 32 "$PERF_SECONDS")"
        timeout 60 chroot "$TRIXIE_ROOT" nvme disconnect -n "$KSUBNQN" > /dev/null 2>&1
        wait_for 30 test -z "$(ctrls_of_subsys "$KSUBNQN")"
        [ -n "$q1" ] && [ -n "$q32" ] && echo "$q1 $q32"
    }
    if [ -n "$kserial" ] && ktls="$(kernel_pair tls "$KTLS_PORT" --tls --tls_key="$((16#$kserial))" 2>"$RES/kpair.err")" \
        && kplain="$(kernel_pair plain "$KPLAIN_PORT" 2>>"$RES/kpair.err")"; then
        pass kernel-pair-tls-and-plain-io
        read -r kt1 kt32 <<< "$ktls"
        read -r kp1 kp32 <<< "$kplain"
        info "PERF kernel-host->nvmet 4k randread IOPS: TLS QD1 $kt1 QD32 $kt32; plain QD1 $kp1 QD32 $kp32"
    else
        fail kernel-pair-tls-and-plain-io "key ${kserial:-none}; $(tail -n 2 "$RES/kpair.err" | tr '\n' ' ')"
    fi
    nvmet_clear
    rm -f "$FILE"
fi

kill "$TLSHD" 2>/dev/null
info "tlshd log (last lines): $(tail -n 5 "$RES/tlshd.log" | tr '\n' ' ')"
summary
