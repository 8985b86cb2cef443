#!/usr/bin/env bash
# Benchmark (not a test): the guest's Linux kernel NVMe/TCP host with fio against
#   1. the Linux kernel target (nvmet-tcp, 127.0.0.1:4420 inside the guest), then
#   2. our target daemon (bin/nvmeof-target), started inside the same guest (default) or on the host (--ours host,
#      reached from the guest at 10.0.2.2),
# each with a 256 MiB tmpfs-file-backed namespace, in ONE guest run. Prints a table (IOPS, ratio ours/kernel,
# p50/p99 completion latency) and writes bench-summary.json (plus each fio JSON) into the results directory.
#
#   integration-tests/vm/bench-target.sh [options]
#     --ours guest|host    where our daemon runs (default guest)
#     --runtime S          seconds per fio job (default 8)        --warmup S   JVM warm-up fio run (default 15;
#                          then QD1, a Keep Alive pause and QD1 until C2 is quiet, at most --jit-quiet-max S: 180)
#     --size SIZE          namespace size (default 256M)          --results DIR (default integration-tests/target/bench-results/<time>)
#     --timeout S          hard limit for the guest run (default 900)
#     --ours-backend file|ram   backend of our namespace (default file, on the guest's tmpfs / host /dev/shm)
#     --ours-settings JSON the daemon's own settings object (config key "nvmeof4j"), e.g. '{"idle_strategy": "busy"}'
#     --no-prebuild        do not start bin/nvmeof-target once on the host first (that builds the project if needed)
#     --workloads "NAME ..." only these of 4k-randread-qd1 4k-randread-qd16 128k-seqread-qd8 (default all)
#     --variant NAME[@LAUNCHER]=JAVA_OPTS[%SETTINGS_JSON]   (repeatable) run our daemon once per variant, in one guest
#                          boot, e.g. --variant wake= --variant nowake=-Dnvmeof4j.io_uring.wake_selector=false, another
#                          build: --variant base@/path/to/other/bin/nvmeof-target= (the guest sees the host's root
#                          read-only), other settings: --variant spin0='%{"idle_spin_us": 0}' (instead of --ours-settings)
#     --spdk-modes "M ..." with SPDK_DIR (below): SPDK's target in these modes, poll and/or interrupt (default both)
#     --fio-cpus LIST      run every measured fio job under taskset -c LIST (both targets alike), e.g. 0 with a variant
#                          '%{"reactor_cpus": "0"}': the host's submissions, our reactor and the kernel target's
#                          workers (which run where the host's packets arrive) then share one vCPU, no cross-vCPU wake-up
#     --guest-kernel-args A more guest kernel parameters, e.g. "clocksource=tsc tsc=reliable" (run-guest.sh --kernel-args)
#     --rounds N           run the variants N times, every other round in reverse order, so that none always runs
#                          first in a guest whose speed drifts (default 1); prints each variant's median ratio
#     --kernel-each-round  measure the kernel target again in every round (label kernel-rN), before the variants, and
#                          take each round's ratios against that round's kernel figure: on a loaded machine the guest's
#                          speed moves 2-4x within one boot, so one kernel figure from the start misleads
#     --guest-java-opts O  JVM options of every variant (default -XX:-TieredCompilation: C2 only; the tiered JVM died
#                          here once with the TCG SIGSEGV of integration-tests/vm/README.md, and C1 only is CPU-bound)
#     --trace              count, per job, the io_uring requests the guest kernel punted to io-wq worker threads
#                          (tracepoint io_uring:io_uring_queue_async_work, a hist trigger) next to the requests
#                          completed (io_uring:io_uring_complete): where a file namespace's QD1 time goes
#     --syscalls           count our daemon's system calls per I/O (strace -c on all its threads; it slows the daemon,
#                          so take IOPS from a run without it): where a QD1 I/O's time goes besides the kernel's
#     --probe              count, per job, the system calls of the target's process per I/O and its threads' CPU time
#                          per I/O (guest/syscall-probe.sh: in-kernel counters, the target is not slowed; ours and
#                          SPDK's, not the kernel target, which has no process)
#     --syscalls-round R   --syscalls in round R only (of --rounds): its figures are labelled NAME-sR and left out of
#                          the medians, so one guest boot gives both the IOPS and the system calls per I/O
#     --competitor         shared-CPU mode (issue 16): 4 KiB random reads at QD1 and QD32, each without and then with a
#                          CPU-bound busy loop pinned to guest CPU 0; fio runs on CPU 1, our daemon's reactor (ours in
#                          the guest) on CPU 0 ("reactor_cpus": "0"; its JIT and GC on CPU 1; a build without
#                          reactor_cpus: the whole JVM under taskset -c 0), the kernel target's workers where the kernel
#                          schedules them. Prints the ratios
#                          "with competitor / without" per target.
#
# SPDK_DIR=/path/to/spdk (optional; an SPDK build for a CPU the guest has, e.g. --target-arch=x86-64-v3; nothing here
# builds it): SPDK's nvmf_tgt serves the same kind of tmpfs file (an aio bdev; buffered, as tmpfs has no O_DIRECT) to
# the same kernel host and fio, in every round after the kernel target, once per mode of --spdk-modes (default
# "poll interrupt": its reactor busy-polling on vCPU 0, as SPDK runs, and --interrupt-mode, where it blocks in epoll as
# ours and the kernel's workers do). Labels spdk-poll and spdk-interrupt, ratios over the kernel target like ours:
# what a user-space target reaches in this guest at QD1, beside ours.
# NVMEOF4J_TARGET_LAUNCHER=PATH runs another launcher than bin/nvmeof-target (same "--config FILE" command line).
# Machine state: before every fio job the host measures its state (benchmarks/machine-state.sh: copy bandwidth, steal,
# load; the guest's speed follows the host's, which moves 1.3-3.5x for minutes at a time), printed as "BENCH state
# LABEL NAME: host ..." before the job's figures, kept as bench-LABEL-NAME.state, and in the table and
# bench-summary.json ("host_state"): compare only figures whose copy bandwidths are alike.
# Software emulation (TCG): absolute numbers mean little; compare the two columns of one run.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
LAUNCHER="${NVMEOF4J_TARGET_LAUNCHER:-$PROJECT/bin/nvmeof-target}"
SUBNQN_KERNEL="nqn.2014-08.io.nvmeof4j:bench-kernel"
SUBNQN_OURS="nqn.2014-08.io.nvmeof4j:bench"
SUBNQN_SPDK="nqn.2014-08.io.nvmeof4j:bench-spdk"
# workload name : rw : bs : iodepth
WORKLOADS="4k-randread-qd1:randread:4k:1 4k-randread-qd16:randread:4k:16 128k-seqread-qd8:read:128k:8"
COMPETITOR_WORKLOADS="4k-randread-qd1:randread:4k:1 4k-randread-qd32:randread:4k:32"

# =================================================================================================================
# Guest side
# =================================================================================================================
guest_main() {
    . "$HERE/guest/lib.sh"
    . "$HERE/guest/nvmet.sh"
    local runtime="${BENCH_RUNTIME:-8}" warmup="${BENCH_WARMUP:-15}" size="${BENCH_SIZE:-256M}"
    local ours_where="${BENCH_OURS:-guest}" backend="${BENCH_OURS_BACKEND:-file}"
    local res="${RESULTS_DIR:-/tmp}" tmpfs="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}"
    local hostid; hostid="$(cat /proc/sys/kernel/random/uuid)"
    local hostnqn="nqn.2014-08.org.nvmexpress:uuid:$hostid"
    local rc=0 competitor="${BENCH_COMPETITOR:-0}" pin=()
    if [ "$competitor" = 1 ]; then WORKLOADS="$COMPETITOR_WORKLOADS"; pin=(taskset -c 1); fi
    if [ -n "${BENCH_FIO_CPUS:-}" ]; then pin=(taskset -c "$BENCH_FIO_CPUS"); fi
    if [ -n "${BENCH_WORKLOADS:-}" ]; then # --workloads: keep the named ones, in their order here
        local kept="" w
        for w in $WORKLOADS; do
            case " $BENCH_WORKLOADS " in *" ${w%%:*} "*) kept="$kept $w" ;; esac
        done
        WORKLOADS="${kept# }"
    fi
    echo "BENCH kernel $(uname -r), $(nproc) vCPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null), runtime ${runtime}s per job, namespace $size, ours in the $ours_where${BENCH_FIO_CPUS:+, fio on CPU $BENCH_FIO_CPUS}"

    fill() { # fill FILE SIZE: non-zero data, so reads touch real pages on both targets
        { yes "nvmeof4j-bench-fill-0123456789abcdef" 2>/dev/null || true; } | head -c "$(numfmt --from=iec "$2")" > "$1"
    }
    connect_dev() { # connect_dev ADDR PORT NQN -> prints the block device
        timeout 90 nvme connect -t tcp -a "$1" -s "$2" -n "$3" --hostnqn="$hostnqn" --hostid="$hostid" \
            --nr-io-queues=2 >/dev/null || return 1
        wait_for 30 ns_blockdev "$3" 1 || return 1
        ns_blockdev "$3" 1
    }
    run_jobs() { # run_jobs LABEL DEV: every workload; in competitor mode once more as LABEL-busy beside a busy loop
        run_workloads "$1" "$2"
        [ "$competitor" = 1 ] || return 0
        taskset -c 0 sh -c 'while :; do :; done' &
        local busy=$!
        run_workloads "$1-busy" "$2"
        kill "$busy"; wait "$busy" 2>/dev/null
        return 0
    }
    local trace="${BENCH_TRACE:-0}" events=/sys/kernel/tracing/events/io_uring
    if [ "$trace" = 1 ] && [ ! -d "$events" ]; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
        [ -d "$events" ] || { echo "BENCH --trace: no io_uring tracepoints in this kernel"; trace=0; }
    fi
    trace_start() { # hist triggers count every event of the two tracepoints from now on
        local e
        [ "$trace" = 1 ] || return 0
        for e in io_uring_queue_async_work io_uring_complete; do
            echo 'hist:keys=common_type' > "$events/$e/trigger" 2>/dev/null
        done
    }
    trace_stop() { # trace_stop LABEL NAME: prints and removes the counts
        local e n line=""
        [ "$trace" = 1 ] || return 0
        for e in io_uring_queue_async_work io_uring_complete; do
            n=$(awk '/^ *Hits:/ { print $2 }' "$events/$e/hist" 2>/dev/null)
            echo '!hist:keys=common_type' > "$events/$e/trigger" 2>/dev/null
            line="$line $e=${n:-0}"
        done
        echo "BENCH trace $1 $2:$line"
    }
    traced_pid="" # our daemon's or SPDK's pid while it serves (--syscalls, --probe)
    syscalls_start() { # syscalls_start LABEL NAME: strace -c over every thread of our daemon while fio runs
        strace_pid=""
        [ "${BENCH_SYSCALLS:-0}" = 1 ] && [ -n "$traced_pid" ] || return 0
        [ -z "${BENCH_SYSCALLS_ROUND:-}" ] || [ "$round" = "$BENCH_SYSCALLS_ROUND" ] || return 0
        strace -c -f -qq -p "$traced_pid" -o "$res/strace-$1-$2.txt" & strace_pid=$!
        strace_t0=$(date +%s.%N)
        sleep 1 # attached to every thread before fio starts
    }
    syscalls_stop() { # syscalls_stop LABEL NAME: system calls per I/O (calls / (IOPS x traced seconds))
        [ -n "$strace_pid" ] || return 0
        kill -INT "$strace_pid" 2>/dev/null; wait "$strace_pid" 2>/dev/null
        python3 - "$res/strace-$1-$2.txt" "$res/bench-$1-$2.json" "$strace_t0" "$(date +%s.%N)" "$1 $2" <<'PY'
import json, sys
txt, fio, t0, t1, what = sys.argv[1:6]
try:
    iops = json.load(open(fio))["jobs"][0]["read"]["iops"]
    rows = [l.split() for l in open(txt) if l.strip() and l.split()[0][0].isdigit()]
except (OSError, ValueError, KeyError):
    print("BENCH syscalls %s: no figures" % what); sys.exit(0)
ios = iops * (float(t1) - float(t0))
calls = {r[-1]: int(r[3]) for r in rows if len(r) >= 5}
total = calls.pop("total", sum(calls.values()))
top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
print("BENCH syscalls %s: %.1f per I/O (%s)" % (what, total / ios if ios else 0,
      ", ".join("%s %.2f" % (k, v / ios) for k, v in top)))
PY
    }
    probe_start() { # probe_start LABEL NAME: guest/syscall-probe.sh over the measured seconds of the coming job
        probe_pid=""
        [ "${BENCH_PROBE:-0}" = 1 ] && [ -n "$traced_pid" ] || return 0
        # it waits out fio's 1 s ramp and counts runtime - 2 s
        "$HERE/guest/syscall-probe.sh" "$traced_pid" "$1-$2" 0 "$runtime" "$res/probe-$1-$2.json" 0 \
            > "$res/probe-$1-$2.log" 2>&1 &
        probe_pid=$!
    }
    probe_stop() { # probe_stop LABEL NAME: per I/O of the job, from the probe's counts and fio's IOPS
        [ -n "$probe_pid" ] || return 0
        wait "$probe_pid"
        python3 - "$res/probe-$1-$2.json" "$res/bench-$1-$2.json" "$1 $2" <<'PY'
import json, sys
probe, fio, what = sys.argv[1:4]
try:
    p = json.load(open(probe))
    rates, iops = p["per_second"], json.load(open(fio))["jobs"][0]["read"]["iops"]
except (OSError, ValueError, KeyError):
    print("BENCH probe %s: no figures" % what); sys.exit(0)
calls = {k: v / iops for k, v in rates["syscalls"].items()} if iops else {}
total = calls.pop("all", 0)
top = ", ".join("%s %.2f" % kv for kv in sorted(calls.items(), key=lambda kv: -kv[1])[:7])
us = {k: v * 1e6 / iops for k, v in rates["process"].items()} if iops else {}
print("BENCH probe %s: %.1f system calls per I/O (%s); CPU per I/O user %.0f us, system %.0f us, C2 %.0f us (%s)"
      % (what, total, top, us.get("user", 0), us.get("system", 0), us.get("c2_run", 0), p.get("tool")))
PY
    }
    run_workloads() { # run_workloads LABEL DEV
        local label="$1" dev="$2" w name rw bs qd
        for w in $WORKLOADS; do
            IFS=: read -r name rw bs qd <<< "$w"
            # The host's state, asked over the results share (machine-state.sh --serve on the host side).
            "$PROJECT/benchmarks/machine-state.sh" > "$res/bench-$label-$name.state" 2>&1
            echo "BENCH state $label $name: $(head -n1 "$res/bench-$label-$name.state")"
            trace_start
            syscalls_start "$label" "$name"
            probe_start "$label" "$name"
            if ! timeout $((runtime + 120)) "${pin[@]}" fio --name="$name" --filename="$dev" --ioengine=libaio --direct=1 \
                    --rw="$rw" --bs="$bs" --iodepth="$qd" --numjobs=1 --time_based --runtime="$runtime" \
                    --ramp_time=1 --norandommap --randrepeat=0 --lat_percentiles=1 --clat_percentiles=1 --output-format=json \
                    --output="$res/bench-$label-$name.json" >/dev/null 2>"$res/bench-$label-$name.err"; then
                echo "BENCH fio $label $name failed: $(tail -n 3 "$res/bench-$label-$name.err" | tr '\n' ' ')"
                rm -f "$res/bench-$label-$name.json"
                rc=1
            else
                echo "BENCH $label $name: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]["read"]; print("%.0f IOPS" % j["iops"])' "$res/bench-$label-$name.json")"
            fi
            trace_stop "$label" "$name"
            syscalls_stop "$label" "$name"
            probe_stop "$label" "$name"
        done
    }
    warm() { # warm DEV SECONDS [IODEPTH]
        timeout $(($2 + 60)) fio --name=warmup --filename="$1" --ioengine=libaio --direct=1 --rw=randread --bs=4k \
            --iodepth="${3:-16}" --numjobs=1 --time_based --runtime="$2" --norandommap --output-format=terse \
            >/dev/null 2>&1
    }
    c2_ticks() { # c2_ticks PID: CPU ticks the JVM's C2 compiler threads have used so far
        local t comm sum=0 f
        for t in /proc/"$1"/task/*; do
            read -r comm < "$t/comm" 2>/dev/null || continue
            case "$comm" in C2*) ;; *) continue ;; esac
            f=($(sed 's/^.*) //' "$t/stat" 2>/dev/null)) # fields from 3 on: utime and stime are 14 and 15
            sum=$(( sum + ${f[11]:-0} + ${f[12]:-0} ))
        done
        echo "$sum"
    }
    # Our daemon's warm-up: random reads at QD16 for WARMUP s, then the traffic the measured jobs bring that the
    # warm-up did not: QD1 rounds (an idle reactor between commands) and, after an idle stretch, the host's Keep Alive
    # (traffic-based: the host sends none while I/O flows). Each makes C2 recompile the data path (uncommon traps in
    # branches the warm-up never took), which under emulation takes seconds of a vCPU per method: so it goes on
    # in 5 s QD1 slices until the compiler threads used under 5 % of a slice, at most BENCH_JIT_QUIET_MAX s
    # (default 180). Prints how long that took; the measured jobs then see a daemon in its steady state, as on real
    # hardware within a second of the same events.
    warm_ours() { # warm_ours LABEL DEV PID
        local before after waited=0 slice=5 busy=0 hz; hz=$(getconf CLK_TCK)
        warm "$2" "$warmup"
        warm "$2" 3 1
        sleep 7 # past the Linux host's Keep Alive period (kato 5 s, traffic-based: sent after an idle stretch)
        while [ "$waited" -lt "${BENCH_JIT_QUIET_MAX:-180}" ]; do
            before=$(c2_ticks "$3")
            warm "$2" "$slice" 1
            after=$(c2_ticks "$3")
            waited=$(( waited + slice ))
            busy=$(( (after - before) * 100 / (hz * slice) )) # percent of one vCPU
            if [ "$busy" -lt 5 ]; then
                echo "BENCH $1: C2 quiet after ${waited} s of QD1 (${warmup} s at QD16, a Keep Alive pause)"
                return 0
            fi
        done
        if [ "$waited" = 0 ]; then
            echo "BENCH $1: not waiting for C2 (--jit-quiet-max 0): the figures may include compilation"
        else
            echo "BENCH $1: C2 still compiling after ${waited} s of QD1 ($busy % of a vCPU in the last ${slice} s):" \
                "the figures include compilation"
        fi
    }

    # ---- 1. the Linux kernel target (again per round with --kernel-each-round) ----
    run_kernel() { # run_kernel LABEL
    nvmet_clear
    fill "$tmpfs/kernel.img" "$size"
    if nvmet_subsystem "$SUBNQN_KERNEL" "linux-nvmet" "kernelbench00001" \
        && nvmet_file_ns "$SUBNQN_KERNEL" 1 "$tmpfs/kernel.img" \
        && nvmet_port 1 tcp 127.0.0.1 4420 && nvmet_link 1 "$SUBNQN_KERNEL"; then
        local dev
        if dev="$(connect_dev 127.0.0.1 4420 "$SUBNQN_KERNEL")"; then
            echo "BENCH $1 target on $dev"
            warm "$dev" 2
            run_jobs "$1" "$dev"
        else
            echo "BENCH cannot connect to the kernel target"; rc=1
        fi
        timeout 60 nvme disconnect -n "$SUBNQN_KERNEL" >/dev/null
    else
        echo "BENCH kernel target setup failed"; rc=1
    fi
    nvmet_clear
    rm -f "$tmpfs/kernel.img"
    }
    run_kernel kernel

    # ---- 2. our target: once per variant (launcher + JVM options), BENCH_ROUNDS times, even rounds reversed ----
    run_ours() { # run_ours LABEL LAUNCHER JAVA_OPTS SETTINGS_JSON
        local label="$1" launcher="$2" settings="$4" daemon_pid="" addr port
        export NVMEOF4J_JAVA_OPTS="$3 -XX:ErrorFile=$res/hs_err_pid%p.log"
        if [ "$ours_where" = host ]; then
            addr="${NVMEOF4J_HOST_ADDR:-10.0.2.2}"; port="${BENCH_OURS_PORT:?}"
        else
            addr=127.0.0.1; port=4421
            local cfg="$tmpfs/ours-config.json" device
            if [ "$backend" = ram ]; then
                device="{\"backend\": \"ram\", \"size\": \"$size\", \"block_size\": 4096}"
            else
                [ -f "$tmpfs/ours.img" ] || fill "$tmpfs/ours.img" "$size"
                device="{\"path\": \"$tmpfs/ours.img\", \"size\": \"$size\", \"block_size\": 4096}"
            fi
            local extra="" daemon_pin=()
            if [ "$competitor" = 1 ]; then
                # Our reactor on CPU 0 with the busy loop, as nvmf_tgt -m 0x1 would pin its reactor: "reactor_cpus"
                # (the JIT and GC then run on CPU 1), or, for a build that predates it, the whole JVM under taskset.
                local root; root="$(cd "$(dirname "$launcher")/.." && pwd)"
                if grep -q 'REACTOR_CPUS = "reactor_cpus"' \
                       "$root/target-daemon/src/main/java/io/nvmeof4j/target/config/DaemonSettings.java" 2>/dev/null; then
                    case "$settings" in
                        *reactor_cpus*) ;;
                        ""|"{}") settings='{"reactor_cpus": "0"}' ;;
                        *) settings="{\"reactor_cpus\": \"0\", ${settings#*\{}" ;;
                    esac
                else
                    daemon_pin=(taskset -c 0)
                fi
            fi
            [ -n "$settings" ] && extra=", \"nvmeof4j\": $settings"
            cat > "$cfg" <<EOF
{ "hosts": [],
  "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$port", "treq": "not specified"},
              "param": {"inline_data_size": "16384"}, "referrals": [], "subsystems": ["$SUBNQN_OURS"]} ],
  "subsystems": [ {"nqn": "$SUBNQN_OURS",
      "attr": {"allow_any_host": "1", "serial": "nvmeof4jbench0001", "model": "nvmeof4j", "version": "1.3"},
      "allowed_hosts": [],
      "namespaces": [ {"nsid": 1, "enable": 1, "device": $device} ] } ]$extra }
EOF
            echo "BENCH $label: $launcher, JVM options '$NVMEOF4J_JAVA_OPTS' (log: $res/$label-daemon.log)"
            "${daemon_pin[@]}" "$launcher" --config "$cfg" > "$res/$label-daemon.log" 2>&1 3<&- &
            daemon_pid=$!
            local t0; t0=$(date +%s)
            local deadline=$(( t0 + ${BENCH_STARTUP_TIMEOUT:-300} ))
            while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
                  && kill -0 "$daemon_pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
                sleep 0.5
            done
            if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                echo "BENCH $label: our daemon did not open 127.0.0.1:$port within ${BENCH_STARTUP_TIMEOUT:-300}s; log tail:"
                tail -n 20 "$res/$label-daemon.log"
                kill -TERM "$daemon_pid" 2>/dev/null; daemon_pid=""; rc=1; port=""
            else
                echo "BENCH $label: our daemon listening after $(( $(date +%s) - t0 ))s"
            fi
        fi
        if [ -n "$port" ]; then
            local dev
            if dev="$(connect_dev "$addr" "$port" "$SUBNQN_OURS")"; then
                echo "BENCH $label: our target on $dev ($addr:$port); JVM warm-up ${warmup}s"
                if [ -n "$daemon_pid" ]; then warm_ours "$label" "$dev" "$daemon_pid"; else warm "$dev" "$warmup"; fi
                traced_pid="$daemon_pid"
                run_jobs "$label" "$dev"
                traced_pid=""
            else
                echo "BENCH $label: cannot connect to our target at $addr:$port"; rc=1
            fi
            timeout 60 nvme disconnect -n "$SUBNQN_OURS" >/dev/null
        fi
        if [ -n "$daemon_pid" ]; then
            kill -TERM "$daemon_pid" 2>/dev/null
            for _ in $(seq 1 150); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.2; done
            if kill -0 "$daemon_pid" 2>/dev/null; then
                echo "BENCH $label: our daemon ignored SIGTERM for 30 s; killing it"; kill -KILL "$daemon_pid"
            fi
            wait "$daemon_pid" 2>/dev/null
            echo "BENCH $label: our daemon exit code $?"
        fi
    }
    # ---- 3. SPDK's nvmf_tgt (only with SPDK_DIR): the same file through an aio bdev, once per mode ----
    run_spdk() { # run_spdk LABEL MODE (poll | interrupt)
        local label="$1" sock="$tmpfs/spdk.sock" pid="" port=4422 dev intr=()
        [ "$2" = interrupt ] && intr=(--interrupt-mode)
        [ -f "$tmpfs/spdk.img" ] || fill "$tmpfs/spdk.img" "$size"
        # Its buffer and I/O pools live in hugepages (about 300 MiB with the defaults); released after the run.
        echo 384 > /proc/sys/vm/nr_hugepages
        mkdir -p /dev/hugepages
        grep -q ' /dev/hugepages ' /proc/mounts || mount -t hugetlbfs nodev /dev/hugepages
        rm -f "$sock"
        LD_LIBRARY_PATH="$SPDK_DIR/build/lib:$SPDK_DIR/dpdk/build/lib" "$SPDK_DIR/build/bin/nvmf_tgt" -m 0x1 -s 640 \
            -r "$sock" "${intr[@]}" > "$res/$label-spdk.log" 2>&1 3<&- &
        pid=$!
        for _ in $(seq 1 1200); do [ -S "$sock" ] || ! kill -0 "$pid" 2>/dev/null && break; sleep 0.1; done
        spdk_rpc() { timeout 60 python3 "$SPDK_DIR/scripts/rpc.py" -s "$sock" "$@" >> "$res/$label-spdk-rpc.log" 2>&1; }
        if [ -S "$sock" ] && spdk_rpc nvmf_create_transport -t TCP -c 16384 \
            && spdk_rpc bdev_aio_create "$tmpfs/spdk.img" aio0 4096 \
            && spdk_rpc nvmf_create_subsystem "$SUBNQN_SPDK" -a -s SPDK00000000000001 \
            && spdk_rpc nvmf_subsystem_add_ns "$SUBNQN_SPDK" aio0 \
            && spdk_rpc nvmf_subsystem_add_listener "$SUBNQN_SPDK" -t tcp -f ipv4 -a 127.0.0.1 -s "$port" \
            && dev="$(connect_dev 127.0.0.1 "$port" "$SUBNQN_SPDK")"; then
            echo "BENCH $label: SPDK's nvmf_tgt ($2) on $dev"
            warm "$dev" 2
            traced_pid="$pid"
            run_jobs "$label" "$dev"
            traced_pid=""
            timeout 60 nvme disconnect -n "$SUBNQN_SPDK" >/dev/null
        else
            echo "BENCH $label: SPDK's nvmf_tgt ($2) did not serve; log tail:"; tail -n 5 "$res/$label-spdk.log"
            tail -n 5 "$res/$label-spdk-rpc.log" 2>/dev/null; rc=1
        fi
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
        echo 0 > /proc/sys/vm/nr_hugepages
    }
    # BENCH_VARIANTS: ";"-separated NAME|LAUNCHER|JAVA_OPTS|SETTINGS (empty: the defaults); without it one
    # variant, "ours". Each variant's figures are labelled NAME, or NAME-rN with more than one round.
    local labels="" round name launcher opts settings label mode
    for round in $(seq 1 "${BENCH_ROUNDS:-1}"); do
        if [ "${BENCH_KERNEL_EACH_ROUND:-0}" = 1 ] && [ "${BENCH_ROUNDS:-1}" -gt 1 ]; then
            run_kernel "kernel-r$round"; labels="$labels kernel-r$round" # in the table: the kernel's own spread
        fi
        for mode in ${SPDK_DIR:+${BENCH_SPDK_MODES:-poll interrupt}}; do
            label="spdk-$mode"
            [ "${BENCH_ROUNDS:-1}" -gt 1 ] && label="$label-r$round"
            run_spdk "$label" "$mode"
            labels="$labels $label"
        done
        # fd 3, so that what run_ours starts (fio, nvme, the daemon) cannot read the list from stdin
        while IFS='|' read -r name launcher opts settings <&3; do
            label="$name"
            [ "${BENCH_ROUNDS:-1}" -gt 1 ] && label="$name-r$round"
            [ "$round" = "${BENCH_SYSCALLS_ROUND:-}" ] && label="$name-s$round" # traced: not in the medians
            run_ours "$label" "${launcher:-$LAUNCHER}" "${GUEST_JAVA_OPTS--XX:-TieredCompilation} $opts" \
                "${settings:-${BENCH_OURS_SETTINGS:-}}"
            labels="$labels $label"
        done 3< <(tr ';' '\n' <<< "${BENCH_VARIANTS:-ours||}" | if (( round % 2 )); then cat; else tac; fi)
    done
    rm -f "$tmpfs/ours.img" "$tmpfs/spdk.img"

    # ---- 4. the table ----
    python3 - "$res" "$runtime" "$ours_where" "$backend" "$size" "$(uname -r)" "$WORKLOADS" "${BENCH_OURS_SETTINGS:-}" "$competitor" "${labels# }" <<'PY' || rc=1
import json, os, re, statistics, sys
res, runtime, where, backend, size, kver, workloads, settings, competitor, labels = sys.argv[1:11]
labels = labels.split()
def host_state(label, name): # the host's machine-state.sh line before the job, and its copy bandwidths
    try:
        line = open(os.path.join(res, "bench-%s-%s.state" % (label, name))).readline().strip()
    except OSError:
        return None, "-"
    copy = dict(re.findall(r"\b(copy128k|copy64m)=([0-9.]+)", line))
    return line, "%s/%s" % (copy.get("copy128k", "?"), copy.get("copy64m", "?"))
def load(label, name):
    p = os.path.join(res, "bench-%s-%s.json" % (label, name))
    if not os.path.exists(p):
        return None
    r = json.load(open(p))["jobs"][0]["read"]
    # "lat" is submission to completion. fio's "clat" alone misleads here: on the guest's loopback the kernel host
    # often completes a QD1 read inside io_submit, so clat is ~5 us while slat carries the real time.
    def pct(kind, key):
        v = r.get(kind, {}).get("percentile", {}).get(key)
        return None if v is None else round(v / 1000.0, 1)
    mean = lambda kind: round(r.get(kind, {}).get("mean", 0) / 1000.0, 1)
    return {"iops": round(r["iops"], 1), "bw_kib_s": r["bw"],
            "p50_us": pct("lat_ns", "50.000000"), "p99_us": pct("lat_ns", "99.000000"), "mean_us": mean("lat_ns"),
            "clat_p50_us": pct("clat_ns", "50.000000"), "clat_p99_us": pct("clat_ns", "99.000000"),
            "slat_mean_us": mean("slat_ns"), "host_state": host_state(label, name)[0]}
rows, out = [], {"kernel": kver, "runtime_s": int(runtime), "namespace_size": size, "ours_location": where,
                 "ours_backend": backend, "ours_settings": json.loads(settings) if settings else None, "workloads": {}}
fmt = lambda v, f="%.0f": "-" if v is None else f % v
print("latency: submission to completion (fio lat), microseconds; ratio: IOPS over the kernel target's; host copy:")
print("the host's copy bandwidth (GB/s, 128 KiB / 64 MiB, benchmarks/machine-state.sh) just before the job")
print("%-18s %-16s %12s %8s %18s %14s" % ("workload", "target", "IOPS", "ratio", "p50/p99 us", "host copy"))
for w in workloads.split():
    name = w.split(":")[0]
    k = load("kernel", name)
    out["workloads"][name] = {"kernel": k}
    for label in ["kernel"] + labels:
        r = k if label == "kernel" else load(label, name)
        # --kernel-each-round: NAME-rN against kernel-rN, the kernel target measured in the same round
        m = re.search(r"-[rs]([0-9]+)$", label)
        kr = load("kernel-r" + m.group(1), name) if m else None
        kk = kr or k
        ratio = round(r["iops"] / kk["iops"], 3) if kk and r and kk["iops"] else None
        if label != "kernel":
            out["workloads"][name][label] = r
            out["workloads"][name]["ratio_%s_kernel" % label] = ratio
        print("%-18s %-16s %12s %8s %18s %14s" % (name, label, fmt(r and r["iops"]), fmt(ratio, "%.2f"),
              "%s/%s" % (fmt(r and r["p50_us"], "%.1f"), fmt(r and r["p99_us"], "%.1f")), host_state(label, name)[1]))
rounds = {}
for label in labels: # NAME-rN: the median ratio per variant over the rounds
    rounds.setdefault(re.sub(r"-r[0-9]+$", "", label), []).append(label)
if any(len(v) > 1 for v in rounds.values()):
    print("median ratio over the rounds (each round's ratio in brackets)")
    for w in workloads.split():
        name = w.split(":")[0]
        for variant, ls in rounds.items():
            rs = [out["workloads"][name].get("ratio_%s_kernel" % l) for l in ls]
            got = [r for r in rs if r is not None]
            med = round(statistics.median(got), 3) if got else None
            out["workloads"][name]["median_ratio_%s_kernel" % variant] = med
            print("%-18s %-16s %8s  (%s)" % (name, variant, fmt(med, "%.2f"), ", ".join(fmt(r, "%.2f") for r in rs)))
if competitor == "1":
    print("with a busy loop on CPU 0 (fio on CPU 1; ours on CPU 0): IOPS, and with/without ratio per target")
    print("%-18s %14s %8s %14s %8s %18s %18s" % ("workload", "kernel busy", "k ratio", "ours busy", "o ratio", "kernel p50/p99 us", "ours p50/p99 us"))
    out["competitor"] = {}
    for w in workloads.split():
        name = w.split(":")[0]
        k, o = load("kernel", name), load("ours", name)
        kb, ob = load("kernel-busy", name), load("ours-busy", name)
        kr = round(kb["iops"] / k["iops"], 3) if k and kb and k["iops"] else None
        orr = round(ob["iops"] / o["iops"], 3) if o and ob and o["iops"] else None
        out["competitor"][name] = {"kernel": kb, "ours": ob, "kernel_busy_over_idle": kr, "ours_busy_over_idle": orr}
        print("%-18s %14s %8s %14s %8s %18s %18s" % (name, fmt(kb and kb["iops"]), fmt(kr, "%.2f"), fmt(ob and ob["iops"]),
              fmt(orr, "%.2f"), "%s/%s" % (fmt(kb and kb["p50_us"], "%.1f"), fmt(kb and kb["p99_us"], "%.1f")),
              "%s/%s" % (fmt(ob and ob["p50_us"], "%.1f"), fmt(ob and ob["p99_us"], "%.1f"))))
json.dump(out, open(os.path.join(res, "bench-summary.json"), "w"), indent=2)
print("BENCH summary written to %s" % os.path.join(res, "bench-summary.json"))
PY
    return $rc
}

if [ "${NVMEOF4J_IN_GUEST:-0}" = 1 ] && [ "${BENCH_GUEST:-0}" = 1 ]; then
    guest_main
    exit $?
fi

# =================================================================================================================
# Host side
# =================================================================================================================
OURS=guest; RUNTIME=8; WARMUP=15; SIZE=256M; TIMEOUT=900; BACKEND="file"; PREBUILD=1; SETTINGS=""; COMPETITOR=0
KERNEL_EACH_ROUND=0; SELECTED=""; TRACE=0; SYSCALLS=0; SYSCALLS_ROUND=""; KARGS=""; FIO_CPUS=""; VARIANTS=""; ROUNDS=1; GJO="-XX:-TieredCompilation"
SPDK_MODES="poll interrupt"; PROBE=0; JIT_QUIET_MAX=180
RESULTS="$PROJECT/integration-tests/target/bench-results/$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
    case "$1" in
        --ours) OURS="$2"; shift 2 ;;
        --runtime) RUNTIME="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --ours-backend) BACKEND="$2"; shift 2 ;;
        --ours-settings) SETTINGS="$2"; shift 2 ;;
        --no-prebuild) PREBUILD=0; shift ;;
        --competitor) COMPETITOR=1; shift ;;
        --workloads) SELECTED="$2"; shift 2 ;;
        --trace) TRACE=1; shift ;;
        --syscalls) SYSCALLS=1; shift ;;
        --probe) PROBE=1; shift ;;
        --syscalls-round) SYSCALLS=1; SYSCALLS_ROUND="$2"; shift 2 ;;
        --guest-java-opts) GJO="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --kernel-each-round) KERNEL_EACH_ROUND=1; shift ;;
        --guest-kernel-args) KARGS="$2"; shift 2 ;;
        --fio-cpus) FIO_CPUS="$2"; shift 2 ;;
        --spdk-modes) SPDK_MODES="$2"; shift 2 ;;
        --jit-quiet-max) JIT_QUIET_MAX="$2"; shift 2 ;;
        --variant) # NAME[@LAUNCHER]=JAVA_OPTS[%SETTINGS_JSON]
            [[ "$2" =~ ^([A-Za-z0-9_.]+)(@([^=|;%]+))?=([^|;%]*)(%([^|;]*))?$ ]] \
                || { echo "bad --variant $2 (NAME[@LAUNCHER]=JAVA_OPTS[%SETTINGS_JSON])" >&2; exit 2; }
            VARIANTS="${VARIANTS:+$VARIANTS;}${BASH_REMATCH[1]}|${BASH_REMATCH[3]}|${BASH_REMATCH[4]}|${BASH_REMATCH[6]}"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "bench-target.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$OURS" in guest|host) ;; *) echo "--ours must be guest or host" >&2; exit 2 ;; esac
[[ "$JIT_QUIET_MAX" =~ ^[0-9]+$ ]] || { echo "--jit-quiet-max: seconds, not $JIT_QUIET_MAX" >&2; exit 2; }
[ -z "$FIO_CPUS" ] || [[ "$FIO_CPUS" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] \
    || { echo "--fio-cpus: a CPU list as taskset -c takes it (0, 0-1, 0,2), not $FIO_CPUS" >&2; exit 2; }
known_workloads=$WORKLOADS; [ "$COMPETITOR" = 1 ] && known_workloads=$COMPETITOR_WORKLOADS
for name in $SELECTED; do # refused here, not found missing from the table after the guest's boot
    case " $known_workloads " in
        *" $name:"*) ;;
        *) echo "--workloads: unknown $name; known$([ "$COMPETITOR" = 1 ] && echo ' with --competitor'):" \
               "$(for w in $known_workloads; do printf '%s ' "${w%%:*}"; done)" >&2; exit 2 ;;
    esac
done
# Our daemon's warm-up may wait up to that for C2 in every round and variant.
TIMEOUT=$(( TIMEOUT + ROUNDS * ($(tr -cd ';' <<< "$VARIANTS" | wc -c) + 1) * (JIT_QUIET_MAX + 30) ))
if [ -n "${SPDK_DIR:-}" ]; then
    SPDK_DIR="$(readlink -f "$SPDK_DIR")"
    for f in build/bin/nvmf_tgt scripts/rpc.py; do
        [ -e "$SPDK_DIR/$f" ] || { echo "SPDK_DIR=$SPDK_DIR has no $f" >&2; exit 1; }
    done
    for m in $SPDK_MODES; do
        case "$m" in poll|interrupt) ;; *) echo "--spdk-modes: $m is neither poll nor interrupt" >&2; exit 2 ;; esac
    done
    # Per round and mode: its start, the fill, a 2 s warm-up and the jobs; a bound, not the expected time.
    TIMEOUT=$(( TIMEOUT + ROUNDS * $(wc -w <<< "$SPDK_MODES") * (3 * (RUNTIME + 30) + 120) ))
fi
mkdir -p "$RESULTS"
RESULTS="$(readlink -f "$RESULTS")"
"$HERE/prepare.sh" --quiet >/dev/null || exit 1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # wait_port PORT SECONDS PID
    local deadline=$(( $(date +%s) + $2 ))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        kill -0 "$3" 2>/dev/null || return 1
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}
HOST_PID=""
HOST_DIR=""
STATE_PID=""
cleanup() {
    if [ -n "$STATE_PID" ]; then kill "$STATE_PID" 2>/dev/null; wait "$STATE_PID" 2>/dev/null; STATE_PID=""; fi
    if [ -n "$HOST_PID" ] && kill -0 "$HOST_PID" 2>/dev/null; then
        kill -TERM "$HOST_PID" 2>/dev/null
        for _ in $(seq 1 60); do kill -0 "$HOST_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$HOST_PID" 2>/dev/null
    fi
    [ -n "$HOST_DIR" ] && rm -rf "$HOST_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

write_config() { # write_config FILE PORT DEVICE_JSON
    local extra=""
    [ -n "$SETTINGS" ] && extra=", \"nvmeof4j\": $SETTINGS"
    cat > "$1" <<EOF
{ "hosts": [],
  "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$2", "treq": "not specified"},
              "param": {"inline_data_size": "16384"}, "referrals": [], "subsystems": ["$SUBNQN_OURS"]} ],
  "subsystems": [ {"nqn": "$SUBNQN_OURS",
      "attr": {"allow_any_host": "1", "serial": "nvmeof4jbench0001", "model": "nvmeof4j", "version": "1.3"},
      "allowed_hosts": [], "namespaces": [ {"nsid": 1, "enable": 1, "device": $3} ] } ]$extra }
EOF
}

[ -x "$LAUNCHER" ] || { echo "bench-target.sh: $LAUNCHER not found" >&2; exit 1; }
HOST_DIR="$(mktemp -d /dev/shm/nvmeof4j-bench.XXXXXX 2>/dev/null || mktemp -d)"
if [ "$PREBUILD" = 1 ] || [ "$OURS" = host ]; then
    # Start the daemon on the host: builds the project if needed (the guest sees the build output through 9p).
    PORT="$(free_port)"
    if [ "$OURS" = host ]; then
        if [ "$BACKEND" = ram ]; then DEVICE="{\"backend\": \"ram\", \"size\": \"$SIZE\", \"block_size\": 4096}"
        else
            { yes "nvmeof4j-bench-fill-0123456789abcdef" 2>/dev/null || true; } | head -c "$(numfmt --from=iec "$SIZE")" > "$HOST_DIR/ours.img"
            DEVICE="{\"path\": \"$HOST_DIR/ours.img\", \"size\": \"$SIZE\", \"block_size\": 4096}"
        fi
    else
        DEVICE="{\"backend\": \"ram\", \"size\": \"16M\", \"block_size\": 4096}"
    fi
    write_config "$HOST_DIR/config.json" "$PORT" "$DEVICE"
    echo "bench-target.sh: starting bin/nvmeof-target on the host (127.0.0.1:$PORT); log $RESULTS/host-daemon.log"
    "$LAUNCHER" --config "$HOST_DIR/config.json" > "$RESULTS/host-daemon.log" 2>&1 &
    HOST_PID=$!
    if ! wait_port "$PORT" 900 "$HOST_PID"; then
        echo "bench-target.sh: the daemon did not open port $PORT; log tail:" >&2
        tail -n 30 "$RESULTS/host-daemon.log" >&2
        exit 1
    fi
    if [ "$OURS" = guest ]; then cleanup; HOST_PID=""; fi
fi

ARGS=(--timeout "$TIMEOUT" --results "$RESULTS" ${KARGS:+--kernel-args "$KARGS"} --env BENCH_GUEST=1 --env BENCH_OURS="$OURS"
      --env BENCH_RUNTIME="$RUNTIME" --env BENCH_WARMUP="$WARMUP" --env BENCH_JIT_QUIET_MAX="$JIT_QUIET_MAX"
      --env BENCH_SIZE="$SIZE"
      --env BENCH_OURS_BACKEND="$BACKEND" --env BENCH_COMPETITOR="$COMPETITOR" --env BENCH_TRACE="$TRACE"
      --env BENCH_SYSCALLS="$SYSCALLS" --env BENCH_PROBE="$PROBE" --env BENCH_ROUNDS="$ROUNDS"
      --env GUEST_JAVA_OPTS="$GJO"
      --env BENCH_KERNEL_EACH_ROUND="$KERNEL_EACH_ROUND")
[ -n "$VARIANTS" ] && ARGS+=(--env BENCH_VARIANTS="$VARIANTS")
[ -n "$SELECTED" ] && ARGS+=(--env BENCH_WORKLOADS="$SELECTED")
[ -n "$FIO_CPUS" ] && ARGS+=(--env BENCH_FIO_CPUS="$FIO_CPUS")
[ -n "$SYSCALLS_ROUND" ] && ARGS+=(--env BENCH_SYSCALLS_ROUND="$SYSCALLS_ROUND")
[ -n "$SETTINGS" ] && ARGS+=(--env BENCH_OURS_SETTINGS="$SETTINGS")
# The host's machine state on the guest's request, before each job, until this script ends (stopped in cleanup).
"$PROJECT/benchmarks/machine-state.sh" --serve "$RESULTS/machine-state" $$ > "$RESULTS/machine-state.log" 2>&1 &
STATE_PID=$!
ARGS+=(--env NVMEOF4J_MACHINE_STATE_DIR="$RESULTS/machine-state")
[ -n "${NVMEOF4J_TARGET_LAUNCHER:-}" ] && ARGS+=(--env NVMEOF4J_TARGET_LAUNCHER="$LAUNCHER")
[ "$OURS" = host ] && ARGS+=(--env BENCH_OURS_PORT="$PORT")
[ -n "${SPDK_DIR:-}" ] && ARGS+=(--env SPDK_DIR="$SPDK_DIR" --env BENCH_SPDK_MODES="$SPDK_MODES")
"$HERE/run-guest.sh" "${ARGS[@]}" "$HERE/bench-target.sh"
RC=$?
echo "bench-target.sh: results in $RESULTS (exit $RC)"
exit $RC
