#!/usr/bin/env bash
# Our perf against our target over NVMe/TCP with TLS 1.3 and without, side by side (never a test: the machines are
# noisy, compare the ratios of one round). A daemon serves a plain port and a TLS port (same RAM namespace); the
# target's reactor runs on CPU 0 (one busy reactor), perf's on CPU 1, each JVM's other threads on the other CPU (as
# run-spdk-comparison.sh pins, benchmarks/pinning.sh: "reactor_cpus" and perf --cpus; a BASELINE tree that predates
# them runs under taskset, the whole JVM on the one CPU); each round runs QD1 and QD32 4 KiB random reads, plain and
# TLS alternated. Prints one line per run (IOPS, p50, the host's allocation per I/O) and the TLS/plain ratios.
# With BASELINE=DIR (a built checkout of another revision, e.g. `git worktree add` + `mvn package`), each round
# also runs TLS with that tree's daemon and perf, to compare revisions in the same minutes.
# Usage: [BASELINE=DIR] benchmarks/run-tls-benchmark.sh [rounds, default 3] [seconds per run, default 10]
# Ports 127.0.0.1:24420 (plain) and 24421 (TLS) must be free.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-3}
seconds=${2:-10}
baseline=${BASELINE:-}
cd "$root"
. "$root/benchmarks/pinning.sh"
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
target=
stop_target() {
    if [ -n "$target" ]; then
        kill "$target" 2>/dev/null || true
        wait "$target" 2>/dev/null || true
        target=
    fi
}
trap 'stop_target; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

start_target() { # tree
    local daemon_pin daemon_cpus_setting
    daemon_pinning "$(pinning_of "$1")" 0
    sed "s/\"http\": \"off\" }/\"http\": \"off\"$daemon_cpus_setting }/" "$work/target.json" > "$work/target-pinned.json"
    "${daemon_pin[@]}" "$1/bin/nvmeof-target" --config "$work/target-pinned.json" >"$work/target.log" 2>&1 &
    target=$!
    for _ in $(seq 1 150); do
        if (exec 3<>/dev/tcp/127.0.0.1/24421) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/24420) 2>/dev/null; then
            return
        fi
        kill -0 "$target" 2>/dev/null || { echo "the target did not start:" >&2; tail -5 "$work/target.log" >&2; exit 1; }
        sleep 0.2
    done
    echo "the target did not listen within 30 s" >&2
    exit 1
}

run() { # tree mode qd -> "iops p50_us alloc_per_io"
    local tree=$1 mode=$2 qd=$3 port=24420 tls=() json perf_pin perf_cpus
    perf_pinning "$(pinning_of "$tree")" 1
    if [ "$mode" = tls ]; then
        port=24421
        tls=(--tls --tls-key "$key")
    fi
    if ! json=$("${perf_pin[@]}" "$tree/bin/nvmeof" perf -t tcp -a 127.0.0.1 -s "$port" -n "$subsystem" -q "$host" \
        "${tls[@]}" "${perf_cpus[@]}" -w randread -o 4096 --queue-depth "$qd" --time "$seconds" --json 2>"$work/perf.err"); then
        echo "perf ($tree, $mode, QD$qd) failed:" >&2
        tail -5 "$work/perf.err" "$work/target.log" >&2
        exit 1
    fi
    python3 -c 'import json,sys; r=json.load(sys.stdin); l=r.get("latency_us") or {}
print(round(r["iops"]), l.get("p50", "?"), round(r["allocated_bytes_per_io"], 1))' <<<"$json"
}
ratio() { python3 -c "print(round($1 / $2, 2))"; }

echo "columns: IOPS p50_us host_alloc_bytes_per_io"
for round in $(seq 1 "$rounds"); do
    declare -A base=()
    if [ -n "$baseline" ]; then
        start_target "$baseline"
        for qd in 1 32; do
            base[$qd]=$(run "$baseline" tls "$qd")
        done
        stop_target
    fi
    start_target "$root"
    for qd in 1 32; do
        plain=$(run "$root" plain "$qd")
        tls=$(run "$root" tls "$qd")
        line="round $round QD$qd plain: $plain | TLS: $tls | TLS/plain $(ratio "${tls%% *}" "${plain%% *}")"
        if [ -n "$baseline" ]; then
            line="$line | baseline TLS: ${base[$qd]} | baseline TLS/plain $(ratio "${base[$qd]%% *}" "${plain%% *}")"
        fi
        echo "$line"
    done
    stop_target
done
