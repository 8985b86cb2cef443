#!/usr/bin/env bash
# Benchmark (never a test): our target and initiator side by side with SPDK's, on NVMe/TCP over 127.0.0.1, with
# SPDK's own tools as the judge (issue 17). Four pairings, each target on CPU 0 and each load generator on CPU 1:
#   spdk+spdk   SPDK's nvmf_tgt (malloc bdev)   driven by spdk_nvme_perf
#   ours+spdk   our daemon (RAM namespace)      driven by spdk_nvme_perf
#   spdk+ours   SPDK's nvmf_tgt                 driven by bin/nvmeof perf
#   ours+ours   our daemon                      driven by bin/nvmeof perf
# for four workloads (4 KiB random read QD1 and QD32, 4 KiB random write QD32, 128 KiB sequential read QD8), 512 MiB
# namespaces of 4 KiB blocks, busy polling on both targets, a warm-up before every measured run. Rounds alternate
# the pairings' order so that both see the same moments of a noisy machine. Prints per workload and pairing IOPS,
# p50/p99/p99.9 (µs), and the ratios "our target / SPDK's" (both driven by spdk_nvme_perf) and "our perf / SPDK's
# perf" (both against SPDK's target), the median over the rounds.
#
# SPDK is not a dependency and nothing here builds it: point SPDK_DIR at an SPDK build (its build/bin/nvmf_tgt,
# build/bin/spdk_nvme_perf and scripts/rpc.py are used). Without SPDK_DIR only ours+ours runs.
#
#   SPDK_DIR=/path/to/spdk benchmarks/run-spdk-comparison.sh [--time S] [--warmup S] [--rounds N]
#       [--pairings "spdk+spdk ours+spdk spdk+ours ours+ours"] [--workloads "4k-randread-qd1 ..."] [--reactors N]
#
# --reactors N gives our daemon N reactors on CPUs 0..N-1 and SPDK's nvmf_tgt the core mask of the same CPUs (the
# load generator then runs on CPU N): the scaling comparison for machines with more cores than this one.
# Hugepages: used by SPDK when 2 GiB of 2 MiB pages are free and hugetlbfs is mounted (SPDK's scripts/setup.sh does
# both); otherwise both SPDK tools run with --no-huge, which the first line says.
# Bounded: every run has its time; every process started here is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=10; warmup=3; rounds=3; reactors=1
pairings="spdk+spdk ours+spdk spdk+ours ours+ours"
# name : workload : io size : queue depth (SPDK perf's -w -o -q; ours --workload --io-size --queue-depth)
all_workloads="4k-randread-qd1:randread:4096:1 4k-randread-qd32:randread:4096:32 4k-randwrite-qd32:randwrite:4096:32
128k-read-qd8:read:131072:8"
workloads=""
while [ $# -gt 0 ]; do
    case "$1" in
        --time) seconds="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --pairings) pairings="$2"; shift 2 ;;
        --workloads) workloads="$2"; shift 2 ;;
        --reactors) reactors="$2"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "run-spdk-comparison.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(nproc)" -gt "$reactors" ] || { echo "needs more than $reactors CPUs (targets on 0..$((reactors - 1)), load on $reactors)" >&2; exit 1; }
command -v taskset >/dev/null || { echo "needs taskset (util-linux)" >&2; exit 1; }
if [ -z "${SPDK_DIR:-}" ]; then
    echo "SPDK_DIR is not set: only ours+ours runs (point SPDK_DIR at an SPDK build for the other pairings)" >&2
    pairings="ours+ours"
else
    for f in build/bin/nvmf_tgt build/bin/spdk_nvme_perf scripts/rpc.py; do
        [ -e "$SPDK_DIR/$f" ] || { echo "SPDK_DIR=$SPDK_DIR has no $f" >&2; exit 1; }
    done
    # A build configured --with-shared links its own libraries and DPDK's dynamically.
    export LD_LIBRARY_PATH="$SPDK_DIR/build/lib:$SPDK_DIR/dpdk/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
selected=""
for w in $all_workloads; do
    name=${w%%:*}
    if [ -z "$workloads" ] || [[ " $workloads " == *" $name "* ]]; then selected+="$w "; fi
done
[ -n "$selected" ] || { echo "no workload selected from: $(for w in $all_workloads; do printf '%s ' "${w%%:*}"; done)" >&2; exit 2; }

target_cpus=$(seq -s, 0 $((reactors - 1)))
load_cpu=$reactors
core_mask=$(printf '0x%x' $(( (1 << reactors) - 1 )))
load_mask=$(printf '0x%x' $(( 1 << load_cpu )))
nqn=nqn.2016-06.io.spdk:cnode1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
work=$root/benchmarks/target/spdk-comparison
mkdir -p "$work"
huge=(--no-huge -s 1024)
if [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge 1024 ] 2>/dev/null && grep -q ' hugetlbfs ' /proc/mounts; then
    huge=(-s 1024)
fi
echo "targets on CPU(s) $target_cpus, load on CPU $load_cpu; ${seconds}s per run after ${warmup}s warm-up; $rounds round(s);" \
    "SPDK ${huge[*]:-with hugepages}; load average $(cut -d' ' -f1-3 /proc/loadavg)"

mvn -q -B -ntp -DskipTests -pl target-daemon,initiator-lib -am package

target_pid=""
cleanup() {
    if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null; wait "$target_pid" 2>/dev/null; fi
    target_pid=""
    return 0
}
trap cleanup EXIT

wait_port() {
    for _ in $(seq 1 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$target_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

start_ours() {
    cat > "$work/ours.json" <<JSON
{ "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port"},
             "subsystems": ["$nqn"]}],
  "subsystems": [{"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
    "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "512M", "block_size": 4096}} ]}],
  "nvmeof4j": {"reactors": $reactors, "idle_strategy": "busy", "http": "off"} }
JSON
    taskset -c "$target_cpus" bin/nvmeof-target --config "$work/ours.json" > "$work/ours-target.log" 2>&1 &
    target_pid=$!
    wait_port || { echo "our daemon did not listen on 127.0.0.1:$port; see $work/ours-target.log" >&2; exit 1; }
}

start_spdk() {
    local sock=$work/spdk.sock rpc
    rm -f "$sock"
    "$SPDK_DIR/build/bin/nvmf_tgt" -m "$core_mask" -r "$sock" "${huge[@]}" > "$work/spdk-target.log" 2>&1 &
    target_pid=$!
    for _ in $(seq 1 300); do
        [ -S "$sock" ] && break
        kill -0 "$target_pid" 2>/dev/null || { echo "SPDK's nvmf_tgt exited; see $work/spdk-target.log" >&2; exit 1; }
        sleep 0.1
    done
    rpc() { timeout 60 python3 "$SPDK_DIR/scripts/rpc.py" -s "$sock" "$@" >> "$work/spdk-rpc.log" 2>&1; }
    rpc nvmf_create_transport -t TCP \
        && rpc bdev_malloc_create -b Malloc0 512 4096 \
        && rpc nvmf_create_subsystem "$nqn" -a -s SPDK00000000000001 \
        && rpc nvmf_subsystem_add_ns "$nqn" Malloc0 \
        && rpc nvmf_subsystem_add_listener "$nqn" -t tcp -f ipv4 -a 127.0.0.1 -s "$port" \
        || { echo "SPDK's nvmf_tgt set-up failed; see $work/spdk-rpc.log and $work/spdk-target.log" >&2; exit 1; }
    wait_port || { echo "SPDK's nvmf_tgt did not listen on 127.0.0.1:$port" >&2; exit 1; }
}

# Each load generator prints one line: IOPS P50 P99 P99.9 (microseconds).
run_spdk_perf() { # WORKLOAD SIZE QD
    local out=$work/spdk-perf.out
    timeout $((seconds + warmup + 120)) "$SPDK_DIR/build/bin/spdk_nvme_perf" -c "$load_mask" "${huge[@]}" \
        -q "$3" -o "$2" -w "$1" -t "$seconds" -a "$warmup" -L \
        -r "trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" > "$out" 2>&1 || true
    awk '/^Total/ { iops = $(NF-4) }
         /^ *50\.00000% :/ { p50 = $3 } /^ *99\.00000% :/ { p99 = $3 } /^ *99\.90000% :/ { p999 = $3 }
         END { gsub(/us/, "", p50); gsub(/us/, "", p99); gsub(/us/, "", p999);
               if (iops == "") print "0 0 0 0"; else print iops, p50, p99, p999 }' "$out"
}

run_our_perf() { # WORKLOAD SIZE QD
    local json
    json=$(taskset -c "$load_cpu" timeout $((seconds + warmup + 120)) bin/nvmeof perf -a 127.0.0.1 -s "$port" \
        -n "$nqn" --namespace-id 1 --workload "$1" --io-size "$2" --queue-depth "$3" --time "$seconds" \
        --warmup "$warmup" --json 2>"$work/our-perf.err" | tail -n1)
    python3 -c 'import json, sys
try:
    s = json.loads(sys.argv[1]); l = s["latency_us"]
    print(s["iops"], l["p50"], l["p99"], l["p99.9"])
except Exception:
    print("0 0 0 0")' "$json"
}

declare -A result
for round in $(seq 1 "$rounds"); do
    order=$pairings
    # Alternate: odd rounds as given, even rounds reversed.
    if [ $((round % 2)) = 0 ]; then order=$(echo "$pairings" | tr ' ' '\n' | tac | tr '\n' ' '); fi
    for pairing in $order; do
        tgt=${pairing%+*}; load=${pairing#*+}
        if [ "$tgt" = spdk ]; then start_spdk; else start_ours; fi
        # Fill the namespace once so that reads touch written memory on both targets.
        if [ "$load" = spdk ]; then run_spdk_perf write 131072 8 >/dev/null; else run_our_perf write 131072 8 >/dev/null; fi
        for w in $selected; do
            IFS=: read -r name wl size qd <<< "$w"
            if [ "$load" = spdk ]; then line=$(run_spdk_perf "$wl" "$size" "$qd"); else line=$(run_our_perf "$wl" "$size" "$qd"); fi
            result[$name/$pairing/$round]=$line
            printf 'round %d %-10s %-18s IOPS %12.0f  p50 %9.1f  p99 %9.1f  p99.9 %9.1f us\n' "$round" "$pairing" "$name" $line
        done
        cleanup
    done
done

echo
echo "medians over $rounds round(s); ratios per round in brackets"
for w in $selected; do
    name=${w%%:*}
    args=()
    for pairing in $pairings; do
        for round in $(seq 1 "$rounds"); do args+=("$pairing" "$round" ${result[$name/$pairing/$round]}); done
    done
    python3 - "$name" "$rounds" "${args[@]}" <<'PY'
import statistics, sys
name, rounds, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {}
for i in range(0, len(rest), 6):
    pairing, rnd, iops, p50, p99, p999 = rest[i:i + 6]
    runs.setdefault(pairing, {})[int(rnd)] = [float(iops), float(p50), float(p99), float(p999)]
def med(pairing, k):
    return statistics.median(v[k] for v in runs[pairing].values())
for pairing in runs:
    print("%-18s %-10s IOPS %12.0f  p50 %9.1f  p99 %9.1f  p99.9 %9.1f us" % (name, pairing, med(pairing, 0),
          med(pairing, 1), med(pairing, 2), med(pairing, 3)))
def ratio(a, b, label):
    if a in runs and b in runs:
        per = [runs[a][r][0] / runs[b][r][0] for r in sorted(runs[a]) if runs[b].get(r) and runs[b][r][0] > 0]
        if per:
            print("%-18s %s: %.2f (%s)" % (name, label, statistics.median(per), ", ".join("%.2f" % x for x in per)))
ratio("ours+spdk", "spdk+spdk", "our target / SPDK's target (spdk_nvme_perf)")
ratio("spdk+ours", "spdk+spdk", "our perf / spdk_nvme_perf (SPDK's target)")
PY
done
