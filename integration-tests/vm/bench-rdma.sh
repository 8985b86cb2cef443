#!/bin/bash
# Benchmark (not a test) of NVMe-oF/RDMA over Soft-RoCE (rxe0) in one QEMU guest, 4 KiB random read, QD1 and QD16:
#   1. the kernel host's fio (libaio, direct, one job) against the Linux kernel target nvmet-rdma, then our
#      `bin/nvmeof perf -t rdma` against that same kernel target (the initiator comparison: perf / fio);
#   2. the kernel host's fio against our daemon (`bin/nvmeof-target`, RDMA port, same file on the guest's tmpfs)
#      (the target comparison: ours / kernel).
# Both targets serve a 256 MiB file filled with data on the guest's plain tmpfs (nvmet: buffered_io). Our daemon gets
# a warm-up of --warmup seconds of fio before its jobs; our perf runs --warmup + --runtime seconds and reports the
# mean of the per-second IOPS after the warm-up (latency percentiles over its whole run). Guest JVMs are C1-only
# (see integration-tests/vm/README.md). Prints a table and writes bench-rdma-summary.json into the results folder.
#
#   integration-tests/vm/bench-rdma.sh [--runtime 8] [--warmup 10] [--size 256M] [--results DIR]
#                                      [--ours-settings '{"idle_strategy": "busy"}'] [--ours-backend file|ram]
#                                      [--skip-kernel]   (only our target: for quick comparisons of our settings)
#                                      [--guest-java-opts OPTS]  (default -XX:-TieredCompilation, see below)
#                                      [--guest-kernel-args A]  (e.g. "clocksource=tsc tsc=reliable": run-guest.sh
#                                       --kernel-args; the guest's clock source, see the VM README "Clock source")
#   SPDK_DIR=/path/to/spdk integration-tests/vm/bench-rdma.sh [--spdk-only] [--spdk-time 5] [--spdk-warmup 20]
#                                      [--spdk-rounds 3] [--spdk-workloads "4k-randread-qd1 ..."]
#                                      [--spdk-target-java-opts OPTS]  (our daemon only, e.g. a JFR recording)
#                                      [--spdk-pairings "spdk+spdk ours+spdk ..."]  (default all four)
#                                      [--spdk-base-java-opts OPTS]  (a variant: pairing base+spdk runs this
#                                       checkout's daemon with these extra JVM options, in the same rounds)
#                                      [--spdk-base DIR]  (pairing base+spdk runs DIR's daemon, a built checkout:
#                                       before/after in the same rounds, one SPDK pairing per round for both)
#                                      [--probe]  (system calls and CPU time per I/O of each target, see below)
#                                      [--baseline DIR]  (before/after: DIR's daemon and perf against this one's)
#                                      [--probe-kernel "FUNCTIONS"]  (with --probe: kprobe hits per packet of these
#                                       kernel functions on every CPU; "rxe" = Soft-RoCE's task, packet, copy and
#                                       completion functions, RXE_FUNCTIONS below)
# With SPDK_DIR (an SPDK build configured --with-rdma, for a CPU the guest has: --target-arch=x86-64-v3 on an
# AVX-512 host, whose DPDK otherwise refuses to start in the guest), the same guest then runs
# benchmarks/run-spdk-comparison.sh --transport rdma on 10.0.2.15 (rxe0): SPDK's nvmf_tgt (malloc bdev) and our
# daemon (RAM namespace, one busy-polling reactor), each reactor on vCPU 0 (nvmf_tgt -m 0x1; ours "reactor_cpus": "0",
# its JIT and GC on vCPU 1), each driven by spdk_nvme_perf -c 0x2 and by our `perf -t rdma --cpus 1`, four workloads, alternating rounds, medians and ratios (spdk-comparison.txt in the
# results folder). SPDK gets hugepages reserved in the guest (2 x (--size + 256 MiB)). --spdk-only skips the parts
# above (kernel target, fio against ours).
# --probe runs guest/syscall-probe.sh beside every measured run: each target's system calls (perf stat on the
# syscall tracepoints: all, and write = Soft-RoCE's doorbell of one ibv_post_send, clock_gettime, futex, ioctl) and
# the target CPU's user/system/softirq time, divided by the run's I/Os in a table (spdk-summary.json).
# --probe-kernel counts how often the kernel ran each named function during the measured run, on any CPU (kprobes
# and the kernel's own hit counts; each hit costs a trap, so such runs read low in IOPS for both targets alike), per
# packet Soft-RoCE received: where two targets' kernel time per I/O differs while their system calls do not.
# --baseline DIR: another checkout of this project, built on the host (e.g. `git archive <commit> | tar -x -C DIR`,
# then `bin/nvmeof-target --version` there builds it): each round runs the SPDK comparison with DIR's daemon and perf
# ("before") and with this checkout's ("after"), alternating which goes first, so both are compared to SPDK's
# target within the same minutes of one guest run.
# Guest JVMs: C2 only (-XX:-TieredCompilation). With C1 only (what the guest tests use) our target reached half the
# kernel's IOPS at QD16 (CPU-bound under emulation); with tiered compilation the perf JVM died once with the SIGSEGV
# at offset 0x20 of a C1 method that integration-tests/vm/README.md describes (QEMU TCG and code patched when C2
# replaces C1 code). C2 only never has C1 code to patch.
# The SPDK part warms up 20 s before each measured run (--spdk-warmup): under emulation C2 keeps compiling our
# daemon for many seconds. With 3 s, a QD1 window (2026-11-26, --probe) had a C2 thread running 1.3 of 4.4 s and our
# target at 0.38-0.66x SPDK's; with reactor_cpus and 20 s, no compiler thread ran in the window and QD1 was 0.86-0.99x.
# Machine state: before every measured job the host measures its state (benchmarks/machine-state.sh: copy bandwidth,
# steal, load; the guest's speed follows the host's, which moves 1.3-3.5x for minutes at a time): "BENCH state ..."
# before each fio and perf job (kept as bench-rdma-LABEL-qdN.state), and in the SPDK part the comparison script's
# own state per run, its fast/slow classification and fast-round medians (spdk-summary.json: "machine_state").
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
# Soft-RoCE (rdma_rxe, Linux 6.1): its tasks (run now or deferred), packets out and in, memory-region copies,
# completions, doorbells and timeouts. Between two queue pairs of one device rxe hands packets over itself, without
# the network stack, so nothing of UDP or the NIC is counted here.
RXE_FUNCTIONS="rxe_run_task rxe_sched_task rxe_do_task rxe_requester rxe_completer rxe_responder rxe_xmit_packet rxe_rcv
 rxe_icrc_generate rxe_icrc_check rxe_mr_copy lookup_mr rxe_cq_post rxe_resp_queue_pkt rxe_comp_queue_pkt
 rxe_post_send retransmit_timer rnr_nak_timer"
KNQN="nqn.2014-08.io.nvmeof4j:bench-rdma-kernel"
ONQN="nqn.2014-08.io.nvmeof4j:bench-rdma"

guest_main() {
    . "$HERE/guest/lib.sh"
    . "$HERE/guest/nvmet.sh"
    local runtime="${BENCH_RUNTIME:-8}" warmup="${BENCH_WARMUP:-10}" size="${BENCH_SIZE:-256M}"
    local res="${RESULTS_DIR:-/tmp}" tmpfs="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}" rc=0
    local hostid; hostid="$(cat /proc/sys/kernel/random/uuid)"
    local hostnqn="nqn.2014-08.org.nvmexpress:uuid:$hostid"
    [ -n "${BENCH_PROBE_KERNEL:-}" ] && export PROBE_KERNEL_FUNCTIONS="$BENCH_PROBE_KERNEL"
    export NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} ${GUEST_JAVA_OPTS:--XX:TieredStopAtLevel=1} -XX:ErrorFile=$res/hs_err_pid%p.log"
    touch "$PROJECT/initiator-lib/target/lib" "$PROJECT/target-daemon/target/lib" 2>/dev/null
    echo "BENCH kernel $(uname -r), $(nproc) vCPUs, ${runtime}s per job, namespace $size (tmpfs file)"
    nvmet_rxe_up || { echo "BENCH no rxe0"; return 1; }
    modprobe nvme-rdma

    fill() { { yes "nvmeof4j-bench-fill-0123456789abcdef" 2>/dev/null || true; } | head -c "$(numfmt --from=iec "$2")" > "$1"; }
    connect_dev() { # ADDR PORT NQN -> block device
        timeout 90 nvme connect -t rdma -a "$1" -s "$2" -n "$3" --hostnqn="$hostnqn" --hostid="$hostid" \
            --nr-io-queues=2 >/dev/null || return 1
        wait_for 30 ns_blockdev "$3" 1 || return 1
        ns_blockdev "$3" 1
    }
    host_state() { # OUT: the host's state now (asked over the results share), kept as OUT.state and printed
        "$PROJECT/benchmarks/machine-state.sh" > "$1.state" 2>&1
        echo "BENCH state ${1##*/bench-rdma-}: $(head -n1 "$1.state")"
    }
    fio_job() { # LABEL DEV QD
        local out="$res/bench-rdma-$1-qd$3"
        host_state "$out"
        if timeout $((runtime + 120)) fio --name="$1-qd$3" --filename="$2" --ioengine=libaio --direct=1 --rw=randread \
                --bs=4k --iodepth="$3" --numjobs=1 --time_based --runtime="$runtime" --ramp_time=1 --norandommap \
                --randrepeat=0 --lat_percentiles=1 --output-format=json --output="$out.json" >/dev/null 2>"$out.err"; then
            echo "BENCH fio $1 QD$3: $(python3 -c 'import json,sys; print("%.0f IOPS" % json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$out.json")"
        else
            echo "BENCH fio $1 QD$3 failed: $(tail -n 3 "$out.err" | tr '\n' ' ')"; rm -f "$out.json"; rc=1
        fi
    }
    warm() { timeout $(($2 + 60)) fio --name=warm --filename="$1" --ioengine=libaio --direct=1 --rw=randread --bs=4k \
        --iodepth=16 --time_based --runtime="$2" --norandommap --output-format=terse >/dev/null 2>&1; }
    perf_job() { # LABEL PORT NQN QD
        local out="$res/bench-rdma-$1-qd$4"
        host_state "$out"
        if timeout --kill-after=10 $((runtime + warmup + 180)) "$PROJECT/bin/nvmeof" perf -t rdma -a 10.0.2.15 -s "$2" \
                -n "$3" --queue-depth "$4" --io-size 4096 --workload randread --time $((runtime + warmup)) --json \
                > "$out.perf" 2> "$out.err"; then
            python3 - "$out.perf" "$out.err" "$warmup" "$out.json" <<'PY' || rc=1
import json, re, sys
raw, err, warmup, dst = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
summary = [json.loads(l) for l in open(raw) if l.strip().startswith("{")][-1]
per_second = [(int(m.group(1)), int(m.group(2).replace(",", ""))) for m in
              (re.match(r"^\[\s*(\d+) s\]\s+([\d,]+) IOPS", l) for l in open(err)) if m]
steady = [v for t, v in per_second if t > warmup]
lat = summary.get("latency_us", {})
json.dump({"iops": round(sum(steady) / len(steady), 1) if steady else summary["iops"], "p50_us": lat.get("p50"),
           "p99_us": lat.get("p99"), "iops_whole_run": summary["iops"], "per_second_iops": [v for _, v in per_second],
           "perf": summary}, open(dst, "w"), indent=2)
PY
            echo "BENCH perf $1 QD$4: $(python3 -c 'import json,sys; print("%.0f IOPS (steady)" % json.load(open(sys.argv[1]))["iops"])' "$out.json")"
        else
            echo "BENCH perf $1 QD$4 failed: $(tail -n 3 "$out.err" | tr '\n' ' ')"; rc=1
        fi
    }

    if [ "${BENCH_SPDK_ONLY:-0}" = 1 ]; then
        spdk_part || rc=1
        return $rc
    fi

    # ---- 1. kernel target: fio, then our perf --------------------------------------------------------------------
    nvmet_clear
    if [ "${BENCH_SKIP_KERNEL:-0}" != 1 ]; then
    fill "$tmpfs/bench-kernel.img" "$size"
    if nvmet_subsystem "$KNQN" linux-nvmet kernelrdmabench1 && nvmet_file_ns "$KNQN" 1 "$tmpfs/bench-kernel.img" \
        && nvmet_port 1 rdma 10.0.2.15 4420 && nvmet_link 1 "$KNQN"; then
        local dev
        if dev="$(connect_dev 10.0.2.15 4420 "$KNQN")"; then
            warm "$dev" 2
            fio_job kernel-fio "$dev" 1
            fio_job kernel-fio "$dev" 16
        else
            echo "BENCH cannot connect to the kernel target"; rc=1
        fi
        timeout 60 nvme disconnect -n "$KNQN" >/dev/null
        perf_job kernel-perf 4420 "$KNQN" 1
        perf_job kernel-perf 4420 "$KNQN" 16
    else
        echo "BENCH kernel target setup failed"; rc=1
    fi
    nvmet_clear
    rm -f "$tmpfs/bench-kernel.img"
    fi

    # ---- 2. our target: fio --------------------------------------------------------------------------------------
    local device="{\"path\": \"$tmpfs/bench-ours.img\", \"size\": \"$size\", \"block_size\": 4096}"
    if [ "${BENCH_OURS_BACKEND:-file}" = ram ]; then
        device="{\"backend\": \"ram\", \"size\": \"$size\", \"block_size\": 4096}"
    else
        fill "$tmpfs/bench-ours.img" "$size"
    fi
    local extra=""
    [ -n "${BENCH_OURS_SETTINGS:-}" ] && extra=", \"nvmeof4j\": $BENCH_OURS_SETTINGS"
    cat > "$tmpfs/bench-ours.json" <<J
{ "hosts": [], "ports": [ {"portid": 1, "addr": {"trtype": "rdma", "adrfam": "ipv4", "traddr": "10.0.2.15", "trsvcid": "4421"},
   "param": {"inline_data_size": "4096"}, "subsystems": ["$ONQN"]} ],
  "subsystems": [ {"nqn": "$ONQN", "attr": {"allow_any_host": "1", "serial": "nvmeof4jrdmabnch", "model": "nvmeof4j"},
    "namespaces": [ {"nsid": 1, "enable": 1, "device": $device} ] } ]$extra }
J
    "$PROJECT/bin/nvmeof-target" --config "$tmpfs/bench-ours.json" > "$res/bench-rdma-ours-daemon.log" 2>&1 &
    local pid=$! deadline=$(( $(date +%s) + 240 ))
    while ! grep -q "target started" "$res/bench-rdma-ours-daemon.log" 2>/dev/null && kill -0 "$pid" 2>/dev/null \
        && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.5; done
    if grep -q "target started" "$res/bench-rdma-ours-daemon.log"; then
        local dev
        if dev="$(connect_dev 10.0.2.15 4421 "$ONQN")"; then
            warm "$dev" "$warmup"
            fio_job ours-fio "$dev" 1
            fio_job ours-fio "$dev" 16
        else
            echo "BENCH cannot connect to our target"; rc=1
        fi
        timeout 60 nvme disconnect -n "$ONQN" >/dev/null
    else
        echo "BENCH our daemon did not start: $(tail -n 5 "$res/bench-rdma-ours-daemon.log" | tr '\n' ' ')"; rc=1
    fi
    echo "BENCH rxe0 counters: $(rdma statistic show link rxe0/1 2>/dev/null | tr '\n' ' ')"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null

    [ -n "${SPDK_DIR:-}" ] && { spdk_part || rc=1; }

    python3 - "$res" "$runtime" "$(uname -r)" "${BENCH_OURS_SETTINGS:-}" <<'PY' || rc=1
import json, os, sys
res, runtime, kver, settings = sys.argv[1:5]
def load(name):
    p = os.path.join(res, "bench-rdma-%s.json" % name)
    if not os.path.exists(p):
        return None
    j = json.load(open(p))
    if "jobs" in j:
        r = j["jobs"][0]["read"]
        pc = r["lat_ns"]["percentile"]
        return {"iops": round(r["iops"], 1), "p50_us": round(pc["50.000000"] / 1e3, 1), "p99_us": round(pc["99.000000"] / 1e3, 1)}
    return {"iops": j["iops"], "p50_us": j.get("p50_us"), "p99_us": j.get("p99_us")}
out = {"kernel": kver, "runtime_s": int(runtime), "ours_settings": json.loads(settings) if settings else None, "rows": {}}
fmt = lambda v, f="%.0f": "-" if v is None else f % v
lat = lambda r: "-" if r is None else "%s / %s" % (fmt(r["p50_us"], "%.0f"), fmt(r["p99_us"], "%.0f"))
print("%-44s %10s %10s %7s %16s %16s" % ("comparison, 4 KiB randread", "base IOPS", "ours IOPS", "ratio", "base p50/p99 us", "ours p50/p99 us"))
for qd in (1, 16):
    for title, base, ours in (("target: fio vs kernel target / vs ours", "kernel-fio", "ours-fio"),
                              ("initiator: fio / our perf, kernel target", "kernel-fio", "kernel-perf")):
        b, o = load("%s-qd%d" % (base, qd)), load("%s-qd%d" % (ours, qd))
        ratio = round(o["iops"] / b["iops"], 3) if b and o and b["iops"] else None
        out["rows"]["%s qd%d" % (title, qd)] = {"base": b, "ours": o, "ratio": ratio}
        print("%-44s %10s %10s %7s %16s %16s" % ("%s QD%d" % (title, qd), fmt(b and b["iops"]), fmt(o and o["iops"]),
              fmt(ratio, "%.2f"), lat(b), lat(o)))
json.dump(out, open(os.path.join(res, "bench-rdma-summary.json"), "w"), indent=2)
print("BENCH summary written to %s" % os.path.join(res, "bench-rdma-summary.json"))
PY
    return $rc
}

# ---- 3. SPDK side by side over rxe0 (only with SPDK_DIR) -------------------------------------------------------------
# Each SPDK process (nvmf_tgt, spdk_nvme_perf) gets the namespace's size + 256 MiB of hugepages (the malloc bdev
# lives in them), as SPDK runs on real machines; the guest's 3 GiB leave the rest to the JVMs. Without hugepages
# the comparison script falls back to --no-huge.
# With --baseline DIR each round runs the comparison twice, once with DIR's daemon and perf ("before") and once with
# this checkout's ("after"), in alternating order, each with its own SPDK pairings: before/after ratios to SPDK from
# the same minutes of one guest. With --probe each target's system calls and CPU time are counted during every
# measured run (guest/syscall-probe.sh) and put per I/O in the summary.
spdk_part() {
    local res="${RESULTS_DIR:-/tmp}" size_mib mem prc=0 rounds="${BENCH_SPDK_ROUNDS:-3}" round variant order runs=()
    size_mib=$(( $(numfmt --from=iec "${BENCH_SIZE:-256M}") / 1048576 ))
    mem=$(( size_mib + 256 ))
    # 2 processes x mem MiB in 2 MiB pages, and 512 MiB more: nvmf_tgt's heap grows past its -s (seen: 770 MiB
    # taken with -s 512 and a 256 MiB malloc bdev over RDMA, leaving spdk_nvme_perf 254 MiB of its 512).
    echo $(( mem + 256 )) > /proc/sys/vm/nr_hugepages
    mkdir -p /dev/hugepages && { grep -q ' /dev/hugepages ' /proc/mounts || mount -t hugetlbfs nodev /dev/hugepages; }
    echo "BENCH SPDK $SPDK_DIR ($(git -C "$SPDK_DIR" rev-parse --short=10 HEAD 2>/dev/null || echo 'no git')," \
        "$(grep HugePages_Free /proc/meminfo | tr -s ' ')); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    compare() { # VARIANT ROOT ROUNDS WORK
        echo "BENCH SPDK comparison: $1 ($2)"
        timeout --kill-after=30 "${BENCH_SPDK_BUDGET:-3000}" "$PROJECT/benchmarks/run-spdk-comparison.sh" --transport rdma \
            --addr 10.0.2.15 --port 4420 --time "${BENCH_SPDK_TIME:-5}" --warmup "${BENCH_SPDK_WARMUP:-20}" \
            --rounds "$3" --size-mib "$size_mib" --spdk-mem-mib "$mem" --work "$4" --ours-root "$2" \
            ${BENCH_SPDK_WORKLOADS:+--workloads "$BENCH_SPDK_WORKLOADS"} ${BENCH_SPDK_PAIRINGS:+--pairings "$BENCH_SPDK_PAIRINGS"} \
            ${BENCH_PROBE:+--probe "$HERE/guest/syscall-probe.sh"} --target-java-opts "${BENCH_SPDK_TARGET_JAVA_OPTS:-}" \
            ${BENCH_SPDK_BASE_JAVA_OPTS:+--base-java-opts "$BENCH_SPDK_BASE_JAVA_OPTS"} \
            ${BENCH_SPDK_BASE:+--base-root "$BENCH_SPDK_BASE"} \
            2>&1 | tee "$4.txt"
        return "${PIPESTATUS[0]}"
    }
    if [ -z "${BENCH_BASELINE:-}" ]; then
        compare after "$PROJECT" "$rounds" "$res/spdk-comparison" || prc=1
        runs=("after:0:$res/spdk-comparison")
    else
        touch "$BENCH_BASELINE/initiator-lib/target/lib" "$BENCH_BASELINE/target-daemon/target/lib" 2>/dev/null
        for round in $(seq 1 "$rounds"); do
            order="before after"; [ $((round % 2)) = 0 ] && order="after before"
            for variant in $order; do
                local root="$PROJECT"; [ "$variant" = before ] && root="$BENCH_BASELINE"
                compare "$variant, round $round" "$root" 1 "$res/spdk-comparison-$variant-$round" || prc=1
                runs+=("$variant:$round:$res/spdk-comparison-$variant-$round")
            done
        done
    fi
    echo "BENCH after the SPDK part: $(grep HugePages_Free /proc/meminfo | tr -s ' '); rxe0 counters: $(rdma statistic show link rxe0/1 2>/dev/null | tr '\n' ' ')"
    python3 - "$res/spdk-summary.json" "${runs[@]}" <<'PY' || prc=1
import json, os, re, sys
dst, runs = sys.argv[1], sys.argv[2:]
rows = []
for run in runs:
    variant, rnd, work = run.split(":", 2)
    iops = {}
    for line in open(work + ".txt"):
        m = re.match(r"^round (\d+) (\S+)\s+(\S+)\s+IOPS\s+([\d.]+)\s+p50\s+([\d.]+)\s+p99\s+([\d.]+)", line)
        if m:
            iops[(int(m.group(1)), m.group(2), m.group(3))] = (float(m.group(4)), float(m.group(5)),
                                                               float(m.group(6)))
    # rnd 0: the rounds of one comparison run; else the run was that one round of a before/after series
    for (file_round, pairing, workload), (v, p50, p99) in sorted(iops.items()):
        row = {"variant": variant, "round": int(rnd) or file_round, "pairing": pairing, "workload": workload,
               "iops": v, "p50_us": p50, "p99_us": p99}
        state = os.path.join(work, "%s-%s-round%d.state" % (pairing, workload, file_round))
        if os.path.exists(state):
            row["machine_state"] = open(state).readline().strip()
        probe = os.path.join(work, "%s-%s-round%d.probe" % (pairing, workload, file_round))
        if os.path.exists(probe):
            p = json.load(open(probe))
            rates = p.get("per_second", {}) # each count over the seconds it covers (syscall-probe.sh)
            row["probe"] = p
            if v > 0 and rates.get("syscalls"):
                row["per_io"] = {k: round(r / v, 3) for k, r in rates["syscalls"].items()}
            if v > 0 and rates.get("cpu"):
                row["cpu_us_per_io"] = {k: round(r * 1e6 / v, 1) for k, r in rates["cpu"].items()
                                        if k in ("user", "system", "softirq", "idle")}
        rows.append(row)
json.dump(rows, open(dst, "w"), indent=1)
print("\nper I/O on the target (syscall-probe: system calls, and CPU 0's time in us) and ratios to SPDK's target")
print("%-7s %-2s %-18s %-10s %9s %6s %7s %7s %7s %7s %7s %9s %9s %9s" % ("variant", "r", "workload", "pairing",
      "IOPS", "ratio", "sysc", "write", "clock", "futex", "ioctl", "user us", "sys us", "softirq"))
for row in rows:
    ref = [r for r in rows if r["variant"] == row["variant"] and r["round"] == row["round"]
           and r["workload"] == row["workload"] and r["pairing"] == "spdk+spdk"]
    ratio = row["iops"] / ref[0]["iops"] if ref and ref[0]["iops"] and row["pairing"] == "ours+spdk" else None
    pio, cpu = row.get("per_io", {}), row.get("cpu_us_per_io", {})
    f = lambda d, k, fmt="%.2f": fmt % d[k] if k in d else "-"
    print("%-7s %-2d %-18s %-10s %9.0f %6s %7s %7s %7s %7s %7s %9s %9s %9s" % (row["variant"], row["round"],
          row["workload"], row["pairing"], row["iops"], "%.2f" % ratio if ratio else "", f(pio, "all"),
          f(pio, "write"), f(pio, "clock_gettime"), f(pio, "futex"), f(pio, "ioctl"), f(cpu, "user", "%.0f"),
          f(cpu, "system", "%.0f"), f(cpu, "softirq", "%.0f")))
# kprobe hits (--probe-kernel): one column per run, one line per function, per workload. The kprobes count only
# during the probe's window and slow it, so its I/Os are not the run's: the hits are given per packet Soft-RoCE
# received (rxe_rcv, when counted: per I/O a 4 KiB read is 9 packets for any target), else per I/O of the whole run.
for workload in sorted({r["workload"] for r in rows}):
    runs = [r for r in rows if r["workload"] == workload and "kernel_functions" in r.get("probe", {})]
    if not runs:
        continue
    names = sorted({k for r in runs for k in r["probe"]["kernel_functions"]})
    per_packet = "rxe_rcv" in names
    print("\nkernel functions %s, %s (every CPU; runs: %s)" % ("per packet received (rxe_rcv)" if per_packet
          else "per I/O", workload, ", ".join("%s %s r%d" % (r["variant"], r["pairing"], r["round"]) for r in runs)))
    for name in names:
        cells = []
        for r in runs:
            hits = r["probe"]["kernel_functions"]
            base = hits.get("rxe_rcv") if per_packet else r["iops"] * r["probe"].get("counted_seconds", 0)
            cells.append("%9.3f" % (hits.get(name, 0) / base) if base else "%9s" % "-")
        print("%-22s %s" % (name, " ".join(cells)))
print("BENCH SPDK summary written to %s" % dst)
PY
    return "$prc"
}

if [ "${NVMEOF4J_IN_GUEST:-0}" = 1 ] && [ "${BENCH_GUEST:-0}" = 1 ]; then
    guest_main
    exit $?
fi

RUNTIME=8; WARMUP=10; SIZE=256M; SETTINGS=""; BACKEND=file
RESULTS="$PROJECT/integration-tests/target/bench-results/rdma-$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) RUNTIME="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --ours-settings) SETTINGS="$2"; shift 2 ;;
        --ours-backend) BACKEND="$2"; shift 2 ;;
        --guest-java-opts) GJO="$2"; shift 2 ;;
        --guest-kernel-args) KARGS="$2"; shift 2 ;;
        --skip-kernel) SKIP_KERNEL=1; shift ;;
        --spdk-only) SPDK_ONLY=1; shift ;;
        --spdk-time) SPDK_TIME="$2"; shift 2 ;;
        --spdk-warmup) SPDK_WARMUP="$2"; shift 2 ;;
        --spdk-rounds) SPDK_ROUNDS="$2"; shift 2 ;;
        --spdk-workloads) SPDK_WORKLOADS="$2"; shift 2 ;;
        --spdk-target-java-opts) SPDK_TJO="$2"; shift 2 ;;
        --spdk-pairings) SPDK_PAIRINGS="$2"; shift 2 ;;
        --spdk-base-java-opts) SPDK_BJO="$2"; shift 2 ;;
        --spdk-base) SPDK_BASE="$(readlink -f "$2")"; shift 2 ;;
        --probe) PROBE=1; shift ;;
        --probe-kernel) PROBE=1; PROBE_KERNEL="$2"; [ "$2" = rxe ] && PROBE_KERNEL="$RXE_FUNCTIONS"
            # kernel symbols only: each becomes a line of the guest's kprobe_events
            [[ "$PROBE_KERNEL" =~ ^[[:space:]]*[A-Za-z_][A-Za-z0-9_.]*([[:space:]]+[A-Za-z_][A-Za-z0-9_.]*)*[[:space:]]*$ ]] \
                || { echo "--probe-kernel: rxe or kernel function names, not $2" >&2; exit 2; }
            PROBE_KERNEL="$(tr -s '[:space:]' ' ' <<< "$PROBE_KERNEL")"; shift 2 ;;
        --baseline) BASELINE="$(readlink -f "$2")"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "bench-rdma.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$RESULTS"
RESULTS="$(readlink -f "$RESULTS")"
TIMEOUT=900 SPDK_ENV=()
if [ -n "${SPDK_DIR:-}" ]; then
    SPDK_DIR="$(readlink -f "$SPDK_DIR")"
    for f in build/bin/nvmf_tgt build/bin/spdk_nvme_perf scripts/rpc.py; do
        [ -e "$SPDK_DIR/$f" ] || { echo "SPDK_DIR=$SPDK_DIR has no $f" >&2; exit 1; }
    done
    # Checked here, where the reason can be said: in the guest these fail only as "no RDMA transport" or SIGILL.
    if [ -f "$SPDK_DIR/mk/config.mk" ]; then
        grep -q '^CONFIG_RDMA?=y' "$SPDK_DIR/mk/config.mk" \
            || { echo "SPDK_DIR=$SPDK_DIR is configured without RDMA (./configure --with-rdma)" >&2; exit 1; }
        if grep -q '^CONFIG_ARCH?=native' "$SPDK_DIR/mk/config.mk" && grep -qw avx512f /proc/cpuinfo; then
            echo "SPDK_DIR=$SPDK_DIR is built for this host's CPU (-march=native, AVX-512), which the TCG guest lacks;" \
                "configure it with --target-arch=x86-64-v3" >&2
            exit 1
        fi
    fi
    rounds=${SPDK_ROUNDS:-3} per_run=$(( ${SPDK_TIME:-5} + ${SPDK_WARMUP:-20} + 30 ))
    # 4 pairings x (workloads + the fill) runs per round, plus target starts; a bound, not the expected time.
    budget=$(( rounds * 4 * (5 * per_run + 120) ))
    [ -n "${SPDK_ONLY:-}" ] && TIMEOUT=120
    TIMEOUT=$(( TIMEOUT + budget + 120 ))
    [ -n "${BASELINE:-}" ] && TIMEOUT=$(( TIMEOUT + budget ))
    SPDK_ENV=(--env SPDK_DIR="$SPDK_DIR" --env BENCH_SPDK_ONLY="${SPDK_ONLY:-0}" --env BENCH_SPDK_TIME="${SPDK_TIME:-5}"
        --env BENCH_SPDK_WARMUP="${SPDK_WARMUP:-20}" --env BENCH_SPDK_ROUNDS="$rounds" --env BENCH_SPDK_BUDGET="$budget"
        --env BENCH_SPDK_WORKLOADS="${SPDK_WORKLOADS:-}" --env BENCH_SPDK_TARGET_JAVA_OPTS="${SPDK_TJO:-}"
        --env BENCH_SPDK_PAIRINGS="${SPDK_PAIRINGS:-}" --env BENCH_SPDK_BASE_JAVA_OPTS="${SPDK_BJO:-}" --env BENCH_SPDK_BASE="${SPDK_BASE:-}"
        --env BENCH_PROBE="${PROBE:-}" --env BENCH_PROBE_KERNEL="${PROBE_KERNEL:-}"
        --env BENCH_BASELINE="${BASELINE:-}")
fi
[ -z "${PROBE:-}" ] || [ -n "${SPDK_DIR:-}" ] \
    || { echo "--probe and --probe-kernel measure the SPDK part: set SPDK_DIR" >&2; exit 1; }
"$HERE/prepare.sh" --quiet >/dev/null || exit 1
# Build on the host if stale (the launchers do it); never inside the guest.
"$PROJECT/bin/nvmeof" help perf > "$RESULTS/cli-help.txt" 2>&1 || { echo "bin/nvmeof failed" >&2; exit 1; }
"$PROJECT/bin/nvmeof-target" --version > "$RESULTS/target-version.txt" 2>&1 || { echo "bin/nvmeof-target failed" >&2; exit 1; }
if [ -n "${SPDK_BASE:-}" ]; then
    "$SPDK_BASE/bin/nvmeof-target" --version > "$RESULTS/spdk-base-version.txt" 2>&1 \
        || { echo "--spdk-base $SPDK_BASE: its bin/nvmeof-target failed" >&2; exit 1; }
fi
if [ -n "${BASELINE:-}" ]; then
    [ -n "${SPDK_DIR:-}" ] || { echo "--baseline compares within the SPDK part: set SPDK_DIR" >&2; exit 1; }
    "$BASELINE/bin/nvmeof" help perf > /dev/null 2>&1 && "$BASELINE/bin/nvmeof-target" --version \
        > "$RESULTS/baseline-version.txt" 2>&1 || { echo "--baseline $BASELINE: its bin/nvmeof-target failed" >&2; exit 1; }
fi
# The host's machine state on the guest's request; ends by itself when this process (run-guest.sh after the exec) does.
"$PROJECT/benchmarks/machine-state.sh" --serve "$RESULTS/machine-state" $$ > "$RESULTS/machine-state.log" 2>&1 &
exec "$HERE/run-guest.sh" --timeout "$TIMEOUT" --results "$RESULTS" ${KARGS:+--kernel-args "$KARGS"} "${SPDK_ENV[@]}" \
    --env BENCH_GUEST=1 --env NVMEOF4J_MACHINE_STATE_DIR="$RESULTS/machine-state" --env BENCH_RUNTIME="$RUNTIME" \
    --env BENCH_WARMUP="$WARMUP" --env BENCH_SIZE="$SIZE" --env BENCH_OURS_SETTINGS="$SETTINGS" \
    --env BENCH_OURS_BACKEND="$BACKEND" --env BENCH_SKIP_KERNEL="${SKIP_KERNEL:-0}" \
    --env GUEST_JAVA_OPTS="${GJO:--XX:-TieredCompilation}" "$HERE/bench-rdma.sh"
