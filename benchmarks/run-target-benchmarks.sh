#!/usr/bin/env bash
# Benchmarks of the target (never tests; the machines are noisy: compare the columns of one run, not runs).
#   1. On this machine: bytes the reactor threads allocate per I/O over 1 M 4 KiB reads and 1 M 4 KiB writes
#      (TargetAllocationBenchmark: the daemon in-JVM over 127.0.0.1, driven at QD32).
#   2. In the QEMU guest: the same fio jobs through the Linux kernel host against the Linux kernel target and
#      against ours (integration-tests/vm/bench-target.sh), with the ratio.
# Usage: benchmarks/run-target-benchmarks.sh [I/Os per phase, default 1000000] [-- bench-target.sh options]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
ios=1000000
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    ios=$1
    shift
fi
[ "${1:-}" = "--" ] && shift

mvn -q -B -ntp -DskipTests -pl benchmarks -am package
echo "== reactor allocation per I/O (target in-JVM, 127.0.0.1, 1 reactor, RAM namespace)"
java -XX:+UseSerialGC -Xmx256m -XX:MaxDirectMemorySize=1g -cp "benchmarks/target/classes:benchmarks/target/lib/*" \
    io.nvmeof4j.bench.TargetAllocationBenchmark "$ios" 32 2>/dev/null

echo "== fio through the guest's Linux kernel host: the Linux kernel target versus ours"
integration-tests/vm/prepare.sh >/dev/null
integration-tests/vm/bench-target.sh "$@"
