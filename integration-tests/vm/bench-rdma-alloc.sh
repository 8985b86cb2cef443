#!/bin/bash
# Benchmark (not a test): Java bytes allocated per I/O on the NVMe-oF/RDMA data path, target and initiator, in one
# QEMU guest over Soft-RoCE rxe0. Builds the benchmarks module on the host, boots the guest, brings rxe0 up and runs
# io.nvmeof4j.bench.RdmaAllocationBenchmark: our daemon in-JVM (one reactor, RDMA port 10.0.2.15:4420, 256 MiB RAM
# namespace) and our initiator in-JVM (one RDMA I/O queue, the callback API), a warm-up, then N 4 KiB random writes
# and N 4 KiB random reads at the queue depth; ThreadMXBean's allocated bytes of the target's reactor thread and of
# the initiator's RDMA reactor thread, divided by N, and net of the rate both allocate with no I/O at all (a 10 s
# idle phase: the admin queue's Keep Alive every 2.5 s shares the reactors; it allocates per command, not per I/O). One JVM run per entry of --guest-java-opts (separated by '|';
# default C2 only, then C1 only: C1 has no escape analysis, so it also shows what only C2 optimises away).
# Prints a table on the host and writes summary.json + the logs into the results folder.
#
#   integration-tests/vm/bench-rdma-alloc.sh [--ios 200000] [--qd 32] [--inline 4096|0] [--metrics on|off]
#       [--guest-java-opts '-XX:-TieredCompilation|-XX:TieredStopAtLevel=1'] [--results DIR] [--timeout 1500]
#       [--no-build]
# --inline 0: the port advertises no in-capsule data, so the target fetches each write with an RDMA READ.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"

guest_main() {
    . "$HERE/guest/lib.sh"
    . "$HERE/guest/nvmet.sh"
    local res="${RESULTS_DIR:-/tmp}" rc=0 i=0 opts
    rxe_active() { ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; }
    if nvmet_rxe_up eth0 && wait_for 20 rxe_active; then pass rxe-up; else fail rxe-up "$(rdma link show 2>&1)"; summary; return 1; fi
    info "kernel $(uname -r), $(nproc) vCPUs"
    IFS='|' read -r -a variants <<< "$BENCH_JAVA_OPTS"
    for opts in "${variants[@]}"; do
        i=$((i + 1))
        local log="$res/run-$i.log" t0; t0=$(date +%s)
        echo "INFO run $i: JVM options $opts"
        # shellcheck disable=SC2086
        timeout --kill-after=10 "${BENCH_RUN_TIMEOUT:-900}" "$JAVA_BIN" $opts -XX:+UseSerialGC -Xms256m -Xmx512m \
            -XX:MaxDirectMemorySize=1g -XX:ErrorFile="$res/hs_err_pid%p.log" \
            -cp "$BENCH_CP" io.nvmeof4j.bench.RdmaAllocationBenchmark "$BENCH_IOS" "$BENCH_QD" "$BENCH_INLINE" \
            "$BENCH_METRICS" 10.0.2.15 > "$log" 2>&1
        local jrc=$?
        grep -E '^(setup|target|initiator) ' "$log"
        grep '^RESULT ' "$log" | sed "s/^RESULT /RESULT run=$i opts='$opts' /"
        info "run $i exit code $jrc after $(( $(date +%s) - t0 ))s (log: $log)"
        if [ "$jrc" = 0 ] && [ "$(grep -c '^RESULT ' "$log")" = 6 ]; then pass "run-$i"; else
            fail "run-$i" "exit code $jrc: $(grep -E 'Exception|ERROR' "$log" | head -n 3 | tr '\n' ' ')"; rc=1; fi
    done
    summary || rc=1
    return $rc
}

if [ "${NVMEOF4J_IN_GUEST:-0}" = 1 ] && [ "${BENCH_GUEST:-0}" = 1 ]; then
    guest_main
    exit $?
fi

IOS=200000; QD=32; INLINE=4096; METRICS=on; TIMEOUT=1500; BUILD=1
JAVA_OPTS_LIST="-XX:-TieredCompilation|-XX:TieredStopAtLevel=1"
RESULTS="$PROJECT/integration-tests/target/bench-results/rdma-alloc-$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
    case "$1" in
        --ios) IOS="$2"; shift 2 ;;
        --qd) QD="$2"; shift 2 ;;
        --inline) INLINE="$2"; shift 2 ;;
        --metrics) METRICS="$2"; shift 2 ;;
        --guest-java-opts) JAVA_OPTS_LIST="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "bench-rdma-alloc.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$RESULTS"
RESULTS="$(readlink -f "$RESULTS")"
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"
JAVA_BIN="$(readlink -f "$(command -v "$JAVA_BIN")")"
if [ "$BUILD" = 1 ]; then
    echo "bench-rdma-alloc.sh: building the benchmarks module (mvn -pl benchmarks -am package -DskipTests)"
    (cd "$PROJECT" && mvn -q -o -B -pl benchmarks -am package -DskipTests) || { echo "build failed" >&2; exit 1; }
fi
[ -d "$PROJECT/benchmarks/target/classes" ] && [ -d "$PROJECT/benchmarks/target/lib" ] \
    || { echo "bench-rdma-alloc.sh: benchmarks not built; drop --no-build" >&2; exit 1; }
CP="$PROJECT/benchmarks/target/classes:$(ls "$PROJECT"/benchmarks/target/lib/*.jar | tr '\n' ':')"
"$HERE/prepare.sh" --quiet >/dev/null || exit 1
echo "bench-rdma-alloc.sh: guest run ($IOS I/Os per direction, QD$QD, inline $INLINE, target metrics $METRICS)"
"$HERE/run-guest.sh" --timeout "$TIMEOUT" --results "$RESULTS" --env BENCH_GUEST=1 --env BENCH_CP="$CP" \
    --env JAVA_BIN="$JAVA_BIN" --env BENCH_JAVA_OPTS="$JAVA_OPTS_LIST" --env BENCH_IOS="$IOS" --env BENCH_QD="$QD" \
    --env BENCH_INLINE="$INLINE" --env BENCH_METRICS="$METRICS" "$HERE/bench-rdma-alloc.sh" > "$RESULTS/guest.log" 2>&1
grc=$?
grep -E '^(PASS|FAIL|INFO|SUMMARY|setup|target|initiator) |run-guest' "$RESULTS/guest.log"

python3 - "$RESULTS" "$grc" <<'PY'
import json, os, re, shlex, sys
res, grc = sys.argv[1], int(sys.argv[2])
rows = []
for line in open(os.path.join(res, "guest.log"), errors="replace"):
    if line.startswith("RESULT "):
        rows.append({k: v for k, v in (kv.split("=", 1) for kv in shlex.split(line[7:].strip()))})
fmt = "%-26s %-10s %-6s %8s %4s %7s %7s %8s %10s %9s"
print("\n" + fmt % ("guest JVM", "role", "dir", "I/Os", "QD", "s", "IOPS", "bytes", "bytes/IO", "net B/IO"))
for r in rows:
    if r["dir"] == "idle":
        print(fmt % (r["opts"], r["role"], "idle", "-", "-", r["seconds"], "-", "-", "%s B/s" % r["bytes_per_s"], "-"))
    else:
        print(fmt % (r["opts"], r["role"], r["dir"], r["ios"], r["qd"], r["seconds"], r["iops"], r["bytes"],
                     r["bytes_per_io"], r["net_bytes_per_io"]))
json.dump({"guest_exit": grc, "rows": rows}, open(os.path.join(res, "summary.json"), "w"), indent=2)
print("\nresults: %s (guest exit %d)" % (res, grc))
PY
exit $grc
