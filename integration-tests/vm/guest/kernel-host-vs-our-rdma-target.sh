#!/bin/bash
# The Linux kernel NVMe/RDMA host (nvme-rdma, nvme-cli, fio) against our daemon, both inside the guest, over
# Soft-RoCE (rxe0 on eth0, 10.0.2.15): our daemon listens on rdma://10.0.2.15:4420 (which also answers discovery),
# then kernel-host-vs-target.sh runs with TRTYPE=rdma: nvme discover, nvme connect with 1 I/O queue (full fio
# matrix: write + verify=crc32c at 4 KiB (in-capsule), 128 KiB and 1 MiB (keyed SGLs), QD 1 and QD 32, blkdiscard,
# flush), disconnect, then a reconnect with 2 I/O queues (dd write/read/compare), disconnect. Then namespace 3, on
# a loop device with 4096-byte sectors opened O_DIRECT: fio write + verify with 4 KiB writes, whose data arrives
# in-capsule and goes to the device straight from the receive buffer (O_DIRECT refuses it unless that data is
# aligned: EINVAL, an Internal Error for the host), and a discard (on this kernel, before 6.12, BLKDISCARD runs on
# the daemon's worker threads). Then our daemon is stopped with SIGTERM and must exit cleanly with a clean log.
# Last, the live phase: a second daemon starts with one NVMe/TCP port only; an RDMA listener is added to it through
# the management API (its reactors get their RDMA poll groups then), the kernel host connects over RDMA, fio writes
# and verifies, disconnects, the listener is removed through the API, and that daemon stops cleanly too.
# Prints PASS/FAIL lines and a SUMMARY; exits non-zero on any failure. LinuxKernelHostRdmaIT runs it with:
#   integration-tests/vm/run-guest.sh --results DIR integration-tests/vm/guest/kernel-host-vs-our-rdma-target.sh
# Environment: SUBNQN [nqn.2014-08.io.nvmeof4j:rdma-it], FIO_JOBS, CONNECTS ["1:off 2:off"], GUEST_JAVA_OPTS.
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
. "$HERE/lib.sh"
. "$HERE/nvmet.sh"
. "$HERE/rdma-lib.sh"
RES="${RESULTS_DIR:-/tmp}"
SUBNQN="${SUBNQN:-nqn.2014-08.io.nvmeof4j:rdma-it}"
TMPFS="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}"

info "kernel $(uname -r), $(nproc) vCPUs"
if nvmet_rxe_up && ibv_devices 2>/dev/null | grep -q rxe0; then
    pass rxe-up
else
    fail rxe-up "no Soft-RoCE device: $(rdma link show 2>&1 | tr '\n' ' ')"; summary; exit 1
fi
modprobe nvme-rdma

modprobe loop 2>/dev/null
truncate -s 64M "$TMPFS/rdma-it-loop.img"
LOOP="$(losetup --find --show --sector-size 4096 "$TMPFS/rdma-it-loop.img" 2>&1)"
if [ -b "$LOOP" ] && [ "$(blockdev --getss "$LOOP")" = 4096 ]; then
    pass loop-4k-sectors
else
    fail loop-4k-sectors "losetup --sector-size 4096: $LOOP"; LOOP=""
fi
MAIN_HTTP="127.0.0.1:9482"
MAIN_TOKEN="$TMPFS/rdma-main.token"
OURS_SETTINGS="{\"http\": \"$MAIN_HTTP\", \"api_token_file\": \"$MAIN_TOKEN\"}" \
    ours_config "$TMPFS/rdma-it.json" 4420 "$SUBNQN" "$TMPFS/rdma-it-ns1.img" "$LOOP"
if ours_start "$TMPFS/rdma-it.json" "$RES/ours-daemon.log" \
    && grep -q "NVMe/RDMA listening on rdma://10.0.2.15:4420" "$RES/ours-daemon.log"; then
    pass ours-target-start
else
    fail ours-target-start "our daemon is not listening on rdma://10.0.2.15:4420"; summary; exit 1
fi

# The interop checks, run as a child so its PASS/FAIL lines and summary come out as they are.
TRTYPE=rdma TARGET_ADDR=10.0.2.15 TARGET_PORT=4420 DISCOVERY_PORT=4420 SUBNQN="$SUBNQN" \
    CONNECTS="${CONNECTS:-1:off 2:off}" FIO_FULL=1 EXPECT_MODEL=nvmeof4j EXPECT_SERIAL=nvmeof4jrdmait01 \
    EXPECT_NAMESPACES="1:16384:12 2:131072:9${LOOP:+ 3:16384:12}" NSID=1 EXPECT_NVM_EXTRAS=1 \
    PHASE="interop${LOOP:+ fio-namespaces}" FIO_NSIDS="${LOOP:+3}" FIO_NS_JOBS="4k:1:4M 4k:32:16M" \
    "$HERE/kernel-host-vs-target.sh"
interop=$?
info "kernel-host-vs-target.sh exit code $interop"

# ---- live: an NVMe/TCP listener added to this daemon, which started with RDMA ports only (so with no TCP poll
# groups: the first TCP listener gives each running reactor one) ---------------------------------------------------
printf 'Authorization: Bearer %s\n' "$(cat "$MAIN_TOKEN" 2>/dev/null)" > /tmp/rdma-main-auth.header
chmod 600 /tmp/rdma-main-auth.header
main_api() { # main_api METHOD PATH [JSON]
    curl -sS --max-time 30 -X "$1" -H @/tmp/rdma-main-auth.header -H 'Content-Type: application/json' \
        ${3:+-d "$3"} -w ' HTTP%{http_code}' "http://$MAIN_HTTP/api/v1$2" 2>&1 | tr '\n' ' '
}
added="$(main_api POST "/subsystems/$SUBNQN/listeners" \
    '{"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "4430"}')"
TCP_PORTID="$(echo "$added" | sed -n 's/.*"portid" *: *\([0-9]*\).*/\1/p')"
if [[ "$added" == *HTTP201* ]] && [ -n "$TCP_PORTID" ] && grep -q "NVMe/TCP served from now on" "$RES/ours-daemon.log"; then
    pass live-tcp-listener-on-rdma-daemon
else
    fail live-tcp-listener-on-rdma-daemon "answer: $added; log: $(grep -m3 -iE 'tcp|ERROR' "$RES/ours-daemon.log" | tr '\n' ' ')"
fi
if out="$(timeout 90 nvme connect -t tcp -a 127.0.0.1 -s 4430 -n "$SUBNQN" --nr-io-queues=1 2>&1)" \
    && wait_for 30 ns_blockdev "$SUBNQN" 2; then
    DEV="$(ns_blockdev "$SUBNQN" 2)"
    fout="$(timeout 300 fio --name=live-tcp --filename="$DEV" --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
        --iodepth=16 --size=8M --offset=0 --numjobs=1 --verify=crc32c --do_verify=1 --verify_fatal=1 \
        --verify_backlog=0 --randrepeat=0 --group_reporting 2>&1)"
    if [ $? = 0 ] && echo "$fout" | grep -q 'err= 0' \
        && ! echo "$fout" | grep -qiE 'verify.*(fail|bad|error)|bad magic|crc32c.*(fail|wanted)'; then
        pass live-tcp-fio-verify
    else
        fail live-tcp-fio-verify "$(echo "$fout" | grep -iE 'err|verify|fail' | head -n 5 | tr '\n' '|')"
    fi
    timeout 60 nvme disconnect -n "$SUBNQN" >/dev/null 2>&1
    wait_for 30 bash -c "! grep -qsx '$SUBNQN' /sys/class/nvme/*/subsysnqn"
else
    fail live-tcp-fio-verify "nvme connect -t tcp to 127.0.0.1:4430: $out"
fi
removed="$(main_api DELETE "/subsystems/$SUBNQN/listeners/$TCP_PORTID")"
if [[ "$removed" == *HTTP200* ]]; then pass live-tcp-listener-removed; else fail live-tcp-listener-removed "$removed"; fi

if ours_stop "$RES/ours-daemon.log"; then pass ours-target-stop; else fail ours-target-stop "exit code not 0/143"; fi
if ours_log_clean "$RES/ours-daemon.log"; then
    pass ours-log-clean
else
    fail ours-log-clean "$(grep -m3 -E ' ERROR |Exception' "$RES/ours-daemon.log" | tr '\n' ' ')"
fi
tail -n 15 "$RES/ours-daemon.log" | sed 's/^/INFO daemon: /'
[ -n "$LOOP" ] && losetup -d "$LOOP"

# ---- live: an RDMA listener added through the management API to a daemon that started with NVMe/TCP only ---------
# Its reactors have no RDMA poll group at start; the first RDMA listener gives each one (on its buffer pool) while
# they run. The kernel host then connects over RDMA and fio verifies; the listener is removed again (the groups stay).
LIVE_NQN="nqn.2014-08.io.nvmeof4j:rdma-live"
LIVE_PORT=4421
LIVE_HTTP="127.0.0.1:9481"
LIVE_TOKEN="$TMPFS/rdma-live.token"
LIVE_LOG="$RES/ours-live-daemon.log"
cat > "$TMPFS/rdma-live.json" <<J
{ "nvmeof4j": {"http": "$LIVE_HTTP", "api_token_file": "$LIVE_TOKEN"},
  "hosts": [],
  "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "4430"},
              "referrals": [], "subsystems": ["$LIVE_NQN"]} ],
  "subsystems": [ {"nqn": "$LIVE_NQN",
      "attr": {"allow_any_host": "1", "serial": "nvmeof4jrdmalive", "model": "nvmeof4j", "version": "1.3"},
      "allowed_hosts": [],
      "namespaces": [ {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "32M", "block_size": 512}} ] } ] }
J
# api METHOD PATH [BODY]: prints "BODY HTTPnnn"; the token goes in a header file, never on a command line.
live_api() {
    local method="$1" path="$2" body="${3:-}"
    if [ -n "$body" ]; then
        curl -sS --max-time 30 -X "$method" -H @/tmp/rdma-live-auth.header -H 'Content-Type: application/json' \
            -d "$body" -w ' HTTP%{http_code}' "http://$LIVE_HTTP/api/v1$path" 2>&1 | tr '\n' ' '
    else
        curl -sS --max-time 30 -X "$method" -H @/tmp/rdma-live-auth.header -w ' HTTP%{http_code}' \
            "http://$LIVE_HTTP/api/v1$path" 2>&1 | tr '\n' ' '
    fi
}
if ours_start "$TMPFS/rdma-live.json" "$LIVE_LOG" && [ -s "$LIVE_TOKEN" ] && ! grep -q "NVMe/RDMA listening" "$LIVE_LOG"; then
    pass live-tcp-only-start
    printf 'Authorization: Bearer %s\n' "$(cat "$LIVE_TOKEN")" > /tmp/rdma-live-auth.header
    chmod 600 /tmp/rdma-live-auth.header
    added="$(live_api POST "/subsystems/$LIVE_NQN/listeners" \
        "{\"trtype\": \"rdma\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.2.15\", \"trsvcid\": \"$LIVE_PORT\"}")"
    info "POST listeners (rdma): $added"
    LIVE_PORTID="$(echo "$added" | sed -n 's/.*"portid" *: *\([0-9]*\).*/\1/p')"
    if [[ "$added" == *HTTP201* ]] && [ -n "$LIVE_PORTID" ] \
        && grep -q "NVMe/RDMA listening on rdma://10.0.2.15:$LIVE_PORT" "$LIVE_LOG" \
        && grep -q "NVMe-oF/RDMA served from now on" "$LIVE_LOG" && grep -q '"rdma"' "$TMPFS/rdma-live.json"; then
        pass live-rdma-listener-added
    else
        fail live-rdma-listener-added "answer: $added; log: $(grep -m3 -iE 'rdma|ERROR' "$LIVE_LOG" | tr '\n' ' ')"
    fi
    if out="$(timeout 90 nvme connect -t rdma -a 10.0.2.15 -s "$LIVE_PORT" -n "$LIVE_NQN" --nr-io-queues=1 2>&1)" \
        && wait_for 30 ns_blockdev "$LIVE_NQN" 1; then
        pass live-rdma-connect
        DEV="$(ns_blockdev "$LIVE_NQN" 1)"
        for job in 4k:16:8M 128k:4:16M; do
            IFS=: read -r bs qd size <<< "$job"
            fout="$(timeout 300 fio --name="live-$bs" --filename="$DEV" --ioengine=libaio --direct=1 --rw=randwrite \
                --bs="$bs" --iodepth="$qd" --size="$size" --offset=0 --numjobs=1 --verify=crc32c --do_verify=1 \
                --verify_fatal=1 --verify_backlog=0 --randrepeat=0 --group_reporting 2>&1)"
            if [ $? = 0 ] && echo "$fout" | grep -q 'err= 0' \
                && ! echo "$fout" | grep -qiE 'verify.*(fail|bad|error)|bad magic|crc32c.*(fail|wanted)'; then
                pass "live-rdma-fio-verify-bs$bs-qd$qd"
                info "live-rdma-fio-verify-bs$bs-qd$qd: $(echo "$fout" | grep -E '^ *(write|read):' | sed 's/^ *//' | tr '\n' ' ')"
            else
                fail "live-rdma-fio-verify-bs$bs-qd$qd" "$(echo "$fout" | grep -iE 'err|verify|fail' | head -n 5 | tr '\n' '|')"
            fi
        done
        if timeout 60 nvme disconnect -n "$LIVE_NQN" >/dev/null 2>&1 \
            && wait_for 30 bash -c "! grep -qsx '$LIVE_NQN' /sys/class/nvme/*/subsysnqn"; then
            pass live-rdma-disconnect
        else
            fail live-rdma-disconnect "controllers left: $(cat /sys/class/nvme/*/subsysnqn 2>/dev/null | tr '\n' ' ')"
        fi
    else
        fail live-rdma-connect "nvme connect -t rdma to 10.0.2.15:$LIVE_PORT: $out"
    fi
    removed="$(live_api DELETE "/subsystems/$LIVE_NQN/listeners/$LIVE_PORTID")"
    if [[ "$removed" == *HTTP200* ]] && ! grep -q '"rdma"' "$TMPFS/rdma-live.json"; then
        pass live-rdma-listener-removed
    else
        fail live-rdma-listener-removed "DELETE listeners/$LIVE_PORTID: $removed"
    fi
    if ours_stop "$LIVE_LOG"; then pass live-daemon-stop; else fail live-daemon-stop "exit code not 0/143"; fi
    if ours_log_clean "$LIVE_LOG"; then
        pass live-daemon-log-clean
    else
        fail live-daemon-log-clean "$(grep -m3 -E ' ERROR |Exception' "$LIVE_LOG" | tr '\n' ' ')"
    fi
    tail -n 12 "$LIVE_LOG" | sed 's/^/INFO live daemon: /'
else
    fail live-tcp-only-start "our TCP-only daemon did not start (or listened on RDMA already); log: $(tail -n 5 "$LIVE_LOG" | tr '\n' ' ')"
fi
summary
rc=$?
[ "$interop" = 0 ] && exit $rc
exit 1
