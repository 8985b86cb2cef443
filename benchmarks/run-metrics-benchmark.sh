#!/usr/bin/env bash
# Benchmark (not a test): what the metrics cost. Two target daemons (bin/nvmeof-target, separate processes, one
# reactor each, a 256 MiB RAM namespace, 127.0.0.1) run side by side, identical but for "metrics": true / false in
# the "nvmeof4j" section; our perf (bin/nvmeof perf, another process) drives 4 KiB random reads against them in
# alternation, ROUNDS times, at QD1 and QD32:
#   target metrics on  vs off    (perf without --metrics)
#   host metrics on    vs off    (perf --metrics vs without, against the target with metrics off)
# Each run prints IOPS and p50/p99; the summary gives the median of the rounds and the on/off ratios. The machine is
# shared and noisy (2 vCPUs): compare the ratios of one run, not absolute figures across runs.
# Usage: benchmarks/run-metrics-benchmark.sh [ROUNDS (default 3)] [SECONDS per run (default 5)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-3}
secs=${2:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/nvmeof4j-metrics-bench.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

(cd "$root" && mvn -q -B -ntp -DskipTests -pl target-daemon,initiator-lib -am package) 2>&1 | sed 's/\x1b\[0m//g'
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Not in a $(...) subshell: the daemon's pid must reach this shell's pids for the cleanup on exit.
start_target() { # start_target NAME METRICS(true|false): sets started_port to its NVMe/TCP port
    local name="$1" metrics="$2" port http
    port=$(free_port)
    http=$(free_port)
    cat > "$work/$name.json" <<JSON
{"nvmeof4j": {"reactors": 1, "metrics": $metrics, "http": "127.0.0.1:$http"},
 "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port"},
            "subsystems": ["nqn.2014-08.io.nvmeof4j:bench"]}],
 "subsystems": [{"nqn": "nqn.2014-08.io.nvmeof4j:bench", "attr": {"allow_any_host": "1"},
                 "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "256M", "block_size": 4096}}]}]}
JSON
    NVMEOF4J_JAVA_OPTS="-XX:MaxDirectMemorySize=1g" "$root/bin/nvmeof-target" --config "$work/$name.json" \
        > "$work/$name.out" 2> "$work/$name.log" &
    pids+=($!)
    for _ in $(seq 1 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then started_port=$port; return 0; fi
        sleep 0.1
    done
    echo "target $name did not start; log:" >&2; tail -20 "$work/$name.log" >&2; exit 1
}

start_target target-metrics-on true
port_on=$started_port
start_target target-metrics-off false
port_off=$started_port
echo "targets: metrics on at 127.0.0.1:$port_on, metrics off at 127.0.0.1:$port_off; $rounds rounds of $secs s"

run_perf() { # run_perf LABEL PORT QD [perf options]: appends "LABEL QD iops p50 p99" to results
    local label="$1" port="$2" qd="$3"; shift 3
    local out="$work/$label-qd$qd-$RANDOM.json"
    "$root/bin/nvmeof" perf -t tcp -a 127.0.0.1 -s "$port" -n nqn.2014-08.io.nvmeof4j:bench --workload randread \
        --io-size 4096 --queue-depth "$qd" --time "$secs" --json "$@" > "$out" 2>/dev/null
    python3 - "$out" "$label" "$qd" >> "$work/results" <<'PY'
import json, sys
o = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
l = o["latency_us"]
print(sys.argv[2], sys.argv[3], "%.0f" % o["iops"], "%.2f" % l["p50"], "%.2f" % l["p99"])
PY
    tail -1 "$work/results"
}

: > "$work/results"
for r in $(seq 1 "$rounds"); do
    for qd in 1 32; do
        run_perf target-on "$port_on" "$qd"
        run_perf target-off "$port_off" "$qd"
        run_perf host-on "$port_off" "$qd" --metrics
        run_perf host-off "$port_off" "$qd"
    done
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for label in ("target-on", "target-off", "host-on", "host-off"):
    for qd in ("1", "32"):
        rs = [r for r in rows if r[0] == label and r[1] == qd]
        med[(label, qd)] = tuple(statistics.median(float(r[i]) for r in rs) for i in (2, 3, 4))
print("\nmedian of the rounds (4 KiB randread, one reactor, RAM namespace):")
print("%-11s %4s %10s %9s %9s" % ("run", "QD", "IOPS", "p50 us", "p99 us"))
for (label, qd), (iops, p50, p99) in med.items():
    print("%-11s %4s %10.0f %9.2f %9.2f" % (label, qd, iops, p50, p99))
print("\nratios on/off (IOPS, p50):")
for what in ("target", "host"):
    for qd in ("1", "32"):
        on, off = med[(what + "-on", qd)], med[(what + "-off", qd)]
        print("%-6s metrics QD%-3s IOPS %.3f   p50 %.3f" % (what, qd, on[0] / off[0], on[1] / off[1]))
PY
echo "raw results: $work/results"
