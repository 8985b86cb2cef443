#!/usr/bin/env bash
# Benchmark (never a test; the machines are noisy: compare the columns of one run, not runs): what multipath costs.
# Our daemon (one reactor, busy polling, RAM namespace of 4 KiB blocks) listens on two NVMe/TCP ports of 127.0.0.1;
# `nvmeof perf` reads 4 KiB at random at QD32 for --time seconds, alternately over one path and over both paths
# with --iopolicy round-robin (the same single perf queue, so the same depth in flight), for ROUNDS rounds.
# Prints each round's IOPS, the ratio multipath/single-path per round and the median ratio (the aim: >= 0.95).
# Pinning as run-spdk-comparison.sh pins (benchmarks/pinning.sh): the daemon's reactor on CPU 0 ("reactor_cpus"),
# perf's on CPU 1 (--cpus 1), the rest of each JVM (JIT, GC) on the other CPU, as SPDK's -m / -c pin its tools.
# First, the same comparison in one JVM with short alternating windows (MultipathOverheadBenchmark: both modes see
# the same moments of a noisy machine, which separate CLI runs do not), for numa (the multipath layer's own cost:
# every I/O on the first path) and round-robin (the queue depth spread over two connections).
# Usage: benchmarks/run-multipath-benchmark.sh [seconds per run, default 10] [rounds, default 3]
# Environment: MP_BENCH_PORT (first of the two ports, default 14420), MP_BENCH_WORKLOAD (default randread).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/benchmarks/pinning.sh"
daemon_pinning cpus 0
perf_pinning cpus 1
seconds=${1:-10}
rounds=${2:-3}
port0=${MP_BENCH_PORT:-14420}
port1=$((port0 + 1))
workload=${MP_BENCH_WORKLOAD:-randread}
nqn=nqn.2014-08.io.nvmeof4j:multipath-bench
work=$(mktemp -d)
daemon=
cleanup() {
    if [ -n "$daemon" ]; then
        kill "$daemon" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/target.json" <<JSON
{
  "ports": [
    {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port0"},
     "subsystems": ["$nqn"]},
    {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port1"},
     "subsystems": ["$nqn"]}
  ],
  "subsystems": [
    {"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
     "namespaces": [{"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "512M", "block_size": 4096}}]}
  ],
  "nvmeof4j": {"reactors": 1, "idle_strategy": "busy", "http": "off"$daemon_cpus_setting}
}
JSON

(cd "$root" && mvn -q -B -ntp -o -DskipTests -pl benchmarks -am package)
for policy in numa round-robin; do
    echo "== in one JVM, alternating 250-ms windows, iopolicy $policy"
    java -XX:+UseSerialGC -Xmx512m -XX:MaxDirectMemorySize=1g \
        -cp "$root/benchmarks/target/classes:$root/benchmarks/target/lib/*" \
        io.nvmeof4j.bench.MultipathOverheadBenchmark 20 250 "$policy" 2>/dev/null
done
echo "== bin/nvmeof perf runs, daemon and perf in their own processes"
"$root/bin/nvmeof" --version >/dev/null   # builds the CLI first when needed
"${daemon_pin[@]}" "$root/bin/nvmeof-target" --config "$work/target.json" >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 600); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port1") 2>/dev/null; then
        break
    fi
    if ! kill -0 "$daemon" 2>/dev/null; then
        echo "run-multipath-benchmark: the daemon exited; its log:" >&2
        cat "$work/daemon.log" >&2
        exit 1
    fi
    sleep 0.5
done

perf() { # addresses ports extra... -> IOPS
    "${perf_pin[@]}" "$root/bin/nvmeof" perf -a "$1" -s "$2" -n "$nqn" --workload "$workload" --io-size 4K \
        --queue-depth 32 --queues 1 "${perf_cpus[@]}" --time "$seconds" --json "${@:3}" 2>>"$work/perf.err" \
        | sed -n 's/.*"iops":\([0-9.]*\).*/\1/p'
}
# Fill once so reads return data, not holes.
"$root/bin/nvmeof" perf -a 127.0.0.1 -s "$port0" -n "$nqn" --workload write --io-size 128K --queue-depth 8 \
    --time 3 >/dev/null 2>&1 || true

fail() {
    echo "run-multipath-benchmark: perf failed; its stderr:" >&2
    tail -n 20 "$work/perf.err" >&2
    exit 1
}
ratios=()
printf '%-6s %14s %14s %8s\n' round single-path multipath ratio
for r in $(seq 1 "$rounds"); do
    single=$(perf 127.0.0.1 "$port0") || fail
    multi=$(perf 127.0.0.1,127.0.0.1 "$port0,$port1" --iopolicy round-robin) || fail
    ratio=$(awk -v m="$multi" -v s="$single" 'BEGIN { printf "%.3f", m / s }')
    ratios+=("$ratio")
    printf '%-6s %14.0f %14.0f %8s\n' "$r" "$single" "$multi" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "median ratio multipath (round-robin, 2 paths) / single path, 4 KiB $workload QD32: $median (aim >= 0.95)"
