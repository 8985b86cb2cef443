#!/usr/bin/env bash
# Benchmark (never a test; compare the ratios of one run, not runs): QD1 and QD32 with and without a CPU-bound
# competitor pinned to the target reactor's CPU (0) and/or the host reactor's CPU (1). Our daemon (one reactor, RAM
# namespace) runs under taskset on CPU 0, bin/nvmeof perf (4 KiB random reads, one queue, one host reactor) on
# CPU 1, over NVMe/TCP on 127.0.0.1. The competitor is a shell busy loop. Both reactors idle with the same
# strategy (nvmeof4j.reactor.adapt_to_contention applies to the perf host too). Each setting gets its own daemon:
#   adaptive          the default: contention-aware adaptive idling (blocks instead of spinning on a shared CPU)
#   adaptive-spin     the same, contention measurement off (-Dnvmeof4j.reactor.adapt_to_contention=false, for
#                     the daemon and perf): spins 50 us after each round with work, as before
#   busy              idle_strategy busy: spins always (for dedicated cores)
# Prints one line per run and a table of ratios "with competitor / without", per setting and queue depth.
# Usage: benchmarks/run-shared-cpu-benchmark.sh [seconds per run, default 5] [settings, default "adaptive adaptive-spin busy"]
#        [competitors, default "0": a busy loop on CPU 0 (the target's); "1" on the host's; "peer": no busy loop,
#         perf on CPU 0 beside the daemon (the two ends of the I/O share one CPU); "0 1 peer" each in turn]
# Pinned with taskset (the whole JVM), not "reactor_cpus" / perf --cpus as the other benchmarks (benchmarks/pinning.sh),
# on purpose: this models a daemon confined to a CPU it shares (a container's cpuset), the deployment adaptive idling
# is for; docs/datapath.md says to leave reactor_cpus unset on shared cores, and with it the JIT and GC would move off
# the contended CPU, which is not the situation measured here.
# Bounded: every run is --time SECONDS; the competitor and the daemon are killed by PID; a whole run <= ~3 min.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-5}
settings=${2:-adaptive adaptive-spin busy}
competitor_cpus=${3:-0}
work=$root/benchmarks/target/shared-cpu
mkdir -p "$work"
[ "$(nproc)" -ge 2 ] || { echo "needs at least 2 CPUs (target on CPU 0, perf on CPU 1)" >&2; exit 1; }
command -v taskset >/dev/null || { echo "needs taskset (util-linux)" >&2; exit 1; }

mvn -q -B -ntp -DskipTests -pl target-daemon,initiator-lib -am package
nqn=nqn.2014-08.io.nvmeof4j:shared-cpu-bench
daemon=""
competitor=""
cleanup() {
    [ -n "$competitor" ] && kill "$competitor" 2>/dev/null
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    return 0
}
trap cleanup EXIT

perf() { # perf QD [CPU]: one JSON line
    NVMEOF4J_JAVA_OPTS="$opts" taskset -c "${2:-1}" timeout $((seconds + 60)) bin/nvmeof perf -a 127.0.0.1 -s "$port" -n "$nqn" --namespace-id 1 \
        --workload randread --io-size 4K --queue-depth "$1" --time "$seconds" --json 2>/dev/null | tail -n1
}
field() { sed -n "s/.*\"$1\":\\([0-9.]*\\).*/\\1/p"; }

declare -A iops p50 p99
for setting in $settings; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    strategy=adaptive; opts=""
    case "$setting" in
        adaptive) ;;
        adaptive-spin) opts="-Dnvmeof4j.reactor.adapt_to_contention=false" ;;
        busy) strategy=busy ;;
        *) echo "unknown setting $setting" >&2; exit 2 ;;
    esac
    cat > "$work/target.json" <<JSON
{ "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port"},
             "subsystems": ["$nqn"]}],
  "subsystems": [{"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
    "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "256M", "block_size": 4096}} ]}],
  "nvmeof4j": {"reactors": 1, "idle_strategy": "$strategy", "http": "off"} }
JSON
    NVMEOF4J_JAVA_OPTS="$opts" taskset -c 0 bin/nvmeof-target --config "$work/target.json" > "$work/daemon-$setting.log" 2>&1 &
    daemon=$!
    for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    # Fill the namespace, then warm up the JIT on both sides.
    taskset -c 1 timeout 120 bin/nvmeof perf -a 127.0.0.1 -s "$port" -n "$nqn" --workload write --io-size 1M \
        --queue-depth 4 --time 3 >/dev/null 2>&1
    perf 32 >/dev/null
    for qd in 1 32; do
        for load in idle $(printf 'cpu%s ' $competitor_cpus); do
            if [ "$load" != idle ] && [ "$load" != cpupeer ]; then
                taskset -c "${load#cpu}" timeout $((seconds + 30)) bash -c 'while :; do :; done' &
                competitor=$!
                sleep 0.5
            fi
            perf_cpu=1; [ "$load" = cpupeer ] && perf_cpu=0
            out=$(perf "$qd" "$perf_cpu")
            if [ -n "$competitor" ]; then kill "$competitor" 2>/dev/null; wait "$competitor" 2>/dev/null || true; competitor=""; fi
            k="$setting/$qd/$load"
            iops[$k]=$(echo "$out" | field iops)
            p50[$k]=$(echo "$out" | field p50)
            p99[$k]=$(echo "$out" | field p99)
            printf '%-14s QD%-3s %-10s %10.0f IOPS  p50 %8.1f us  p99 %8.1f us\n' "$setting" "$qd" "$load" \
                "${iops[$k]:-0}" "${p50[$k]:-0}" "${p99[$k]:-0}"
        done
    done
    kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true; daemon=""
done
echo
echo "ratio with competitor / without (IOPS; p50 latency), same run:"
for setting in $settings; do
    for qd in 1 32; do
        for cpu in $competitor_cpus; do
            a="$setting/$qd/idle"; b="$setting/$qd/cpu$cpu"
            awk -v s="$setting" -v q="$qd" -v c="$cpu" -v ia="${iops[$a]:-0}" -v ib="${iops[$b]:-0}" \
                -v la="${p50[$a]:-0}" -v lb="${p50[$b]:-0}" 'BEGIN { printf "%-14s QD%-3s competitor %-8s  IOPS %.2fx   p50 %.2fx\n", s, q, (c == "peer" ? "perf" : "on CPU " c),
                    (ia > 0 ? ib / ia : 0), (la > 0 ? lb / la : 0) }'
        done
    done
done
