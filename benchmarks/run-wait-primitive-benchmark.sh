#!/usr/bin/env bash
# Before/after of issue 17 item 3 (one wait primitive per reactor), in one run: bin/nvmeof perf against our daemon
# (one reactor) on 127.0.0.1, 4 KiB random reads from an O_DIRECT file namespace, the daemon started alternately
# with the io_uring joined to the reactor's selector ("after", the default) and without
# (-Dnvmeof4j.io_uring.wake_selector=false: the reactor waits in the ring 200 us at a time while I/O is in flight,
# "before"). Rounds alternate so a busy machine weighs on both alike; compare the ratios, not the absolutes.
# Usage: benchmarks/run-wait-primitive-benchmark.sh [seconds per run, default 10] [rounds, default 3]
#        [queue depths, default "1 4"] [work directory, default benchmarks/target/wait]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-10}
rounds=${2:-3}
depths=${3:-1 4}
work=${4:-$root/benchmarks/target/wait}
mkdir -p "$work"
file="$work/ns.img"
if [ ! -f "$file" ] || [ "$(stat -c %s "$file")" != $((256 * 1024 * 1024)) ]; then
    # Written, so reads reach the disk rather than holes.
    dd if=/dev/urandom of="$file" bs=1M count=256 oflag=direct status=none
fi
nqn=nqn.2014-08.io.nvmeof4j:wait-bench

daemon=
port=
run_daemon() { # $1: java options; sets $port and $daemon (not in a subshell: the pid must reach stop_daemon)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat > "$work/target.json" <<JSON
{
  "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port"},
             "subsystems": ["$nqn"]}],
  "subsystems": [{"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
    "namespaces": [{"nsid": 1, "device": {"path": "$file"}}]}],
  "nvmeof4j": {"reactors": 1}
}
JSON
    NVMEOF4J_JAVA_OPTS="$1" bin/nvmeof-target --config "$work/target.json" > "$work/daemon.log" 2>&1 &
    daemon=$!
    for _ in $(seq 1 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
}

stop_daemon() {
    if [ -n "$daemon" ]; then
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
        daemon=
    fi
}
trap stop_daemon EXIT

declare -A iops
for qd in $depths; do
    for round in $(seq 1 "$rounds"); do
        for mode in before after; do
            opts=""
            [ "$mode" = before ] && opts="-Dnvmeof4j.io_uring.wake_selector=false"
            run_daemon "$opts"
            out=$(bin/nvmeof perf -a 127.0.0.1 -s "$port" -n "$nqn" --namespace-id 1 --workload randread --io-size 4K \
                --queue-depth "$qd" --warmup 2 --time "$seconds" --json 2>/dev/null | tail -n1)
            stop_daemon
            value=$(echo "$out" | sed -n 's/.*"iops":\([0-9.]*\).*/\1/p')
            iops[$qd.$round.$mode]=$value
            echo "QD$qd round $round $mode: $out"
        done
        awk -v b="${iops[$qd.$round.before]}" -v a="${iops[$qd.$round.after]}" -v q="$qd" -v r="$round" \
            'BEGIN { printf "QD%s round %s: after/before IOPS %.2f\n", q, r, a / b }'
    done
done
