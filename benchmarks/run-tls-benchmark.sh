#!/usr/bin/env bash
# Our perf against our target over NVMe/TCP with TLS 1.3 and without, side by side (never a test: the machines are
# noisy, compare the ratios of one round). One daemon serves a plain port and a TLS port (same RAM namespace); the
# target runs on CPU 0 (one busy reactor), perf on CPU 1; each round runs QD1 and QD32 4 KiB random reads, plain and
# TLS alternated. Prints one line per run (IOPS, p50, host allocation per I/O) and the TLS/plain ratio per round.
# Usage: benchmarks/run-tls-benchmark.sh [rounds, default 3] [seconds per run, default 10]
# Ports 127.0.0.1:24420 (plain) and 24421 (TLS) must be free.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-3}
seconds=${2:-10}
cd "$root"
mvn -o -q -B -ntp -DskipTests -pl target-daemon,initiator-lib -am package 2>&1 | sed 's/\x1b\[0m//g' >&2

work=$(mktemp -d)
host=nqn.2014-08.org.nvmexpress:uuid:0f9c1b7e-2f43-4d59-9d7c-2a0d1c5e7b11
subsystem=nqn.2026-11.io.nvmeof4j:tlsbench
key='NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:'
cat >"$work/target.json" <<JSON
{
  "hosts": [ { "nqn": "$host", "tls_key": "$key" } ],
  "ports": [
    { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "24420" },
      "subsystems": [ "$subsystem" ] },
    { "portid": 2, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "24421",
        "tsas": "tls1.3", "treq": "required" },
      "subsystems": [ "$subsystem" ] }
  ],
  "subsystems": [
    { "nqn": "$subsystem", "attr": { "allow_any_host": "0" }, "allowed_hosts": [ "$host" ],
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "backend": "ram", "size": "512M", "block_size": 4096 } } ] }
  ],
  "nvmeof4j": { "reactors": 1, "idle_strategy": "busy", "http": "off" }
}
JSON
taskset -c 0 bin/nvmeof-target --config "$work/target.json" >"$work/target.log" 2>&1 &
target=$!
trap 'kill $target 2>/dev/null || true; wait $target 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
    if grep -q "24421" "$work/target.log" 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/24421) 2>/dev/null; then
        break
    fi
    sleep 0.2
done

run() { # mode qd -> "iops p50_us alloc_per_io"
    local mode=$1 qd=$2 port=24420 tls=()
    if [ "$mode" = tls ]; then
        port=24421
        tls=(--tls --tls-key "$key")
    fi
    local json
    if ! json=$(taskset -c 1 bin/nvmeof perf -t tcp -a 127.0.0.1 -s "$port" -n "$subsystem" -q "$host" "${tls[@]}" \
        -w randread -o 4096 --queue-depth "$qd" --time "$seconds" --json 2>"$work/perf.err"); then
        echo "perf ($mode, QD$qd) failed:" >&2
        tail -5 "$work/perf.err" "$work/target.log" >&2
        exit 1
    fi
    python3 -c 'import json,sys; r=json.load(sys.stdin); l=r.get("latency_us") or {}
print(round(r["iops"]), l.get("p50", "?"), round(r["allocated_bytes_per_io"], 1))' <<<"$json"
}
for round in $(seq 1 "$rounds"); do
    for qd in 1 32; do
        plain=$(run plain "$qd")
        tls=$(run tls "$qd")
        ratio=$(python3 -c "print(round(${tls%% *} / ${plain%% *}, 2))")
        echo "round $round QD$qd plain: $plain | TLS: $tls | TLS/plain IOPS $ratio  (iops p50_us alloc_bytes_per_io)"
    done
done
