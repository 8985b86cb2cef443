#!/usr/bin/env bash
# Benchmark (never a test): our target and initiator side by side with SPDK's, on NVMe/TCP over 127.0.0.1 (or, with
# --transport rdma, NVMe-oF/RDMA: integration-tests/vm/bench-rdma.sh runs it so over Soft-RoCE in the QEMU guest), with
# SPDK's own tools as the judge (issue 17). Four pairings, each target on CPU 0 and each load generator on CPU 1:
#   spdk+spdk   SPDK's nvmf_tgt (malloc bdev)   driven by spdk_nvme_perf
#   ours+spdk   our daemon (RAM namespace)      driven by spdk_nvme_perf
#   spdk+ours   SPDK's nvmf_tgt                 driven by bin/nvmeof perf
#   ours+ours   our daemon                      driven by bin/nvmeof perf
# for four workloads (4 KiB random read QD1 and QD32, 4 KiB random write QD32, 128 KiB sequential read QD8), 512 MiB
# namespaces of 4 KiB blocks, busy polling on both targets and both load generators (ours with
# -Dnvmeof4j.host.idle_strategy=busy), a warm-up before every measured run. Rounds alternate
# the pairings' order so that both see the same moments of a noisy machine. Prints per workload and pairing IOPS,
# p50/p99/p99.9 (µs), and the ratios "our target / SPDK's" (both driven by spdk_nvme_perf) and "our perf / SPDK's
# perf" (both against SPDK's target), the median over the rounds.
#
# SPDK is not a dependency and nothing here builds it: point SPDK_DIR at an SPDK build (its build/bin/nvmf_tgt,
# build/bin/spdk_nvme_perf and scripts/rpc.py are used). Without SPDK_DIR only ours+ours runs.
#
#   SPDK_DIR=/path/to/spdk benchmarks/run-spdk-comparison.sh [--time S] [--warmup S] [--rounds N]
#       [--pairings "spdk+spdk ours+spdk spdk+ours ours+ours"] [--workloads "4k-randread-qd1 ..."] [--reactors N]
#       [--size-mib 512] [--spdk-mem-mib 1024] [--work DIR]
#       [--transport tcp|rdma] [--addr 127.0.0.1] [--port P]   (rdma: an address of an RDMA device, e.g. rxe0's)
#       [--target-java-opts OPTS]   (our daemon's JVM only, e.g. a JFR recording; NVMEOF4J_JAVA_OPTS goes to both)
#       [--ours-root DIR]   (our daemon and perf from another built checkout, e.g. the commit before a change:
#                            before/after figures from one machine state; default this checkout)
#       [--base-root DIR]   (a built checkout whose daemon is the target "base": pairings "base+spdk" and
#                            "base+ours" run it in the same rounds as "ours+...", alternating, and the ratio
#                            "our target / base target" is printed: a before/after judged in one run; "spdk+base"
#                            runs its perf against SPDK's target, with "our perf / base perf")
#       [--base-java-opts OPTS]  (extra JVM options of the "base" daemon only, after --target-java-opts; without
#                            --base-root "base" is this checkout: a variant of our daemon's JVM judged in one run)
#       [--probe CMD]       (run "CMD TARGET_PID LABEL WARMUP_S SECONDS OUT" next to each measured run, OUT being
#                            WORK/LABEL.probe: e.g. integration-tests/vm/guest/syscall-probe.sh, system calls per I/O)
#       [--pinning cpus|taskset]       (how our daemon and perf are pinned; default cpus, see below)
#       [--base-pinning cpus|taskset]  (the same for the --base-root daemon; default cpus when it knows reactor_cpus)
#       [--slow-below 0.8]  (the machine-state threshold, see below)
#       [--hugepages]       (our daemons get "hugepages": true, as SPDK's target runs in hugepages: buffer pools in
#                            reserved hugepages, RAM namespace chunks on transparent hugepages; docs/configuration.md)
#
# Machine state: before every measured run (each round x pairing x workload) benchmarks/machine-state.sh measures,
# in about a second on the load CPU, the memory-copy bandwidth (copy128k, copy64m in GB/s), the CPUs' steal and iowait
# share since the previous probe (steal: the hypervisor running something else), the runnable tasks during the probe
# (2 beside a busy-polling target; more: another worker's build or guest competes), the load average and the clock.
# On this machine type copies run 1.3-3.5x slower for minutes at a time, and every target with them: a ratio between
# a run in that state and one outside it means nothing. The line is printed after the run's figures and kept as
# WORK/LABEL.state. At the end each run is called (machine-state.sh --classify, a list of "state round ..." lines)
# "slow" when copy128k or copy64m was below --slow-below x the best of that figure over this invocation's runs, else
# "busy" when its runnable was at least 1 above the runs' lowest (another process competed for the CPUs) or when,
# during the measured seconds, processes other than the target and the load generator took 1.5% or more of the CPUs'
# time (machine-state.sh --others, printed after the probe: "others=2.3% (process_api 180ms, ...)"), else "fast";
# the summary gives each median twice: over all rounds, and over the "fast rounds" only, those in which every run the
# median or ratio takes was fast (with how many of the rounds that was). The probes at start and end (no target
# running, so copy64m is higher) are printed but not compared. In the QEMU guest the probe asks the host.
# Pinning, as SPDK's (benchmarks/pinning.sh): nvmf_tgt gets -m MASK and pins only its reactors there (its other threads
# run on the rest of its CPUs), spdk_nvme_perf gets -c MASK. Ours alike (--pinning cpus): the daemon gets
# "reactor_cpus" = the target CPUs and our perf --cpus LOAD_CPU, no taskset, so the JIT, GC and other JVM threads run
# on the other CPUs instead of taking turns with a busy reactor. --pinning taskset is the old way (the whole JVM under
# taskset -c), for before/after figures; a checkout without reactor_cpus (--ours-root, --base-root of an older
# commit) is run that way.
# --size-mib is the namespace size (our RAM namespace, SPDK's malloc bdev); --spdk-mem-mib the memory each SPDK
# process gets (-s). In the QEMU guest (NVMEOF4J_IN_GUEST=1) nothing is built: the host built before the boot.
#
# --reactors N gives our daemon N reactors on CPUs 0..N-1 and SPDK's nvmf_tgt the core mask of the same CPUs (the
# load generator then runs on CPU N): the scaling comparison for machines with more cores than this one.
# Hugepages: used by SPDK when 2 x --spdk-mem-mib of 2 MiB pages are free and hugetlbfs is mounted (SPDK's
# scripts/setup.sh does both); otherwise both SPDK tools run with --no-huge, which the first line says.
# Bounded: every run has its time; every process started here is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. "$root/benchmarks/pinning.sh"

ours_hugepages=""
seconds=10; warmup=3; rounds=3; reactors=1; size_mib=512; spdk_mem=1024; transport=tcp; addr=127.0.0.1; port=""
target_java_opts=""
ours_root=$root
base_root=""
base_java_opts=""
probe=""
pinning=cpus
base_pinning=""
slow_below=0.8
work=$root/benchmarks/target/spdk-comparison
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
        --size-mib) size_mib="$2"; shift 2 ;;
        --spdk-mem-mib) spdk_mem="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --transport) transport="$2"; shift 2 ;;
        --addr) addr="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --target-java-opts) target_java_opts="$2"; shift 2 ;;
        --ours-root) ours_root=$(cd "$2" && pwd); shift 2 ;;
        --base-root) base_root=$(cd "$2" && pwd); shift 2 ;;
        --base-java-opts) base_java_opts="$2"; shift 2 ;;
        --probe) probe="$2"; shift 2 ;;
        --pinning) pinning="$2"; shift 2 ;;
        --base-pinning) base_pinning="$2"; shift 2 ;;
        --slow-below) slow_below="$2"; shift 2 ;;
        --hugepages) ours_hugepages=', "hugepages": true'; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "run-spdk-comparison.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(nproc)" -gt "$reactors" ] || { echo "needs more than $reactors CPUs (targets on 0..$((reactors - 1)), load on $reactors)" >&2; exit 1; }
command -v taskset >/dev/null || { echo "needs taskset (util-linux)" >&2; exit 1; }
case "$pinning" in cpus|taskset) ;; *) echo "--pinning $pinning: cpus or taskset" >&2; exit 2 ;; esac
case "${base_pinning:-cpus}" in cpus|taskset) ;; *) echo "--base-pinning $base_pinning: cpus or taskset" >&2; exit 2 ;; esac
# A checkout that predates reactor_cpus / perf --cpus is pinned the old way, with taskset.
if [ "$pinning" = cpus ] && [ "$(pinning_of "$ours_root")" = taskset ]; then
    echo "$ours_root has no reactor_cpus / perf --cpus: pinned with taskset" >&2
    pinning=taskset
fi
if [ -n "$base_java_opts" ] && [ -z "$base_root" ]; then
    base_root=$ours_root
fi
if [ -n "$base_root" ] && [ -z "$base_pinning" ]; then
    base_pinning=$(pinning_of "$base_root")
fi
case "$transport" in
    tcp) ;;
    rdma) [ -n "$port" ] || port=4420 ;;
    *) echo "--transport $transport: tcp or rdma" >&2; exit 2 ;;
esac
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
known_workloads=$(for w in $all_workloads; do printf '%s ' "${w%%:*}"; done)
for name in $workloads; do
    [[ " $known_workloads" == *" $name "* ]] || { echo "unknown workload $name; known: $known_workloads" >&2; exit 2; }
done
[ -n "$selected" ] || { echo "no workload selected from: $known_workloads" >&2; exit 2; }

target_cpus=$(seq -s, 0 $((reactors - 1)))
load_cpu=$reactors
core_mask=$(printf '0x%x' $(( (1 << reactors) - 1 )))
load_mask=$(printf '0x%x' $(( 1 << load_cpu )))
nqn=nqn.2016-06.io.spdk:cnode1
[ -n "$port" ] || port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work"
work=$(readlink -f "$work")
# SPDK's RPC socket lives outside $work: in the guest $work is a 9p share, which cannot hold a Unix socket.
spdk_sock=/tmp/nvmeof4j-spdk-comparison-$$.sock
# Each of the two SPDK processes (target, perf) takes spdk_mem MiB, i.e. spdk_mem 2 MiB pages for both.
huge=(--no-huge -s "$spdk_mem")
if [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge "$spdk_mem" ] 2>/dev/null && grep -q ' hugetlbfs ' /proc/mounts; then
    huge=(-s "$spdk_mem")
fi
if [ "${huge[0]}" = --no-huge ] && [ -n "${SPDK_DIR:-}" ]; then
    echo "warning: SPDK's target and perf run without hugepages (--no-huge): fewer than $spdk_mem free 2 MiB pages" \
        "or no hugetlbfs mounted. Not the configuration of the README's figures: runs so had our perf's p99.9 against" \
        "SPDK's target at 1.1-1.4 ms (docs/benchmarks.md). To reserve them: mountpoint -q /dev/hugepages ||" \
        "mount -t hugetlbfs nodev /dev/hugepages; echo $((spdk_mem + 64)) > /proc/sys/vm/nr_hugepages" >&2
fi
# SPDK perf's -r and the transport names of each side.
spdk_trtype=TCP; [ "$transport" = rdma ] && spdk_trtype=RDMA
echo "$transport to $addr:$port; targets on CPU(s) $target_cpus, load on CPU $load_cpu (ours pinned with $pinning$([ -n "$base_root" ] && echo ", base with $base_pinning")); ${seconds}s per run after" \
    "${warmup}s warm-up; $rounds round(s); ${size_mib} MiB namespaces; SPDK ${huge[*]}$([ "${huge[0]}" = -s ] && echo ' (hugepages)');" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Inside the QEMU guest the root is read-only and the host has built (integration-tests/vm/bench-rdma.sh).
if [ "${NVMEOF4J_IN_GUEST:-0}" != 1 ]; then
    (cd "$ours_root" && mvn -q -B -ntp -DskipTests -pl target-daemon,initiator-lib -am package)
fi

# DPDK leaves an exited process's hugepage files (<mount>/spdk_pid<PID>map_N) behind, and each later SPDK process
# takes a new prefix (spdk_pid<its PID>): without this, a few starts use up the pages and the next one fails.
reclaim_hugepages() {
    local f pid
    for f in $(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts | sed 's|$|/spdk_pid*|'); do
        [ -e "$f" ] || continue
        pid=${f##*/spdk_pid}; pid=${pid%%map_*}
        kill -0 "$pid" 2>/dev/null || rm -f "$f"
    done
}

target_pid=""
cleanup() { # SIGTERM, up to 30 s for an orderly stop, then SIGKILL
    if [ -n "$target_pid" ]; then
        kill "$target_pid" 2>/dev/null
        for _ in $(seq 1 300); do kill -0 "$target_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$target_pid" 2>/dev/null || true
        wait "$target_pid" 2>/dev/null || true
    fi
    target_pid=""
    rm -f "$spdk_sock"
    reclaim_hugepages
    return 0
}
trap cleanup EXIT
trap 'exit 143' TERM INT   # so that the EXIT trap stops the target

# The target is ready: NVMe/TCP accepts on the port. An RDMA listener has no TCP port: our daemon logs
# "target started" after its listeners are up, and SPDK's RPC has returned once its listener is.
wait_ready() { # LOG (ours) or empty (SPDK)
    for _ in $(seq 1 2400); do
        if [ "$transport" = tcp ]; then
            (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null && return 0
        elif [ -z "$1" ] || grep -q "target started" "$1"; then
            return 0
        fi
        kill -0 "$target_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

start_ours() { # [ROOT PINNING JAVA_OPTS] (default: --ours-root --pinning, no extra JVM options)
    local daemon_root=${1:-$ours_root} extra_opts=${3:-} daemon_pin daemon_cpus_setting
    daemon_pinning "${2:-$pinning}" "$target_cpus"
    cat > "$work/ours.json" <<JSON
{ "ports": [{"portid": 1, "addr": {"trtype": "$transport", "adrfam": "ipv4", "traddr": "$addr", "trsvcid": "$port"},
             "param": {"inline_data_size": "4096"}, "subsystems": ["$nqn"]}],
  "subsystems": [{"nqn": "$nqn", "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
    "namespaces": [ {"nsid": 1, "device": {"backend": "ram", "size": "${size_mib}M", "block_size": 4096}} ]}],
  "nvmeof4j": {"reactors": $reactors$daemon_cpus_setting$ours_hugepages, "idle_strategy": "busy", "http": "off"} }
JSON
    NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} $target_java_opts $extra_opts" \
        "${daemon_pin[@]}" "$daemon_root/bin/nvmeof-target" --config "$work/ours.json" > "$work/ours-target.log" 2>&1 &
    target_pid=$!
    wait_ready "$work/ours-target.log" || { echo "our daemon did not listen on $addr:$port; see $work/ours-target.log" >&2; exit 1; }
}

start_spdk() {
    local sock=$spdk_sock rpc
    rm -f "$sock"
    "$SPDK_DIR/build/bin/nvmf_tgt" -m "$core_mask" -r "$sock" "${huge[@]}" > "$work/spdk-target.log" 2>&1 &
    target_pid=$!
    for _ in $(seq 1 1200); do
        [ -S "$sock" ] && break
        kill -0 "$target_pid" 2>/dev/null || { echo "SPDK's nvmf_tgt exited; see $work/spdk-target.log" >&2; exit 1; }
        sleep 0.1
    done
    rpc() { timeout 60 python3 "$SPDK_DIR/scripts/rpc.py" -s "$sock" "$@" >> "$work/spdk-rpc.log" 2>&1; }
    rpc nvmf_create_transport -t "$spdk_trtype" \
        && rpc bdev_malloc_create -b Malloc0 "$size_mib" 4096 \
        && rpc nvmf_create_subsystem "$nqn" -a -s SPDK00000000000001 \
        && rpc nvmf_subsystem_add_ns "$nqn" Malloc0 \
        && rpc nvmf_subsystem_add_listener "$nqn" -t "$transport" -f ipv4 -a "$addr" -s "$port" \
        || { echo "SPDK's nvmf_tgt set-up failed; see $work/spdk-rpc.log and $work/spdk-target.log" >&2; exit 1; }
    wait_ready "" || { echo "SPDK's nvmf_tgt did not listen on $addr:$port" >&2; exit 1; }
}

# The machine's state now, on the load CPU (idle between runs), kept as WORK/LABEL.state and printed.
machine_state() { # LABEL
    taskset -c "$load_cpu" "$root/benchmarks/machine-state.sh" --state "$work/machine-state" > "$work/$1.state" 2>&1 \
        || echo "no probe (machine-state.sh failed)" > "$work/$1.state"
    head -n1 "$work/$1.state"
}
echo "machine state at start: $(machine_state start)"

# Each load generator prints one line: IOPS P50 P99 P99.9 (microseconds), and keeps its output in $work/LABEL.*.
run_spdk_perf() { # WORKLOAD SIZE QD LABEL
    local out=$work/$4.out
    timeout $((seconds + warmup + 120)) "$SPDK_DIR/build/bin/spdk_nvme_perf" -c "$load_mask" "${huge[@]}" \
        -q "$3" -o "$2" -w "$1" -t "$seconds" -a "$warmup" -L \
        -r "trtype:$spdk_trtype adrfam:IPv4 traddr:$addr trsvcid:$port subnqn:$nqn" > "$out" 2>&1 || true
    reclaim_hugepages
    awk '/^Total/ { iops = $(NF-4) }
         /^ *50\.00000% :/ { p50 = $3 } /^ *99\.00000% :/ { p99 = $3 } /^ *99\.90000% :/ { p999 = $3 }
         END { gsub(/us/, "", p50); gsub(/us/, "", p99); gsub(/us/, "", p999);
               if (iops == "") print "0 0 0 0"; else print iops, p50, p99, p999 }' "$out"
}

run_our_perf() { # WORKLOAD SIZE QD LABEL [ROOT PINNING] (default: --ours-root --pinning)
    local json perf_pin perf_cpus perf_root=${5:-$ours_root}
    perf_pinning "${6:-$pinning}" "$load_cpu"
    # Busy polling, as spdk_nvme_perf polls (a checkout that predates the property ignores it).
    json=$(NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} -Dnvmeof4j.host.idle_strategy=busy" \
        "${perf_pin[@]}" timeout $((seconds + warmup + 120)) "$perf_root/bin/nvmeof" perf -t "$transport" \
        -a "$addr" -s "$port" -n "$nqn" --namespace-id 1 --workload "$1" --io-size "$2" --queue-depth "$3" \
        --time "$seconds" --warmup "$warmup" "${perf_cpus[@]}" --json 2>"$work/$4.err" | tail -n1)
    python3 -c 'import json, sys
try:
    s = json.loads(sys.argv[1]); l = s["latency_us"]
    print(s["iops"], l["p50"], l["p99"], l["p99.9"])
except Exception:
    print("0 0 0 0")' "$json"
}

declare -A result states
state_keys=() # in the order of the runs
for round in $(seq 1 "$rounds"); do
    order=$pairings
    # Alternate: odd rounds as given, even rounds reversed.
    if [ $((round % 2)) = 0 ]; then order=$(echo "$pairings" | tr ' ' '\n' | tac | tr '\n' ' '); fi
    for pairing in $order; do
        tgt=${pairing%+*}; load=${pairing#*+}
        case "$tgt" in
            spdk) start_spdk ;;
            base) [ -n "$base_root" ] || { echo "pairing $pairing needs --base-root" >&2; exit 2; }
                  start_ours "$base_root" "$base_pinning" "$base_java_opts" ;;
            *) start_ours ;;
        esac
        # Fill the namespace once so that reads touch written memory on both targets. A cold daemon may answer the
        # first Connect later than SPDK perf waits (its 500 ms; "Connect command failed, rc -125" in the QEMU guest,
        # where our daemon's first Connect loads its controller's classes over 9p and runs them interpreted): a fill
        # that did no I/O is run once more, against our daemon by our perf, which waits for a Connect as the Linux
        # host does. Else the run measured next would read unwritten memory from a daemon still compiling.
        for attempt in 1 2; do
            if [ "$load" = spdk ] && { [ "$attempt" = 1 ] || [ "$tgt" = spdk ]; }; then
                line=$(run_spdk_perf write 131072 8 "$pairing-fill")
            elif [ "$load" = base ] || { [ "$load" = spdk ] && [ "$tgt" = base ]; }; then
                line=$(run_our_perf write 131072 8 "$pairing-fill" "$base_root" "$base_pinning")
            else line=$(run_our_perf write 131072 8 "$pairing-fill"); fi
            [ "${line%% *}" = 0 ] || break
            echo "round $round $pairing: the fill did no I/O (attempt $attempt; see $work/$pairing-fill.*)" >&2
        done
        for w in $selected; do
            IFS=: read -r name wl size qd <<< "$w"
            label="$pairing-$name-round$round"
            state=$(machine_state "$label")
            states[$name/$pairing/$round]=$state; state_keys+=("$name/$pairing/$round")
            # The other processes' share of the CPUs over the measured seconds (machine-state.sh --others).
            taskset -c "$load_cpu" "$root/benchmarks/machine-state.sh" --others "$warmup" \
                "$((seconds > 2 ? seconds - 1 : 1))" > "$work/$label.others" 2>&1 &
            others_pid=$!
            probe_pid=""
            if [ -n "$probe" ]; then
                "$probe" "$target_pid" "$label" "$warmup" "$seconds" "$work/$label.probe" > "$work/$label.probe.log" 2>&1 &
                probe_pid=$!
            fi
            if [ "$load" = spdk ]; then line=$(run_spdk_perf "$wl" "$size" "$qd" "$label")
            elif [ "$load" = base ]; then line=$(run_our_perf "$wl" "$size" "$qd" "$label" "$base_root" "$base_pinning")
            else line=$(run_our_perf "$wl" "$size" "$qd" "$label"); fi
            if [ -n "$probe_pid" ]; then # it ends by itself within the run; bounded all the same
                for _ in $(seq 1 300); do kill -0 "$probe_pid" 2>/dev/null || break; sleep 0.1; done
                kill "$probe_pid" 2>/dev/null || true; wait "$probe_pid" 2>/dev/null || true
            fi
            wait "$others_pid" 2>/dev/null || true # bounded: its own timeout
            state="$state $(head -n1 "$work/$label.others")"
            states[$name/$pairing/$round]=$state
            result[$name/$pairing/$round]=$line
            # shellcheck disable=SC2086 # $line: the four figures
            printf 'round %d %-10s %-18s IOPS %12.0f  p50 %9.1f  p99 %9.1f  p99.9 %9.1f us  %s\n' "$round" "$pairing" \
                "$name" $line "$state"
        done
        cleanup
    done
done

echo "machine state at end: $(machine_state end)"

# Each run's state against the fastest and least contended probes of this invocation's runs.
declare -A state_of
while IFS=$'\t' read -r key cls note; do
    state_of[$key]=$cls
    IFS=/ read -r name pairing round <<< "$key"
    printf 'state round %d %-10s %-18s %-7s %s\n' "$round" "$pairing" "$name" "$cls" "$note"
done < <(for key in "${state_keys[@]}"; do printf '%s\t%s\n' "$key" "${states[$key]}"; done \
         | "$root/benchmarks/machine-state.sh" --classify "$slow_below")

echo
echo "medians over $rounds round(s); ratios per round in brackets; \"fast rounds\": only rounds whose runs were all" \
    "fast (copy bandwidth >= $slow_below x the best probe's, runnable < the least + 1," \
    "other processes < 1.5% of the CPUs)"
for w in $selected; do
    name=${w%%:*}
    args=()
    for pairing in $pairings; do
        for round in $(seq 1 "$rounds"); do # shellcheck disable=SC2206 # the result: four figures
            args+=("$pairing" "$round" ${result[$name/$pairing/$round]} "${state_of[$name/$pairing/$round]:-unknown}")
        done
    done
    python3 - "$name" "$rounds" "$reactors" "${args[@]}" <<'PY'
import statistics, sys
name, rounds, cores, rest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
runs, fast = {}, {}
for i in range(0, len(rest), 7):
    pairing, rnd, iops, p50, p99, p999, state = rest[i:i + 7]
    runs.setdefault(pairing, {})[int(rnd)] = [float(iops), float(p50), float(p99), float(p999)]
    fast.setdefault(pairing, set()).update([int(rnd)] if state == "fast" else [])
def med(pairing, k, only=None):
    return statistics.median(v[k] for r, v in runs[pairing].items() if only is None or r in only)
for pairing in runs:
    # Per target core: each target ran on the same `cores` CPUs (--reactors N: our reactors, SPDK's core mask).
    print("%-18s %-10s IOPS %12.0f  (%10.0f per target core)  p50 %9.1f  p99 %9.1f  p99.9 %9.1f us" % (name,
          pairing, med(pairing, 0), med(pairing, 0) / cores, med(pairing, 1), med(pairing, 2), med(pairing, 3)))
    f = fast[pairing]
    print("%-18s %-10s fast rounds (%d of %d): %s" % (name, pairing, len(f), len(runs[pairing]),
          "IOPS %12.0f  p50 %9.1f  p99 %9.1f  p99.9 %9.1f us" % tuple(med(pairing, k, f) for k in range(4))
          if f else "none"))
def ratio(a, b, label):
    if a in runs and b in runs:
        rs = [r for r in sorted(runs[a]) if runs[b].get(r) and runs[b][r][0] > 0]
        per = [runs[a][r][0] / runs[b][r][0] for r in rs]
        if per:
            print("%-18s %s: %.2f (%s)" % (name, label, statistics.median(per), ", ".join("%.2f" % x for x in per)))
            # Only rounds in which both runs were fast: a ratio across a state change means nothing.
            both = [x for r, x in zip(rs, per) if r in fast[a] and r in fast[b]]
            print("%-18s %s, fast rounds (%d of %d): %s" % (name, label, len(both), len(per), "%.2f (%s)" % (
                  statistics.median(both), ", ".join("%.2f" % x for x in both)) if both else "none"))
ratio("ours+spdk", "spdk+spdk", "our target / SPDK's target (spdk_nvme_perf)")
ratio("spdk+ours", "spdk+spdk", "our perf / spdk_nvme_perf (SPDK's target)")
ratio("base+spdk", "spdk+spdk", "base target / SPDK's target (spdk_nvme_perf)")
ratio("ours+spdk", "base+spdk", "our target / base target (spdk_nvme_perf)")
ratio("spdk+base", "spdk+spdk", "base perf / spdk_nvme_perf (SPDK's target)")
ratio("spdk+ours", "spdk+base", "our perf / base perf (SPDK's target)")
PY
done
