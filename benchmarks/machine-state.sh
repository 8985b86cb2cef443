#!/usr/bin/env bash
# The machine's state before a benchmark round, in about a second: one line of facts, so that a ratio taken between
# a fast and a slow moment can be told from one taken within one state. On this machine type (a VM, 2 vCPUs) memory
# copies run 1.3-3.5x slower for minutes at a time: SPDK's nvmf_tgt and our daemon alike then fall from ~457 k to
# ~250 k IOPS at 4 KiB QD32 (the kernel's _copy_from_iter costs 3.5x per I/O in those minutes). Printed:
#   copy128k=GB/s   python3 copying a 128 KiB bytearray into another (a block in the caches: an NVMe/TCP payload)
#   copy64m=GB/s    the same with 64 MiB (past the caches, 32 MiB of L3 here: the memory side)
#                   each the median over batches (~3 ms, ~12 ms) within ~0.3 s, so a short preemption does not count
#                   but a CPU shared for the whole probe does. Seen on this 2-vCPU VM: copy128k 51.4-51.5 whatever
#                   ran beside it; copy64m 11.4-14.6 idle, 7.6-11.1 beside a busy loop on the other vCPU, 4.9-7.5
#                   beside a memory copy there, 6.0-7.2 sharing its vCPU with a busy loop
#   steal=% iowait=% over=S   the CPUs' steal (the hypervisor running something else on them) and iowait share of
#                   all CPU time since the previous probe with the same --state file (the first: since boot)
#   runnable=N      the mean number of runnable tasks during the probe (procs_running, the probe itself included: 1
#                   on an idle machine, 2 beside a busy-polling target; more: something else wants the CPUs, e.g.
#                   another worker's build or QEMU guest, which the copy figures alone can hide)
#   load=1,5,15     the load average          mhz=N   the CPU clock /proc/cpuinfo reports (absent if it has none)
#
#   benchmarks/machine-state.sh [--state FILE]   probe here (or, with NVMEOF4J_MACHINE_STATE_DIR set, ask the host)
#   benchmarks/machine-state.sh --serve DIR PID  answer requests in DIR until PID ends (the host, for a QEMU guest)
#   benchmarks/machine-state.sh --ask DIR LABEL  ask the host serving DIR for a probe (in the guest), up to 30 s
#   benchmarks/machine-state.sh --others DELAY SECONDS   during a measured run (started beside it): after DELAY
#                   seconds, the CPU time over SECONDS of every process but the two busiest (the target and the load
#                   generator, each polling a CPU), as a share of all CPUs' time, and the three that took most:
#                   "others=2.3% (process_api 180ms, kdamond.0 21ms, kworker/0:1 1ms)". On this VM ordinary runs
#                   show 0.4-1.2% (the environment's agent process_api, the kernel's kdamond.0 and rcu_preempt), but
#                   the agent at times takes a CPU for 90 ms at a stretch (seen in the scheduler's sched_switch
#                   events on the target's CPU), which no probe before the run sees. Per process user + system
#                   ticks (1/100 s), one /proc read per process at each end
#   benchmarks/machine-state.sh --classify [THRESHOLD]   reads "KEY<TAB>PROBE-LINE" lines, prints "KEY<TAB>STATE<TAB>
#                   NOTE" for each, STATE one of
#                     slow     copy128k or copy64m below THRESHOLD (default 0.8) x the best of that figure over all
#                              the lines (the run's fastest probe)
#                     busy     else, runnable at least 1 above the lowest runnable of the lines: on average one more
#                              task wanted a CPU than in the run's least contended probe (another worker's build or
#                              guest: seen here with a target at half its IOPS while the copy figures were fine);
#                              or others (a line's --others figure, appended to it) at least 1.5% of the CPUs' time
#                     fast     neither;  unknown: a line without the figures
#                   Feed it probes taken alike (e.g. each with the target running): copy64m is ~20% lower beside a
#                   busy-polling target than on an idle machine.
#
# In the QEMU guest (software emulation) a probe of the guest would measure the emulator; the guest's speed follows
# the host's, so integration-tests/vm/bench-*.sh run --serve on the host over the results share (writable from the
# guest) and export NVMEOF4J_MACHINE_STATE_DIR to the guest: there a plain probe asks the host, whose line is
# printed with "host " in front. Needs python3 and /proc only; no root.

set -uo pipefail

probe() { # STATE_FILE (may be empty)
    timeout 20 python3 - "${1:-}" <<'PY'
import os, statistics, sys, time

running = []  # procs_running of /proc/stat after each batch: runnable tasks, this probe included

def copy_rate(size, per_batch, budget):
    src, dst = bytearray(os.urandom(4096) * (size // 4096)), bytearray(size)
    s, d = memoryview(src), memoryview(dst)
    d[:] = s  # first touch of the pages, not timed
    rates, end = [], time.perf_counter() + budget
    while time.perf_counter() < end or len(rates) < 3:
        t0 = time.perf_counter()
        for _ in range(per_batch):
            d[:] = s
        rates.append(size * per_batch / (time.perf_counter() - t0) / 1e9)
        with open("/proc/stat") as f:
            running.extend(int(l.split()[1]) for l in f if l.startswith("procs_running"))
    return statistics.median(rates)

def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice)
    return sum(v[:8]), v[4], v[7]

state = sys.argv[1]
c128 = copy_rate(128 << 10, 200, 0.3)
c64m = copy_rate(64 << 20, 2, 0.3)
now, (total, iowait, steal) = time.time(), cpu_times()
before = None
if state:
    try:
        with open(state) as f:
            before = [float(x) for x in f.read().split()]
    except (OSError, ValueError):
        pass
    with open(state + ".tmp", "w") as f:
        f.write("%f %d %d %d\n" % (now, total, iowait, steal))
    os.replace(state + ".tmp", state)
if before and len(before) == 4 and total > before[1]:
    span, dt = now - before[0], total - before[1]
    share = "steal=%.1f%% iowait=%.1f%% over=%.0fs" % (100.0 * (steal - before[3]) / dt,
                                                        100.0 * (iowait - before[2]) / dt, span)
else:
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    share = "steal=%.1f%% iowait=%.1f%% over=%.0fs" % (100.0 * steal / total, 100.0 * iowait / total, up)
with open("/proc/loadavg") as f:
    load = ",".join(f.read().split()[:3])
mhz = []
try:
    with open("/proc/cpuinfo") as f:
        mhz = [float(l.split(":")[1]) for l in f if l.startswith("cpu MHz")]
except OSError:
    pass
print("copy128k=%.2fGB/s copy64m=%.2fGB/s %s runnable=%.1f load=%s%s" % (c128, c64m, share,
      statistics.mean(running), load,
      " mhz=%.0f" % statistics.mean(mhz) if mhz else ""))
PY
    local rc=$?
    [ "$rc" = 0 ] || echo "no probe (python3 exit $rc)"
}

ask() { # DIR LABEL: the host answers within ~2 s; an unanswered request is removed so the host skips it
    local dir=$1 name=${2//[^A-Za-z0-9_.-]/_}
    rm -f "$dir/$name.line"
    : > "$dir/$name.req" || { echo "no probe (cannot write $dir)"; return 0; }
    for _ in $(seq 1 150); do
        if [ -s "$dir/$name.line" ]; then
            printf 'host %s\n' "$(cat "$dir/$name.line")"
            rm -f "$dir/$name.line"
            return 0
        fi
        sleep 0.2
    done
    rm -f "$dir/$name.req"
    echo "no probe (the host did not answer in 30 s)"
}

serve() { # DIR PID: polls DIR five times a second; each NAME.req becomes NAME.line (written whole, then renamed)
    local dir=$1 pid=$2 req name
    mkdir -p "$dir"
    while kill -0 "$pid" 2>/dev/null; do
        for req in "$dir"/*.req; do
            [ -e "$req" ] || continue
            name=${req%.req}
            probe "$dir/.state" > "$name.tmp"
            mv -f "$name.tmp" "$name.line"
            rm -f "$req"
        done
        sleep 0.2
    done
}

others() { # DELAY SECONDS
    timeout $(( ${1%.*} + ${2%.*} + 20 )) python3 - "$1" "$2" <<'PY'
import os, sys, time

def cpu_times():  # process id -> (name, user + system ticks of all its threads); one read per process, cheap
    per = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    stat = f.read()
            except OSError:
                continue
            name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            per[pid] = (name, int(fields[11]) + int(fields[12]))
    return per

time.sleep(float(sys.argv[1]))
before, start = cpu_times(), time.monotonic()
time.sleep(float(sys.argv[2]))
after, span = cpu_times(), time.monotonic() - start
tick, me = os.sysconf("SC_CLK_TCK"), str(os.getpid())
ran = sorted(((t - before[p][1]) / tick, name, p) for p, (name, t) in after.items() if p in before and p != me)[::-1]
others = ran[2:]  # the two busiest are the target and the load generator
share = 100.0 * sum(s for s, _, _ in others) / (span * os.cpu_count())
print("others=%.1f%% (%s)" % (share, ", ".join("%s %.0fms" % (name, s * 1000) for s, name, _ in others[:3])))
PY
}

classify() { # THRESHOLD
    python3 -c '
import re, sys
threshold, rows, best = float(sys.argv[1]), [], {}
for line in sys.stdin:
    key, _, probe = line.rstrip("\n").partition("\t")
    figures = {k: float(v) for k, v in re.findall(r"\b(copy128k|copy64m|runnable|others)=([0-9.]+)", probe)}
    rows.append((key, figures))
    for k, v in figures.items():
        best[k] = min(best.get(k, v), v) if k in ("runnable", "others") else max(best.get(k, 0.0), v)
for key, f in rows:
    if not all(k in f for k in ("copy128k", "copy64m", "runnable")):
        print("%s\tunknown\tno probe" % key)
        continue
    copy = min(f["copy128k"] / best["copy128k"], f["copy64m"] / best["copy64m"])
    busy = f["runnable"] >= best["runnable"] + 1 or f.get("others", 0.0) >= 1.5
    state = "slow" if copy < threshold else "busy" if busy else "fast"
    print("%s\t%s\tcopy %.2f of the best, runnable %.1f (least %.1f)%s" % (key, state, copy, f["runnable"],
          best["runnable"], ", others %.1f%%" % f["others"] if "others" in f else ""))
' "$1"
}

case "${1:-}" in
    --classify) classify "${2:-0.8}" ;;
    --others) [ $# = 3 ] || { echo "usage: machine-state.sh --others DELAY SECONDS" >&2; exit 2; }; others "$2" "$3" ;;
    --serve) [ $# = 3 ] || { echo "usage: machine-state.sh --serve DIR PID" >&2; exit 2; }; serve "$2" "$3" ;;
    --ask) [ $# = 3 ] || { echo "usage: machine-state.sh --ask DIR LABEL" >&2; exit 2; }; ask "$2" "$3" ;;
    --state|"")
        state=""
        if [ "${1:-}" = --state ]; then
            [ $# = 2 ] || { echo "usage: machine-state.sh [--state FILE]" >&2; exit 2; }
            state=$2
        fi
        if [ -n "${NVMEOF4J_MACHINE_STATE_DIR:-}" ]; then
            ask "$NVMEOF4J_MACHINE_STATE_DIR" "probe-$$-$(date +%s%N)"
        else
            probe "$state"
        fi ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
    *) echo "machine-state.sh: unknown argument $1" >&2; exit 2 ;;
esac
