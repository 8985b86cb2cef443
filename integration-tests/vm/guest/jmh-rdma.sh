#!/bin/bash
# Runs the RDMA JNI JMH benchmark (benchmarks module, io.nvmeof4j.bench.RdmaJniBenchmark) inside the guest over
# Soft-RoCE rxe0: brings rxe0 up, then JMH with the GC profiler, JSON results in $RESULTS_DIR/jmh-guest.json.
# Called by integration-tests/vm/bench-jni.sh. Environment: BENCH_CP (required: the benchmarks jar and its lib/),
# JAVA_BIN, JMH_ARGS [-f 1 -wi 3 -w 1s -i 5 -r 1s], GUEST_JAVA_OPTS [-XX:TieredStopAtLevel=1: see
# initiator-vs-kernel-target.sh; the forked benchmark JVM gets it too], RDMA_ADDR [10.0.2.15].
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib.sh"
. "$HERE/nvmet.sh"
RES="${RESULTS_DIR:-/tmp}"
export RDMA_ADDR="${RDMA_ADDR:-10.0.2.15}"
GUEST_JAVA_OPTS="${GUEST_JAVA_OPTS:--XX:TieredStopAtLevel=1}"
JMH_ARGS="${JMH_ARGS:--f 1 -wi 3 -w 1s -i 5 -r 1s}"
if [ -z "${JAVA_BIN:-}" ]; then
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then JAVA_BIN="$JAVA_HOME/bin/java"; else JAVA_BIN=java; fi
fi
[ -n "${BENCH_CP:-}" ] || { fail setup "BENCH_CP is not set"; summary; exit 1; }

rxe_active() { ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; }
if nvmet_rxe_up eth0 && wait_for 20 rxe_active; then pass rxe-up; else fail rxe-up "$(rdma link show 2>&1)"; summary; exit 1; fi

t0=$(date +%s)
# shellcheck disable=SC2086
timeout --kill-after=10 "${JMH_TIMEOUT:-400}" "$JAVA_BIN" $GUEST_JAVA_OPTS -XX:ErrorFile="$RES/hs_err_pid%p.log" \
    -cp "$BENCH_CP" org.openjdk.jmh.Main 'io.nvmeof4j.bench.RdmaJniBenchmark' $JMH_ARGS \
    -jvmArgsAppend "$GUEST_JAVA_OPTS -XX:+UseSerialGC -Xmx256m" -prof gc -rf json -rff "$RES/jmh-guest.json" \
    > "$RES/jmh-guest.log" 2>&1
rc=$?
grep -E '^(Benchmark|RdmaJniBenchmark)|^#.*(VM options|JMH version)|Exception|ERROR' "$RES/jmh-guest.log" | head -n 60
info "JMH exit code $rc after $(( $(date +%s) - t0 ))s (log: $RES/jmh-guest.log)"
if [ "$rc" = 0 ] && [ -s "$RES/jmh-guest.json" ]; then pass jmh; else fail jmh "exit code $rc"; fi
summary
