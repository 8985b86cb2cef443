#!/bin/bash
# Where a target's time goes during one measured run (issue 17, RDMA in the guest): started by
# benchmarks/run-spdk-comparison.sh --probe next to each load generator, with the target's PID. Waits out the
# warm-up, then for the measured seconds (less a second at each end) counts, per thread of the target, its system
# calls (raw_syscalls:sys_enter, and the ones a verbs data path makes: write = the rxe doorbell of ibv_post_send,
# ioctl, clock_gettime, futex, sched_yield, epoll/poll waits, read) with perf stat (in-kernel counters, the target
# is not slowed) and takes the CPU time of each thread and of the target's CPU (user, system, softirq) from /proc.
# Falls back to strace -c -f (which slows the target, so its IOPS are then not comparable) when perf cannot count
# tracepoints. Writes one JSON document to OUT; integration-tests/vm/bench-rdma.sh divides by the run's IOPS.
#
#   syscall-probe.sh PID LABEL WARMUP_S SECONDS OUT [CPU]     (CPU: the target's, default 0)
#   PROBE_KERNEL_FUNCTIONS="f1 f2 ..." in the environment: also how often the kernel ran each (see below)
set -uo pipefail
pid=$1 label=$2 warmup=$3 seconds=$4 out=$5 cpu=${6:-0}
window=$(( seconds - 2 ))
[ "$window" -ge 1 ] || window=1
sleep "$(( warmup + 1 ))"
kill -0 "$pid" 2>/dev/null || { echo "{\"label\": \"$label\", \"error\": \"target $pid gone\"}" > "$out"; exit 0; }
tmp=$(mktemp -d /tmp/syscall-probe.XXXXXX)
kinstance=""
trap 'kprobes 0 2>/dev/null; rm -rf "$tmp"' EXIT # the kprobes off even when the probe is stopped early
# off the target's CPU, so that what is counted there is the target's (and the kernel's work for it)
taskset -cp "$(( cpu == 0 ? 1 : 0 ))" $$ > /dev/null 2>&1

# tracefs for the syscall tracepoints (the guest's /init does not mount it)
if [ ! -e /sys/kernel/tracing/events/raw_syscalls ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

# DEST: per thread utime/stime (ticks), run/wait-on-runqueue time (schedstat, ns) and involuntary context switches;
# the CPU's line of /proc/stat and its column of /proc/softirqs. Builtins only: a fork per thread costs ~0.1 s
# under emulation, which would stretch the snapshot over seconds.
snapshot() {
    local t s rest run wait slices line key v nvcsw col=$(( cpu + 1 )) f
    {
        echo "N $EPOCHREALTIME"
        while read -r line; do
            case "$line" in "cpu$cpu "*) echo "C ${line#cpu$cpu }" ;; esac
        done < /proc/stat
        while read -r line; do
            f=($line)
            case "${f[0]}" in *:) echo "S ${f[0]%:} ${f[$col]}" ;; esac
        done < /proc/softirqs
        for t in /proc/"$pid"/task/*; do
            read -r s < "$t/stat" 2>/dev/null || continue
            rest=${s##*) }
            set -- $rest
            read -r run wait slices < "$t/schedstat" 2>/dev/null || { run=0; wait=0; }
            nvcsw=0
            while read -r key v; do
                [ "$key" = nonvoluntary_ctxt_switches: ] && nvcsw=$v
            done < "$t/status"
            read -r line < "$t/comm"
            echo "T ${t##*/} ${12} ${13} $run $wait $nvcsw ${line// /_}"
        done
    } > "$1"
}

events=raw_syscalls:sys_enter
for e in write ioctl clock_gettime futex sched_yield epoll_wait epoll_pwait poll ppoll read nanosleep clock_nanosleep; do
    [ -e "/sys/kernel/tracing/events/syscalls/sys_enter_$e" ] && events="$events,syscalls:sys_enter_$e"
done
# PROBE_KERNEL_FUNCTIONS="rxe_requester rxe_completer ...": each a kprobe, enabled for the window only in a tracing
# instance of its own whose buffer is off; the kernel's count of its hits (kprobe_profile) before and after the window
# says how often the kernel ran it, on any CPU: its work per I/O for the target, such as Soft-RoCE's. (perf stat on
# kprobe events counted about one hit in ten thousand in this guest.) A function with no probe point is left out
# and named in the document's "kernel_functions_missing".
tracing=/sys/kernel/tracing kinstance="" kmissing=""
if [ -n "${PROBE_KERNEL_FUNCTIONS:-}" ] && [ -w "$tracing/kprobe_events" ]; then
    kinstance="$tracing/instances/nvmeof4j-probe"
    mkdir -p "$kinstance" 2>/dev/null && echo 0 > "$kinstance/tracing_on" || kinstance=""
    for f in $PROBE_KERNEL_FUNCTIONS; do
        name="${f//[^A-Za-z0-9_]/_}"
        [ -e "$tracing/events/n4j/$name" ] || echo "p:n4j/$name $f" >> "$tracing/kprobe_events" 2>/dev/null
        [ -e "$tracing/events/n4j/$name" ] || kmissing="$kmissing $f"
    done
fi
kprobes() { # ON: 1 or 0, for every n4j kprobe in the probe's instance
    [ -n "$kinstance" ] && [ -e "$kinstance/events/n4j/enable" ] && echo "$1" > "$kinstance/events/n4j/enable"
}
tool=none
snapshot "$tmp/before"
start=$(date +%s.%N)
kernel=""
if [ -n "$kinstance" ]; then
    kprobes 1
    ( cp "$tracing/kprobe_profile" "$tmp/kernel.before"; sleep "$window"
      cp "$tracing/kprobe_profile" "$tmp/kernel.after" ) &
    kernel=$!
fi
percpu=""
if [ -e /sys/kernel/tracing/events/raw_syscalls ] && command -v perf >/dev/null; then
    # every system call made on the target's CPU, whichever thread (the per-thread count may miss a thread)
    timeout $(( window + 20 )) perf stat -x';' -a -C "$cpu" -e "$events" -o "$tmp/percpu" -- sleep "$window" \
        2> "$tmp/percpu.err" &
    percpu=$!
fi
if [ -e /sys/kernel/tracing/events/raw_syscalls ] && command -v perf >/dev/null \
    && timeout $(( window + 20 )) perf stat -x';' --per-thread -e "$events" -p "$pid" -o "$tmp/perf" -- sleep "$window" \
        2> "$tmp/perf.err" && [ -s "$tmp/perf" ]; then
    tool=perf
elif command -v strace >/dev/null; then
    timeout -s INT "$window" strace -f -c -q -p "$pid" -o "$tmp/strace" 2> "$tmp/strace.err"
    [ -s "$tmp/strace" ] && tool=strace
fi
[ -n "$percpu" ] && wait "$percpu"
[ -n "$kernel" ] && { wait "$kernel"; kprobes 0; }
end=$(date +%s.%N)
snapshot "$tmp/after"

python3 - "$label" "$tool" "$start" "$end" "$tmp" "$out" "$(getconf CLK_TCK)" "$pid" "$window" "$kmissing" <<'PY'
import json, os, sys
label, tool, start, end, tmp, out, hz, pid, window, kmissing = sys.argv[1:11]
hz = int(hz)
# seconds: the whole probe (perf's start and end take seconds under emulation); counted_seconds: what the system call
# counts cover (perf stat or strace for the window); the CPU times cover snapshot_seconds. "per_second" divides each by
# its own span, so a reader divides by the run's IOPS for figures per I/O.
doc = {"label": label, "tool": tool, "pid": int(pid), "seconds": round(float(end) - float(start), 3),
       "counted_seconds": int(window),
       "clocksource": open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()}
def snap(path):
    threads, cpu, soft, when = {}, None, {}, None
    for line in open(path):
        f = line.split()
        if f[0] == "T":
            threads[f[1]] = (int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]), f[7] if len(f) > 7 else "?")
        elif f[0] == "C":
            cpu = [int(x) for x in f[1:]]
        elif f[0] == "S" and len(f) > 2:
            soft[f[1]] = int(f[2])
        elif f[0] == "N":
            when = float(f[1])
    return threads, cpu, soft, when
(tb, cb, sb, wb), (ta, ca, sa, wa) = snap(os.path.join(tmp, "before")), snap(os.path.join(tmp, "after"))
doc["snapshot_seconds"] = round(wa - wb, 3)
threads = {}
for tid, (u, s, run, wait, nv, comm) in ta.items():
    u0, s0, run0, wait0, nv0, _ = tb.get(tid, (0, 0, 0, 0, 0, comm))
    threads[tid] = {"comm": comm, "user_s": (u - u0) / hz, "system_s": (s - s0) / hz,
                    "run_s": round((run - run0) / 1e9, 3), "runqueue_wait_s": round((wait - wait0) / 1e9, 3),
                    "involuntary_switches": nv - nv0, "syscalls": {}}
if cb and ca:
    d = [a - b for a, b in zip(ca, cb)]
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    doc["cpu"] = {n: d[i] / hz for i, n in enumerate(names) if i < len(d)}
doc["softirqs"] = {k: sa[k] - sb.get(k, 0) for k in sa if sa[k] - sb.get(k, 0) > 0}
totals = {}
if tool == "perf":
    for line in open(os.path.join(tmp, "perf")):
        f = line.strip().split(";")
        if len(f) < 4 or not f[1].strip().replace(".", "").isdigit():
            continue
        tid = f[0].rsplit("-", 1)[-1]
        event = f[3].split(":")[-1].replace("sys_enter_", "")
        event = "all" if event == "sys_enter" else event
        count = int(float(f[1]))
        # a thread born during the window has no snapshot
        threads.setdefault(tid, {"comm": f[0].rsplit("-", 1)[0], "user_s": 0, "system_s": 0, "run_s": 0,
                                 "runqueue_wait_s": 0, "involuntary_switches": 0, "syscalls": {}})
        threads[tid]["syscalls"][event] = threads[tid]["syscalls"].get(event, 0) + count
        totals[event] = totals.get(event, 0) + count
elif tool == "strace":
    for line in open(os.path.join(tmp, "strace")):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            calls = int(f[3])
            totals[f[-1]] = totals.get(f[-1], 0) + calls
            totals["all"] = totals.get("all", 0) + calls
else:
    for name in ("perf.err", "strace.err"):
        p = os.path.join(tmp, name)
        if os.path.exists(p):
            doc.setdefault("error", "")
            doc["error"] += open(p).read()[-500:]
doc["syscalls"] = totals
cpu_counts = {}
if os.path.exists(os.path.join(tmp, "percpu")):
    for line in open(os.path.join(tmp, "percpu")):
        f = line.strip().split(";")
        if len(f) >= 3 and f[0].strip().replace(".", "").isdigit():
            event = f[2].split(":")[-1].replace("sys_enter_", "")
            cpu_counts["all" if event == "sys_enter" else event] = int(float(f[0]))
doc["syscalls_on_cpu"] = cpu_counts
# kprobe hits over the window: kprobe_profile's lines are "EVENT HITS MISSES" (n4j's events, others' too)
kernel = {}
def profile(path):
    return {f[0]: int(f[1]) for f in (l.split() for l in open(path)) if len(f) == 3} if os.path.exists(path) else {}
before, after = profile(os.path.join(tmp, "kernel.before")), profile(os.path.join(tmp, "kernel.after"))
names = {f.replace(".", "_") for f in os.environ.get("PROBE_KERNEL_FUNCTIONS", "").split()}
for name, hits in after.items():
    if name in names:
        kernel[name] = hits - before.get(name, 0)
if kernel or kmissing.strip():
    doc["kernel_functions"] = kernel
    doc["kernel_functions_missing"] = kmissing.split()
span = doc["snapshot_seconds"] or 1
doc["per_second"] = {"syscalls": {k: c / int(window) for k, c in totals.items()},
                     "kernel_functions": {k: c / int(window) for k, c in kernel.items()},
                     "cpu": {k: v / span for k, v in doc.get("cpu", {}).items()},
                     "process": {"user": sum(t["user_s"] for t in threads.values()) / span,
                                 "system": sum(t["system_s"] for t in threads.values()) / span,
                                 "c2_run": sum(t["run_s"] for t in threads.values()
                                               if t["comm"].startswith("C2")) / span}}
# the busiest threads first (a reactor or an SPDK poller leads)
doc["threads"] = dict(sorted(((t, v) for t, v in threads.items() if v["run_s"] > 0 or v["syscalls"]),
                             key=lambda kv: -kv[1]["run_s"])[:8])
json.dump(doc, open(out, "w"), indent=1)
PY
