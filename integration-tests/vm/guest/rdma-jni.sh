#!/bin/bash
# The RDMA JNI layer (native module, io.nvmeof4j.jni.rdma) against a real RDMA device: brings up Soft-RoCE rxe0 on
# eth0 and a second device, rxe1 on a dummy netdev (RDMA_ADDR2, 10.0.3.15/24; for RdmaTwoDeviceChecks: one poll
# group serving two devices), waits for their ports to be ACTIVE, then runs JUnit test classes (default
# io.nvmeof4j.jni.rdma.RdmaDeviceChecks) with the JUnit Platform console launcher, C1-only JVM (see initiator-vs-kernel-target.sh for why), the XML report
# in $RESULTS_DIR/junit. Prints PASS/FAIL lines and a SUMMARY; exits non-zero on any failure. RdmaJniIT runs it:
#   integration-tests/vm/run-guest.sh --results DIR --env CONSOLE_JAR=… --env CHECKS_CP=… \
#       integration-tests/vm/guest/rdma-jni.sh
#
# Environment (defaults in brackets): CONSOLE_JAR (required: junit-platform-console-standalone), CHECKS_CP (required:
# the native jar, its test jar, assertj; for RdmaSoftRoceConformance also the protocol, rdma-transport and
# transport-conformance jars, slf4j-api and integration-tests/target/test-classes), CHECK_CLASSES
# [io.nvmeof4j.jni.rdma.RdmaDeviceChecks; space-separated],
# JAVA_BIN [$JAVA_HOME/bin/java or java], RDMA_ADDR [10.0.2.15], RDMA_ADDR2 [10.0.3.15], CHECKS_TIMEOUT [150],
# GUEST_JAVA_OPTS [-XX:TieredStopAtLevel=1].
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib.sh"
. "$HERE/nvmet.sh"

RES="${RESULTS_DIR:-/tmp}"
CHECK_CLASSES="${CHECK_CLASSES:-io.nvmeof4j.jni.rdma.RdmaDeviceChecks}"
export RDMA_ADDR="${RDMA_ADDR:-10.0.2.15}"
export RDMA_ADDR2="${RDMA_ADDR2:-10.0.3.15}"
GUEST_JAVA_OPTS="${GUEST_JAVA_OPTS:--XX:TieredStopAtLevel=1}"
if [ -z "${JAVA_BIN:-}" ]; then
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then JAVA_BIN="$JAVA_HOME/bin/java"; else JAVA_BIN=java; fi
fi
[ -n "${CONSOLE_JAR:-}" ] && [ -f "$CONSOLE_JAR" ] || { fail setup "CONSOLE_JAR (${CONSOLE_JAR:-unset}) is not a file"; summary; exit 1; }
[ -n "${CHECKS_CP:-}" ] || { fail setup "CHECKS_CP is not set"; summary; exit 1; }

# rxe0's port is ACTIVE once eth0 has carrier; ibv_devinfo prints "state: PORT_ACTIVE (4)".
rxe_active() { ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; }
if nvmet_rxe_up eth0 && wait_for 20 rxe_active; then
    pass rxe-up
    info "$(rdma link show 2>&1 | head -n 2 | tr '\n' ' ')"
else
    fail rxe-up "rdma link add rxe0 failed or its port is not active: $(rdma link show 2>&1 | tr '\n' ' ')"
    summary; exit 1
fi

# rxe1: a second Soft-RoCE device on a dummy netdev that only the guest knows (nothing leaves it: both ends of
# every connection are in the guest). The dummy netdev has carrier as soon as it is up.
rxe1_active() { ibv_devinfo -d rxe1 2>/dev/null | grep -q PORT_ACTIVE; }
if { ip link show nvmeof4j-d1 >/dev/null 2>&1 || { modprobe dummy && ip link add nvmeof4j-d1 type dummy; }; } \
        && ip addr replace "$RDMA_ADDR2/24" dev nvmeof4j-d1 && ip link set nvmeof4j-d1 up \
        && { rdma link show 2>/dev/null | grep -q rxe1 || rdma link add rxe1 type rxe netdev nvmeof4j-d1; } \
        && wait_for 20 rxe1_active; then
    pass rxe1-up
else
    fail rxe1-up "second device rxe1 on dummy netdev nvmeof4j-d1 ($RDMA_ADDR2) not active: $(rdma link show 2>&1 | tr '\n' ' ')"
fi

selects=()
for c in $CHECK_CLASSES; do selects+=(--select-class "$c"); done
mkdir -p "$RES/junit"
t0=$(date +%s)
# shellcheck disable=SC2086  # GUEST_JAVA_OPTS holds several options
timeout --kill-after=10 "${CHECKS_TIMEOUT:-150}" "$JAVA_BIN" -XX:ErrorFile="$RES/hs_err_pid%p.log" -XX:+UseSerialGC \
    -Xms32m -Xmx256m $GUEST_JAVA_OPTS -jar "$CONSOLE_JAR" execute --disable-banner --disable-ansi-colors \
    --details=tree --class-path "$CHECKS_CP" "${selects[@]}" --reports-dir "$RES/junit" \
    > "$RES/checks.log" 2>&1
jrc=$?
cat "$RES/checks.log" | head -n 300
info "console launcher exit code $jrc after $(( $(date +%s) - t0 ))s (report: $RES/junit)"
if [ "$jrc" = 0 ]; then pass rdma-jni-checks; else fail rdma-jni-checks "JUnit console launcher exit code $jrc (124 = timed out)"; fi
summary
