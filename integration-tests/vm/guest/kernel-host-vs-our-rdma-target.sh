#!/bin/bash
# The Linux kernel NVMe/RDMA host (nvme-rdma, nvme-cli, fio) against our daemon, both inside the guest, over
# Soft-RoCE (rxe0 on eth0, 10.0.2.15): our daemon listens on rdma://10.0.2.15:4420 (which also answers discovery),
# then kernel-host-vs-target.sh runs with TRTYPE=rdma: nvme discover, nvme connect with 1 I/O queue (full fio
# matrix: write + verify=crc32c at 4 KiB (in-capsule), 128 KiB and 1 MiB (keyed SGLs), QD 1 and QD 32, blkdiscard,
# flush), disconnect, then a reconnect with 2 I/O queues (dd write/read/compare), disconnect. Last, our daemon is
# stopped with SIGTERM and must exit cleanly with a clean log.
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

ours_config "$TMPFS/rdma-it.json" 4420 "$SUBNQN" "$TMPFS/rdma-it-ns1.img"
if ours_start "$TMPFS/rdma-it.json" "$RES/ours-daemon.log" \
    && grep -q "NVMe/RDMA listening on rdma://10.0.2.15:4420" "$RES/ours-daemon.log"; then
    pass ours-target-start
else
    fail ours-target-start "our daemon is not listening on rdma://10.0.2.15:4420"; summary; exit 1
fi

# The interop checks, run as a child so its PASS/FAIL lines and summary come out as they are.
TRTYPE=rdma TARGET_ADDR=10.0.2.15 TARGET_PORT=4420 DISCOVERY_PORT=4420 SUBNQN="$SUBNQN" \
    CONNECTS="${CONNECTS:-1:off 2:off}" FIO_FULL=1 EXPECT_MODEL=nvmeof4j EXPECT_SERIAL=nvmeof4jrdmait01 \
    EXPECT_NAMESPACES="1:16384:12 2:131072:9" NSID=1 PHASE=interop EXPECT_NVM_EXTRAS=1 \
    "$HERE/kernel-host-vs-target.sh"
interop=$?
info "kernel-host-vs-target.sh exit code $interop"

if ours_stop "$RES/ours-daemon.log"; then pass ours-target-stop; else fail ours-target-stop "exit code not 0/143"; fi
if ours_log_clean "$RES/ours-daemon.log"; then
    pass ours-log-clean
else
    fail ours-log-clean "$(grep -m3 -E ' ERROR |Exception' "$RES/ours-daemon.log" | tr '\n' ' ')"
fi
tail -n 15 "$RES/ours-daemon.log" | sed 's/^/INFO daemon: /'
summary
rc=$?
[ "$interop" = 0 ] && exit $rc
exit 1
