#!/usr/bin/env bash
# Benchmark (not a test) of the RDMA JNI crossing: io.nvmeof4j.bench.RdmaJniBenchmark (JMH, benchmarks module).
#   guest part: inside the QEMU guest over Soft-RoCE rxe0 (guest/jmh-rdma.sh): a JNI no-op crossing (the baseline),
#     a batched poll of an empty CQ, and a batch of 16 chained RDMA WRITEs posted in one crossing and polled back,
#     all in one JMH run, with the GC profiler (allocation per operation).
#   host part: the no-op crossing on the build host (no RDMA device here, so only the baseline).
# Prints a table (ns per operation, per work request, ratio to the no-op crossing of the same run) and writes
# summary.json + the raw JMH JSON/logs into the results directory.
#
#   integration-tests/vm/bench-jni.sh [--part guest|host|both] [--results DIR] [--timeout S] [--no-build]
#                                     [--jmh-args '-f 1 -wi 3 -w 1s -i 5 -r 1s'] [--guest-java-opts OPTS]
# Software emulation (TCG) in the guest: absolute figures mean little there; compare the rows of one run.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
PART=both
RESULTS=""
TIMEOUT=600
BUILD=1
JMH_ARGS="-f 1 -wi 3 -w 1s -i 5 -r 1s"
GUEST_JAVA_OPTS="-XX:TieredStopAtLevel=1"
while [ $# -gt 0 ]; do
    case "$1" in
        --part) PART="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --jmh-args) JMH_ARGS="$2"; shift 2 ;;
        --guest-java-opts) GUEST_JAVA_OPTS="$2"; shift 2 ;;
        *) echo "bench-jni.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
RESULTS="${RESULTS:-$PROJECT/integration-tests/target/bench-results/jni-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$RESULTS"
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"

if [ "$BUILD" = 1 ]; then
    echo "bench-jni.sh: building the benchmarks jar (mvn -pl benchmarks -am package -DskipTests)"
    (cd "$PROJECT" && mvn -q -o -B -pl benchmarks -am package -DskipTests) || { echo "build failed" >&2; exit 1; }
fi
JAR=$(ls "$PROJECT"/benchmarks/target/benchmarks-*.jar 2>/dev/null | grep -v -- '-sources' | head -n 1)
[ -n "$JAR" ] || { echo "bench-jni.sh: no benchmarks jar; build first" >&2; exit 1; }
CP="$JAR:$(ls "$PROJECT"/benchmarks/target/lib/*.jar | tr '\n' ':')"

if [ "$PART" = host ] || [ "$PART" = both ]; then
    echo "bench-jni.sh: host part (no-op crossing; no RDMA device on this host)"
    # shellcheck disable=SC2086
    "$JAVA_BIN" -cp "$CP" org.openjdk.jmh.Main 'io.nvmeof4j.bench.RdmaJniBenchmark.jniNoop' $JMH_ARGS \
        -prof gc -rf json -rff "$RESULTS/jmh-host.json" > "$RESULTS/jmh-host.log" 2>&1 \
        || { echo "host JMH run failed; see $RESULTS/jmh-host.log" >&2; exit 1; }
fi
if [ "$PART" = guest ] || [ "$PART" = both ]; then
    echo "bench-jni.sh: guest part (rxe0)"
    "$HERE/run-guest.sh" --timeout "$TIMEOUT" --results "$RESULTS" --env BENCH_CP="$CP" --env JAVA_BIN="$JAVA_BIN" \
        --env JMH_ARGS="$JMH_ARGS" --env GUEST_JAVA_OPTS="$GUEST_JAVA_OPTS" "$HERE/guest/jmh-rdma.sh" \
        | tee "$RESULTS/guest.log" | grep -E '^(PASS|FAIL|INFO|SUMMARY|Benchmark|RdmaJniBenchmark)|run-guest' 
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "guest run failed; see $RESULTS/guest.log" >&2; exit 1; }
fi

python3 - "$RESULTS" <<'PY'
import json, os, sys
res = sys.argv[1]
summary = {}
for where in ("guest", "host"):
    path = os.path.join(res, "jmh-%s.json" % where)
    if not os.path.exists(path):
        continue
    rows = {}
    for b in json.load(open(path)):
        name = b["benchmark"].rsplit(".", 1)[1]
        sm = b.get("secondaryMetrics", {})
        alloc = (sm.get("gc.alloc.rate.norm") or sm.get("·gc.alloc.rate.norm") or {}).get("score")
        rows[name] = {"ns": b["primaryMetric"]["score"], "error": b["primaryMetric"]["scoreError"], "alloc_bytes": alloc}
    base = rows.get("jniNoop", {}).get("ns")
    print("\n%s (JMH %s, ns/op, ±99.9%% CI; ratio = / no-op crossing of the same run)" % (where, "fork 1"))
    print("%-28s %12s %10s %12s %9s %12s" % ("benchmark", "ns/op", "±", "ns/WR", "ratio", "alloc B/op"))
    for name, r in rows.items():
        per_wr = r["ns"] / 16 if name == "postAndPollBatchOf16" else None
        r["ns_per_wr"] = per_wr
        r["ratio_to_noop"] = r["ns"] / base if base else None
        print("%-28s %12.1f %10.1f %12s %9s %12s" % (name, r["ns"], r["error"],
              "%.1f" % per_wr if per_wr else "-", "%.1f" % r["ratio_to_noop"] if base else "-",
              "%.3f" % r["alloc_bytes"] if r["alloc_bytes"] is not None else "-"))
    summary[where] = rows
json.dump(summary, open(os.path.join(res, "summary.json"), "w"), indent=2)
print("\nresults: %s" % res)
PY
