#!/bin/bash
# Proves kernel-host-vs-target.sh against the Linux kernel target (nvmet-tcp) inside the guest, before and
# without our daemon: nvmet on 127.0.0.1:$TARGET_PORT with a file namespace on the guest tmpfs, the interop
# checks and write-pattern, then the target is torn down and rebuilt on the same file (a "restart") and
# check-pattern runs. Run it with: integration-tests/vm/run-guest.sh integration-tests/vm/guest/selftest-kernel-target.sh
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/nvmet.sh"

export SUBNQN="${SUBNQN:-nqn.2014-08.io.nvmeof4j:kernel-selftest}"
export TARGET_ADDR="${TARGET_ADDR:-127.0.0.1}"
export TARGET_PORT="${TARGET_PORT:-4420}"
export DISCOVERY_PORT="${DISCOVERY_PORT:-$TARGET_PORT}"
export TRTYPE="${TRTYPE:-tcp}"
export HOSTID="${HOSTID:-$(cat /proc/sys/kernel/random/uuid)}"
export HOSTNQN="${HOSTNQN:-nqn.2014-08.org.nvmexpress:uuid:$HOSTID}"
export EXPECT_MODEL="${EXPECT_MODEL:-nvmeof4j-kernel-selftest}"
export EXPECT_SERIAL="${EXPECT_SERIAL:-0123456789abcdef}"
SIZE_MB="${SIZE_MB:-64}"
export EXPECT_NSZE="${EXPECT_NSZE:-$((SIZE_MB * 1024 * 1024 / 4096))}"   # tmpfs file: 4 KiB blocks
export EXPECT_LBADS="${EXPECT_LBADS:-12}"
FILE="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}/selftest-ns1.img"
ADDR_BIND="$TARGET_ADDR"

start_target() {
    if [ "$TRTYPE" = rdma ]; then nvmet_rxe_up || return 1; fi
    nvmet_subsystem "$SUBNQN" "$EXPECT_MODEL" "$EXPECT_SERIAL" \
        && nvmet_file_ns "$SUBNQN" 1 "$FILE" "${SIZE_MB}M" \
        && nvmet_port 1 "$TRTYPE" "$ADDR_BIND" "$TARGET_PORT" \
        && nvmet_link 1 "$SUBNQN"
}

rc=0
nvmet_clear
start_target || { echo "FAIL kernel-target-setup: configfs setup failed"; exit 1; }
nvmet_show
PHASE="${PHASE1:-interop write-pattern}" bash "$HERE/kernel-host-vs-target.sh" || rc=1
echo "INFO restarting the kernel target on the same backing file"
nvmet_clear
start_target || { echo "FAIL kernel-target-restart: configfs setup failed"; exit 1; }
PHASE=check-pattern bash "$HERE/kernel-host-vs-target.sh" || rc=1
nvmet_clear
exit $rc
