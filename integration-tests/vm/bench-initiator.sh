#!/usr/bin/env bash
# Benchmark (not a test) of our initiator, `bin/nvmeof perf`, 4 KiB random read:
#   guest part (one QEMU guest run): against the Linux kernel target (nvmet-tcp on 127.0.0.1:4420 inside the guest,
#     a 256 MiB file on the guest's plain tmpfs, buffered_io), first fio through the guest's kernel NVMe/TCP host
#     (libaio, direct) at QD1 and QD16, then our `bin/nvmeof perf` (in the guest, the host's JDK through 9p) with the
#     same workloads. Table: IOPS, p50/p99 latency (submission to completion), ratio ours/fio.
#   host part (no guest): our `bin/nvmeof perf` against our target daemon (bin/nvmeof-target, RAM namespace) over
#     127.0.0.1 at QD1 and QD32, next to the floor: a plain TCP socket ping-pong (SocketPingPong, 4 KiB request and
#     4 KiB response, the same number in flight on one connection, requests ready together sent in one write,
#     busy-polling), with ratio ours/floor.
# Each part writes its JSON (every raw output plus a summary) into the results directory.
#
#   integration-tests/vm/bench-initiator.sh [options]
#     --part guest|host|both   (default both)
#     --runtime S              seconds per measured run (default 8)
#     --warmup S               our perf runs S + runtime seconds and its IOPS is the mean of the per-second IOPS after
#                              the first S (JIT warm-up; default 5); its percentiles cover the whole run. fio: --ramp_time 1;
#                              the ping-pong floor: S seconds unmeasured first
#     --size SIZE              namespace size (default 256M)
#     --results DIR            (default integration-tests/target/bench-results/initiator-<time>)
#     --timeout S              hard limit for the guest run (default 900)
#     --ours-settings JSON     host part: our daemon's settings object (config key "nvmeof4j"), e.g. '{"idle_strategy": "busy"}'
#     --pingpong-mode busy|blocking   the floor's socket mode (default busy)
#     --guest-java-opts OPTS   JVM options of our perf in the guest (default -XX:TieredStopAtLevel=1: with C2 the JVM
#                              crashes now and then under the guest's software emulation; '' for the JVM's defaults)
#
# NVMEOF_CLI=PATH runs another launcher than bin/nvmeof; NVMEOF4J_TARGET_LAUNCHER=PATH another than bin/nvmeof-target.
# Software emulation (TCG) in the guest: absolute figures mean little there; compare the columns of one run.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../.." && pwd)"
CLI="${NVMEOF_CLI:-$PROJECT/bin/nvmeof}"
LAUNCHER="${NVMEOF4J_TARGET_LAUNCHER:-$PROJECT/bin/nvmeof-target}"
SUBNQN_KERNEL="nqn.2014-08.io.nvmeof4j:bench-initiator-kernel"
SUBNQN_OURS="nqn.2014-08.io.nvmeof4j:bench-initiator"

# perf_summary FILE LABEL: reads our perf's output (the JSON object line) or a fio JSON, prints
# "iops p50_us p99_us" (latency = submission to completion). Field names of our summary are matched loosely.
perf_summary() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys
path, label = sys.argv[1], sys.argv[2]
text = open(path).read()
obj = None
for line in text.splitlines():
    line = line.strip()
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            pass
if obj is None:
    obj = json.loads(text)
if "jobs" in obj and "fio version" in obj:                     # fio: lat_ns = submission to completion
    r = obj["jobs"][0]["read"]
    p = r["lat_ns"]["percentile"]
    print("%.1f %.1f %.1f" % (r["iops"], p["50.000000"] / 1e3, p["99.000000"] / 1e3))
    sys.exit(0)
def walk(o, path=()):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from walk(v, path + (str(k),))
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        yield path, o
def unit(path):                                               # scale to microseconds from the key names
    s = "_".join(path).lower()
    if re.search(r"(^|_)ns($|_)|nanos", s): return 1e-3
    if re.search(r"(^|_)ms($|_)|millis", s): return 1e3
    return 1.0
iops = p50 = p99 = None
for path, v in walk(obj):
    k = path[-1].lower()
    if iops is None and k == "iops":
        iops = v
    if p50 is None and re.match(r"^(p|lat_?p?|latency_?p?)?50(\.0+)?($|_)", k.replace("percentile", "p")):
        p50 = v * unit(path)
    if p99 is None and re.match(r"^(p|lat_?p?|latency_?p?)?99(\.0+)?($|_[a-z])", k.replace("percentile", "p")) or \
            (p99 is None and k in ("p99", "99", "99.0", "p99_us", "p99_ns", "p99_ms")):
        p99 = v * unit(path)
if iops is None:
    sys.exit("%s: no iops in %s" % (label, path))
fmt = lambda v: "nan" if v is None else "%.1f" % v
print("%.1f %s %s" % (iops, fmt(p50), fmt(p99)))
PY
}

# run_ours LABEL ADDR PORT NQN QD OUTDIR: our perf, 4 KiB randread, for WARMUP + RUNTIME seconds (the CLI has no
# warm-up option: one JVM, so the JIT warms up in its first seconds). Raw output in OUTDIR/ours-LABEL.perf.json and
# .err (the per-second progress lines); OUTDIR/ours-LABEL.json gets "iops" = the mean of the per-second IOPS after
# the first WARMUP seconds (steady state), "iops_whole_run", and the whole run's latency percentiles.
run_ours() {
    local label="$1" addr="$2" port="$3" nqn="$4" qd="$5" out="$6" rc
    timeout --kill-after=10 $((RUNTIME + WARMUP + 180)) "$CLI" perf -t tcp -a "$addr" -s "$port" -n "$nqn" \
        --queue-depth "$qd" --io-size 4096 --workload randread --time $((RUNTIME + WARMUP)) --json \
        > "$out/ours-$label.perf.json" 2> "$out/ours-$label.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        echo "BENCH ours $label: bin/nvmeof perf exit code $rc: $(tail -n 3 "$out/ours-$label.err" | tr '\n' ' ')"
        return 1
    fi
    python3 - "$out/ours-$label.perf.json" "$out/ours-$label.err" "$WARMUP" "$out/ours-$label.json" <<'PY' || return 1
import json, re, sys
raw, err, warmup, dst = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
summary = None
for line in open(raw):
    if line.strip().startswith("{"):
        summary = json.loads(line)
if summary is None:
    summary = json.load(open(raw))
per_second = []
for line in open(err):
    m = re.match(r"^\[\s*(\d+) s\]\s+([\d,]+) IOPS", line)
    if m:
        per_second.append((int(m.group(1)), int(m.group(2).replace(",", ""))))
steady = [v for t, v in per_second if t > warmup]
lat = summary.get("latency_us", {})
out = {"iops": round(sum(steady) / len(steady), 1) if steady else summary["iops"],
       "iops_whole_run": summary["iops"], "warmup_s_excluded": warmup if steady else 0,
       "per_second_iops": [v for _, v in per_second],
       "p50_us": lat.get("p50"), "p99_us": lat.get("p99"), "latency_note": "percentiles over the whole run (warm-up included)",
       "perf": summary}
json.dump(out, open(dst, "w"), indent=2)
PY
    echo "BENCH ours $label: $(perf_summary "$out/ours-$label.json" "ours-$label" | awk '{printf "%.0f IOPS (steady), p50 %s us, p99 %s us", $1, $2, $3}')"
}

# table TITLE OUTFILE "label:name_a:file_a:name_b:file_b" ... : prints the table and writes the summary JSON
table() {
    local title="$1" outfile="$2"; shift 2
    local rows=() r label fa fb
    for r in "$@"; do
        IFS=: read -r label _ fa _ fb <<< "$r"
        rows+=("$label $(perf_summary "$fa" a 2>/dev/null || echo "nan nan nan") $(perf_summary "$fb" b 2>/dev/null || echo "nan nan nan")")
    done
    local na nb
    IFS=: read -r _ na _ nb _ <<< "$1"
    printf '%s\n' "${rows[@]}" | python3 -c '
import json, math, sys
title, outfile, na, nb = sys.argv[1:5]
rows = [l.split() for l in sys.stdin if l.strip()]
f = lambda v: float(v)
out = {"title": title, "latency": "submission to completion, microseconds", "rows": {}}
print(title)
print("%-20s %12s %12s %8s %20s %20s" % ("workload", na + " IOPS", nb + " IOPS", "ratio", na + " p50/p99 us", nb + " p50/p99 us"))
for label, ai, a50, a99, bi, b50, b99 in rows:
    ai, a50, a99, bi, b50, b99 = map(f, (ai, a50, a99, bi, b50, b99))
    ratio = bi / ai if ai > 0 and not math.isnan(ai) and not math.isnan(bi) else float("nan")
    g = lambda v, p="%.0f": "-" if math.isnan(v) else p % v
    print("%-20s %12s %12s %8s %20s %20s" % (label, g(ai), g(bi), g(ratio, "%.2f"),
          g(a50, "%.1f") + "/" + g(a99, "%.1f"), g(b50, "%.1f") + "/" + g(b99, "%.1f")))
    n = lambda v: None if math.isnan(v) else round(v, 1)
    out["rows"][label] = {na: {"iops": n(ai), "p50_us": n(a50), "p99_us": n(a99)},
                          nb: {"iops": n(bi), "p50_us": n(b50), "p99_us": n(b99)},
                          "ratio_" + nb + "_" + na: None if math.isnan(ratio) else round(ratio, 3)}
json.dump(out, open(outfile, "w"), indent=2)
print("BENCH summary written to " + outfile)
' "$title" "$outfile" "$na" "$nb"
}

# =================================================================================================================
# Guest part (inside the QEMU guest)
# =================================================================================================================
guest_main() {
    . "$HERE/guest/lib.sh"
    . "$HERE/guest/nvmet.sh"
    local res="${RESULTS_DIR:-/tmp}" tmpfs="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}" rc=0 dev
    local hostid; hostid="$(cat /proc/sys/kernel/random/uuid)"
    local hostnqn="nqn.2014-08.org.nvmexpress:uuid:$hostid"
    # C1 only by default: with tiered compilation the JVM crashes now and then under this software emulation (see
    # guest/initiator-vs-kernel-target.sh). A crash report would land on the guest's RAM overlay: keep it with the results.
    export NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} $GUEST_JAVA_OPTS -XX:ErrorFile=$res/hs_err_pid%p.log"
    echo "BENCH guest JVM options for our perf: $NVMEOF4J_JAVA_OPTS"
    echo "BENCH guest: kernel $(uname -r), $(nproc) vCPUs, ${RUNTIME}s per run, namespace $SIZE, kernel target 127.0.0.1:4420"
    # non-zero data, so reads touch real pages
    { yes "nvmeof4j-bench-fill-0123456789abcdef" 2>/dev/null || true; } | head -c "$(numfmt --from=iec "$SIZE")" > "$tmpfs/kernel.img"
    nvmet_clear
    if ! { nvmet_subsystem "$SUBNQN_KERNEL" "linux-nvmet" "kernelbench00002" \
        && nvmet_file_ns "$SUBNQN_KERNEL" 1 "$tmpfs/kernel.img" \
        && nvmet_port 1 tcp 127.0.0.1 4420 && nvmet_link 1 "$SUBNQN_KERNEL"; }; then
        echo "BENCH kernel target setup failed"; return 1
    fi

    # ---- fio through the kernel host ----
    if timeout 90 nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$SUBNQN_KERNEL" --hostnqn="$hostnqn" --hostid="$hostid" \
            --nr-io-queues=2 >/dev/null && wait_for 30 ns_blockdev "$SUBNQN_KERNEL" 1; then
        dev="$(ns_blockdev "$SUBNQN_KERNEL" 1)"
        echo "BENCH kernel host: $dev"
        for qd in 1 16; do
            if timeout $((RUNTIME + 120)) fio --name="fio-qd$qd" --filename="$dev" --ioengine=libaio --direct=1 \
                    --rw=randread --bs=4k --iodepth="$qd" --numjobs=1 --time_based --runtime="$RUNTIME" --ramp_time=1 \
                    --norandommap --randrepeat=0 --lat_percentiles=1 --output-format=json \
                    --output="$res/fio-qd$qd.json" >/dev/null 2>"$res/fio-qd$qd.err"; then
                echo "BENCH fio qd$qd: $(perf_summary "$res/fio-qd$qd.json" fio | awk '{printf "%.0f IOPS, p50 %s us, p99 %s us", $1, $2, $3}')"
            else
                echo "BENCH fio qd$qd failed: $(tail -n 3 "$res/fio-qd$qd.err" | tr '\n' ' ')"; rc=1
            fi
        done
        timeout 60 nvme disconnect -n "$SUBNQN_KERNEL" >/dev/null
    else
        echo "BENCH the kernel host cannot connect to the kernel target"; rc=1
    fi

    # ---- our perf ----
    # bin/nvmeof rebuilds the tree when a source is newer than its build output. The host ran it just before booting
    # (building there if needed); never let it start Maven in here: mark the build current on the guest's RAM overlay
    # (the host's files are not touched).
    [ -d "$PROJECT/initiator-lib/target/lib" ] && touch "$PROJECT/initiator-lib/target/lib" 2>/dev/null
    for qd in 1 16; do
        run_ours "qd$qd" 127.0.0.1 4420 "$SUBNQN_KERNEL" "$qd" "$res" || rc=1
    done
    nvmet_clear
    rm -f "$tmpfs/kernel.img"

    table "guest: 4 KiB random read against the Linux kernel target (software emulation; compare within the run)" \
        "$res/bench-initiator-guest.json" \
        "4k-randread-qd1:fio:$res/fio-qd1.json:ours:$res/ours-qd1.json" \
        "4k-randread-qd16:fio:$res/fio-qd16.json:ours:$res/ours-qd16.json" || rc=1
    return $rc
}

if [ "${NVMEOF4J_IN_GUEST:-0}" = 1 ] && [ "${BENCH_GUEST:-0}" = 1 ]; then
    RUNTIME="${BENCH_RUNTIME:-8}"; SIZE="${BENCH_SIZE:-256M}"; WARMUP="${BENCH_WARMUP:-5}"
    GUEST_JAVA_OPTS="${BENCH_GUEST_JAVA_OPTS--XX:TieredStopAtLevel=1}"
    guest_main
    exit $?
fi

# =================================================================================================================
# Host side
# =================================================================================================================
PART=both; RUNTIME=8; WARMUP=5; SIZE=256M; TIMEOUT=900; SETTINGS=""; PPMODE=busy; GUEST_JAVA_OPTS="-XX:TieredStopAtLevel=1"
RESULTS="$PROJECT/integration-tests/target/bench-results/initiator-$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
    case "$1" in
        --part) PART="$2"; shift 2 ;;
        --runtime) RUNTIME="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --ours-settings) SETTINGS="$2"; shift 2 ;;
        --pingpong-mode) PPMODE="$2"; shift 2 ;;
        --guest-java-opts) GUEST_JAVA_OPTS="$2"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "bench-initiator.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$PART" in guest|host|both) ;; *) echo "--part must be guest, host or both" >&2; exit 2 ;; esac
mkdir -p "$RESULTS"
RESULTS="$(readlink -f "$RESULTS")"
[ -x "$CLI" ] || { echo "bench-initiator.sh: $CLI not found" >&2; exit 1; }
# The launcher builds the tree when needed: do it here on the host, never inside the guest.
"$CLI" help perf > "$RESULTS/cli-help.txt" 2>&1 || { echo "bench-initiator.sh: $CLI help perf failed:" >&2; tail -n 20 "$RESULTS/cli-help.txt" >&2; exit 1; }
RC=0

if [ "$PART" = guest ] || [ "$PART" = both ]; then
    "$HERE/prepare.sh" --quiet >/dev/null || exit 1
    mkdir -p "$RESULTS/guest"
    ARGS=(--timeout "$TIMEOUT" --results "$RESULTS/guest" --env BENCH_GUEST=1 --env BENCH_RUNTIME="$RUNTIME"
          --env BENCH_WARMUP="$WARMUP" --env BENCH_SIZE="$SIZE" --env BENCH_GUEST_JAVA_OPTS="$GUEST_JAVA_OPTS")
    [ -n "${NVMEOF_CLI:-}" ] && ARGS+=(--env NVMEOF_CLI="$CLI")
    "$HERE/run-guest.sh" "${ARGS[@]}" "$HERE/bench-initiator.sh" || RC=1
fi

if [ "$PART" = host ] || [ "$PART" = both ]; then
    HOST_PID=""
    HOST_DIR="$(mktemp -d "${TMPDIR:-/tmp}/nvmeof4j-bench-initiator.XXXXXX")"
    cleanup() {
        if [ -n "$HOST_PID" ] && kill -0 "$HOST_PID" 2>/dev/null; then
            kill -TERM "$HOST_PID" 2>/dev/null
            for _ in $(seq 1 60); do kill -0 "$HOST_PID" 2>/dev/null || break; sleep 0.5; done
            kill -0 "$HOST_PID" 2>/dev/null && kill -KILL "$HOST_PID" 2>/dev/null
        fi
        rm -rf "$HOST_DIR"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    OUT="$RESULTS/host"; mkdir -p "$OUT"

    # The floor first (nothing else running): SocketPingPong, compiled on the spot (no dependencies).
    PP_SRC="$PROJECT/benchmarks/src/main/java/io/nvmeof4j/bench/SocketPingPong.java"
    mkdir -p "$HOST_DIR/pp"
    javac -d "$HOST_DIR/pp" "$PP_SRC" || { echo "bench-initiator.sh: cannot compile $PP_SRC" >&2; exit 1; }
    for qd in 1 32; do
        timeout 120 java -cp "$HOST_DIR/pp" io.nvmeof4j.bench.SocketPingPong --size 4096 --depth "$qd" \
            --time "$RUNTIME" --warmup "$WARMUP" --mode "$PPMODE" > "$OUT/floor-qd$qd.json.raw" 2> "$OUT/floor-qd$qd.err" \
            || { echo "BENCH floor qd$qd failed: $(tail -n 3 "$OUT/floor-qd$qd.err")"; RC=1; }
        # in the common shape (iops, p50_us, p99_us) for the table; the raw line keeps everything
        python3 -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); j["iops"]=j["rtt_per_s"]; print(json.dumps(j))' \
            "$OUT/floor-qd$qd.json.raw" > "$OUT/floor-qd$qd.json" 2>/dev/null
        echo "BENCH floor (socket ping-pong, $PPMODE) qd$qd: $(cat "$OUT/floor-qd$qd.json.raw")"
    done

    PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    extra=""; [ -n "$SETTINGS" ] && extra=", \"nvmeof4j\": $SETTINGS"
    cat > "$HOST_DIR/config.json" <<EOF
{ "hosts": [],
  "ports": [ {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PORT", "treq": "not specified"},
              "param": {"inline_data_size": "16384"}, "referrals": [], "subsystems": ["$SUBNQN_OURS"]} ],
  "subsystems": [ {"nqn": "$SUBNQN_OURS",
      "attr": {"allow_any_host": "1", "serial": "nvmeof4jbenchini1", "model": "nvmeof4j", "version": "1.3"},
      "allowed_hosts": [], "namespaces": [ {"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "$SIZE", "block_size": 4096}} ] } ]$extra }
EOF
    echo "BENCH host: starting $LAUNCHER on 127.0.0.1:$PORT (RAM namespace $SIZE); log $OUT/daemon.log"
    "$LAUNCHER" --config "$HOST_DIR/config.json" > "$OUT/daemon.log" 2>&1 &
    HOST_PID=$!
    deadline=$(( $(date +%s) + 600 ))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
        if ! kill -0 "$HOST_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
            echo "bench-initiator.sh: the daemon did not open port $PORT; log tail:" >&2
            tail -n 30 "$OUT/daemon.log" >&2
            exit 1
        fi
        sleep 0.5
    done
    for qd in 1 32; do
        run_ours "qd$qd" 127.0.0.1 "$PORT" "$SUBNQN_OURS" "$qd" "$OUT" || RC=1
    done
    cleanup; HOST_PID=""
    trap - EXIT

    table "host: 4 KiB random read over 127.0.0.1, our perf against our target, next to the TCP ping-pong floor ($PPMODE)" \
        "$OUT/bench-initiator-host.json" \
        "4k-randread-qd1:floor:$OUT/floor-qd1.json:ours:$OUT/ours-qd1.json" \
        "4k-randread-qd32:floor:$OUT/floor-qd32.json:ours:$OUT/ours-qd32.json" || RC=1
fi
echo "bench-initiator.sh: results in $RESULTS (exit $RC)"
exit $RC
