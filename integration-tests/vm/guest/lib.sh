#!/bin/bash
# Shared helpers for the guest-side scripts (sourced, not run). Bash; runs inside the QEMU guest as root.

# ---- check bookkeeping ------------------------------------------------------------------------------------------
PASSED=0
FAILED=0
FAILED_NAMES=()

pass() { PASSED=$((PASSED + 1)); echo "PASS $1"; }
fail() { # fail NAME REASON...
    local name="$1"; shift
    FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
    echo "FAIL $name: $*"
}
info() { echo "INFO $*"; }
# check NAME COMMAND...: PASS when COMMAND exits 0, FAIL with its output otherwise.
check() {
    local name="$1"; shift
    local out
    if out="$("$@" 2>&1)"; then pass "$name"; return 0; fi
    fail "$name" "command failed: $* :: $(echo "$out" | tail -n 5 | tr '\n' ' ')"
    return 1
}
summary() { # prints the summary line; returns non-zero when anything failed
    if [ "$FAILED" -gt 0 ]; then
        echo "---- guest dmesg (last 40 lines) ----"
        dmesg 2>/dev/null | tail -n 40
        echo "-------------------------------------"
        echo "FAILED CHECKS: ${FAILED_NAMES[*]}"
    fi
    echo "SUMMARY: $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
}

# ---- waiting ------------------------------------------------------------------------------------------------------
# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds; non-zero after SECONDS.
wait_for() {
    local secs="$1"; shift
    local deadline=$(( $(date +%s) + secs ))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}
# wait_tcp_port HOST PORT SECONDS
wait_tcp_port() {
    local host="$1" port="$2" secs="$3"
    wait_for "$secs" bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

# ---- NVMe host side (sysfs) ---------------------------------------------------------------------------------------
# Controller names (nvme0 …) of live controllers of subsystem NQN.
ctrls_of_subsys() {
    local nqn="$1" c
    for c in /sys/class/nvme/nvme*; do
        [ -e "$c/subsysnqn" ] || continue
        [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && basename "$c"
    done
    return 0
}
# Block device (/dev/nvmeXnY) of namespace NSID of subsystem NQN; works with and without native multipath.
ns_blockdev() {
    local nqn="$1" nsid="$2" b name
    for b in /sys/block/nvme*; do
        name="$(basename "$b")"
        case "$name" in nvme*c*n*) continue ;; esac     # hidden per-path devices of a multipath head
        [ -e "$b/device/subsysnqn" ] || continue
        [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$nqn" ] || continue
        [ "$(cat "$b/nsid" 2>/dev/null)" = "$nsid" ] || continue
        [ -b "/dev/$name" ] || continue
        echo "/dev/$name"
        return 0
    done
    return 1
}
# Value of "field : value" in nvme-cli's normal output, trimmed.
nvme_field() { # nvme_field FIELD < output
    awk -v f="$1" -F: '{k=$1; gsub(/[ \t]+/, "", k); if (k == f) {sub(/^[^:]*:[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit}}'
}

# ---- bin/nvmeof perf --------------------------------------------------------------------------------------------
# perf_json OUT JSON: saves the summary of `bin/nvmeof perf --json` (the JSON object line of its stdout OUT, else OUT
# as a whole) as JSON; non-zero, saying why on stderr, when there is none.
perf_json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
summary = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        try:
            summary = json.loads(line)
        except ValueError:
            pass
if summary is None:
    try:
        summary = json.load(open(sys.argv[1]))
    except ValueError:
        pass
if not isinstance(summary, dict):
    sys.exit("no JSON object in the output")
json.dump(summary, open(sys.argv[2], "w"), indent=2)
PY
}

# perf_cli_check NAME OUT JSON ERR RC WHAT: judges one run of `bin/nvmeof perf --json` (its stdout OUT, stderr ERR,
# exit code RC). Saves the summary as JSON (perf_json) and prints "INFO WHAT: iops=… p50=… p99=…"; PASS NAME when
# IOPS > 0, no I/O errors, 0 < p50 <= p99 and RC is 0.
perf_cli_check() {
    local name="$1" out="$2" json="$3" err="$4" crc="$5"
    if perf_json "$out" "$json" && python3 - "$json" "$6" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
def find(o, pred):
    if isinstance(o, dict):
        for k, v in o.items():
            if pred(k.lower(), v):
                return v
            r = find(v, pred)
            if r is not None:
                return r
    return None
num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
iops = find(summary, lambda k, v: k == "iops" and num(v))
p50 = find(summary, lambda k, v: "p50" in k and num(v))
p99 = find(summary, lambda k, v: "p99" in k and "p99." not in k and "p999" not in k and num(v))
print("INFO %s: iops=%s p50=%s p99=%s" % (sys.argv[2], iops, p50, p99))
if not (num(iops) and iops > 0):
    sys.exit("IOPS missing or not positive: %s" % json.dumps(summary)[:400])
if num(summary.get("errors")) and summary["errors"] != 0:
    sys.exit("%s I/O errors: %s" % (summary["errors"], json.dumps(summary)[:400]))
if not (num(p50) and num(p99) and 0 < p50 <= p99):
    sys.exit("latency percentiles missing or out of order: %s" % json.dumps(summary)[:400])
PY
    then
        if [ "$crc" = 0 ]; then pass "$name"; else fail "$name" "exit code $crc: $(tail -n 3 "$err" | tr '\n' ' ')"; fi
    else
        fail "$name" "exit code $crc, bad summary; stderr: $(tail -n 5 "$err" | tr '\n' ' ')"
    fi
}
