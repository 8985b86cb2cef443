#!/usr/bin/env bash
# Benchmarks of the io_uring block-device shim (never tests; compare the columns of one run, not runs):
#   1. The shim alone versus fio's own io_uring engine on the same file: 4 KiB random reads, QD32, O_DIRECT, one
#      thread each (BdevRandomReadBenchmark: the shim driven like a reactor drives it).
#   2. End to end on 127.0.0.1: bin/nvmeof perf (4 KiB random reads, QD32, one queue) through our daemon (one
#      reactor) against a null namespace, a RAM namespace and an O_DIRECT file namespace.
# Usage: benchmarks/run-bdev-benchmarks.sh [seconds per run, default 10] [work directory, default benchmarks/target/bdev]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-10}
work=${2:-$root/benchmarks/target/bdev}
mkdir -p "$work"
file="$work/bench.img"

mvn -q -B -ntp -DskipTests -pl benchmarks,target-daemon,initiator-lib -am package
if [ ! -f "$file" ] || [ "$(stat -c %s "$file")" != $((1024 * 1024 * 1024)) ]; then
    echo "== laying out a 1 GiB file (written, so reads reach the disk rather than holes)"
    fio --name=layout --filename="$file" --size=1G --rw=write --bs=1M --direct=1 --ioengine=psync >/dev/null
fi

echo "== shim vs fio io_uring: $file, 4 KiB random read, QD32, O_DIRECT, ${seconds} s each"
fio_out=$(fio --name=randread --filename="$file" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
    --iodepth=32 --numjobs=1 --time_based --runtime="$seconds" --ramp_time=2 --group_reporting --output-format=terse \
    --terse-version=3)
fio_iops=$(echo "$fio_out" | awk -F';' '{print $8}')
echo "fio io_uring IOPS: $fio_iops"
shim_out=$(java -XX:+UseSerialGC -Xmx256m -cp "benchmarks/target/classes:benchmarks/target/lib/*" \
    io.nvmeof4j.bench.BdevRandomReadBenchmark "$file" "$seconds" 32 4096)
echo "$shim_out"
shim_iops=$(echo "$shim_out" | sed -n 's/^shim IOPS: \([0-9]*\).*/\1/p')
awk -v s="$shim_iops" -v f="$fio_iops" 'BEGIN { printf "shim / fio: %.2f\n", s / f }'

echo "== end to end: bin/nvmeof perf -> our daemon (1 reactor) -> null / RAM / file namespace"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nqn=nqn.2014-08.io.nvmeof4j:bdev-bench
cat > "$work/target.json" <<JSON
{
  "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port"},
             "subsystems": ["$nqn"]}],
  "subsystems": [{"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
    "namespaces": [
      {"nsid": 1, "device": {"backend": "null", "size": "1G", "block_size": 4096}},
      {"nsid": 2, "device": {"backend": "ram", "size": "1G", "block_size": 4096}},
      {"nsid": 3, "device": {"path": "$file"}}
    ]}],
  "nvmeof4j": {"reactors": 1}
}
JSON
bin/nvmeof-target --config "$work/target.json" > "$work/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
# RAM: written first (sequentially, 1 MiB I/Os), so reads copy real pages rather than never-written zeros.
bin/nvmeof perf -a 127.0.0.1 -s "$port" -n "$nqn" --namespace-id 2 --workload write --io-size 1M \
    --queue-depth 4 --time 5 >/dev/null 2>&1
declare -A perf_iops
for ns in 1 2 3; do
    out=$(bin/nvmeof perf -a 127.0.0.1 -s "$port" -n "$nqn" --namespace-id "$ns" --workload randread --io-size 4K \
        --queue-depth 32 --time "$seconds" --json 2>/dev/null | tail -n1)
    perf_iops[$ns]=$(echo "$out" | sed -n 's/.*"iops":\([0-9.]*\).*/\1/p')
    echo "namespace $ns: $out"
done
awk -v n="${perf_iops[1]}" -v r="${perf_iops[2]}" -v f="${perf_iops[3]}" 'BEGIN {
    printf "perf IOPS  null %.0f   ram %.0f (%.2fx null)   file %.0f (%.2fx null)\n", n, r, r / n, f, f / n }'
