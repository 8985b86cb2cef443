#!/usr/bin/env bash
# Boots the nvmeof4j QEMU guest (Debian's stock kernel, the host's root read-only over 9p with a tmpfs overlay),
# runs SCRIPT as root inside it, streams the guest's console to stdout and exits with SCRIPT's exit code.
#
#   integration-tests/vm/run-guest.sh [options] [--] SCRIPT [ARGS...]
#
# Options:
#   --timeout SECONDS   hard limit for the whole guest run; qemu is killed after it (default 600). Exit code 124.
#   --env KEY=VALUE     export KEY=VALUE to SCRIPT inside the guest (repeatable).
#   --results DIR       host directory, writable from the guest, mounted at the same path inside the guest and
#                       exported there as $RESULTS_DIR (default: a fresh temp dir, kept only when not empty).
#   --mem MB            guest memory (default 3072).     --smp N   guest vCPUs (default 2).
#   --hostfwd HPORT[:GPORT]  forward the host's 127.0.0.1:HPORT to the guest's 10.0.2.15:GPORT (default GPORT=HPORT),
#                       e.g. for a host-side initiator against the kernel target in the guest (repeatable).
#   --guestfwd PORT     let the guest reach the host's 127.0.0.1:PORT at $NVMEOF4J_HOST_ADDR:PORT (repeatable).
#                       Every --env NAME_PORT=N (TARGET_PORT, DISCOVERY_PORT, HTTP_PORT, ...) is forwarded the same way.
#
# Network: QEMU user-mode networking with restrict=on: the guest has no path out, not to the host, not to the
# internet. It reaches only what is forwarded: the host's 127.0.0.1:PORT at 10.0.2.100:PORT (exported to SCRIPT as
# $NVMEOF4J_HOST_ADDR) for each --guestfwd / NAME_PORT, one guestfwd-bridge.pl per connection (a FIN from either
# side closes both; it keeps multi-segment capsules from waiting for delayed ACKs). libslirp refuses forwarding
# rules on its own address 10.0.2.2 (and restrict=on drops everything else sent there), so an --env value that is
# exactly 10.0.2.2 (TARGET_ADDR=10.0.2.2, "the host") is handed to SCRIPT as 10.0.2.100.
#   --verbose           show the kernel's boot messages (default: quiet, errors only).
#   --keep              keep the run directory (job.sh, console.log) and print its path.
#   --prepare           run prepare.sh first even when its output exists.
#   --kernel-args ARGS  more guest kernel command-line parameters (e.g. "clocksource=tsc tsc=reliable", see
#                       integration-tests/vm/README.md "Clock source").
#   --crash-report LOG  print the crash report (below) of a saved console log (a guest log, --keep's console.log)
#                       and exit 0; exit 1 when it shows no kernel crash. Boots nothing.
#   --kernel 6.12       boot the second kernel prepare.sh keeps (bookworm-backports 6.12: NVMe in-band
#                       authentication) instead of Debian 12's stock 6.1.
#
# SCRIPT (a path on the host, seen in the guest through 9p) runs with bash unless it is executable, in the
# current directory of the caller, with $RESULTS_DIR, $NVMEOF4J_GUEST_TMPFS (a plain tmpfs for backing files)
# and $NVMEOF4J_IN_GUEST=1 set. The guest is 10.0.2.15; the host's 127.0.0.1 is 10.0.2.2 from inside.
# Exit codes: SCRIPT's own; 124 timeout; 125 the guest died without reporting an exit code; 126 the guest kernel
# crashed (oops, BUG or panic) while SCRIPT ran: the guest ends at once (oops=panic), and the crash (first line,
# function, call trace, the job's last step) is printed on stderr as "run-guest.sh: " lines; 2 bad usage.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${NVMEOF4J_VM_CACHE:-$HOME/.cache/nvmeof4j-vm}"
TIMEOUT=600
MEM=3072
SMP=2
VERBOSE=0
KEEP=0
KERNEL_ARGS=""
PREPARE=0
RESULTS=""
ENVS=()
HOSTFWD=""
GUESTFWD_PORTS=()
# Where the guest reaches the host's forwarded 127.0.0.1 ports (any free address of 10.0.2.0/24 but slirp's own).
HOST_ADDR=10.0.2.100
ENVFILE="$CACHE/current.env"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
die() { echo "run-guest.sh: ERROR: $*" >&2; exit 2; }

# ---- guest kernel crashes: read from the console log ($CONSOLE) after qemu ended ------------------------------
# The console lines that name a kernel crash, without printk's "[ seconds]" prefix: the first crash line, the
# task and workqueue, the "Oops:" and RIP lines, the first call trace (at most 30 frames) and the panic line after
# it; 40 lines at most. What follows (the replayed log, see panic_print) stays in the console log only.
# A crash line starts a console line or follows printk's "] ": job output that quotes "BUG: " is no crash. Soft
# and workqueue lockups (slow TCG on a loaded machine) print "BUG: " too but are no oops: the guest goes on.
CRASH_RE='(^|] )(BUG: |kernel BUG at |Oops: |general protection fault|stack segment: |Kernel panic - not syncing)'
CRASH_SKIP='BUG: (soft|workqueue) lockup'
crash_report() {
    awk -v re="$CRASH_RE" -v skip="$CRASH_SKIP" '
        { line = $0; sub(/^\[ *[0-9]+\.[0-9]+\] ?/, "", line) }
        !started && $0 ~ re && $0 !~ skip { started = 1; panicfirst = line ~ /^Kernel panic/; print line; n = 1; next }
        !started || n >= 40 { next }
        tracedone && (panicfirst || line !~ /^Kernel panic/) { next }
        tracedone { print line; exit }
        !intrace && line ~ /^(Oops: |CPU: |Workqueue: |RIP: |Kernel panic)/ { print line; n++; next }
        line ~ /^Call Trace:/ && !tracedone { intrace = 1; frames = 0; print line; n++; next }
        intrace && line ~ /^ / && frames < 30 { print line; n++; frames++; next }
        intrace { intrace = 0; tracedone = 1 }' "$CONSOLE"
}
# The function the crash is in: the RIP line's, or for a panic without one, the first call trace frame that is
# not the panic machinery itself ("sysrq_handle_crash+0x16/0x20").
crash_function() {
    crash_report | awk '
        /^RIP: / { sub(/^RIP: [0-9a-f]+:/, ""); print; exit }
        /^Call Trace:/ { t = 1; next }
        t && /^ / && !/^ *(\?|<|dump_stack|panic|vpanic)/ { sub(/^ +/, ""); print; exit }'
}
# The job's last step before the crash: its last PASS/FAIL/INFO line, else its last line that is not the kernel's.
crash_job_step() {
    awk -v re="$CRASH_RE" -v skip="$CRASH_SKIP" '
        $0 ~ re && $0 !~ skip { exit }
        /^(PASS|FAIL|INFO) / { step = $0 }
        !/^\[ *[0-9]+\.[0-9]+\]/ && NF { last = $0 }
        END { print (step != "" ? step : last) }' "$CONSOLE"
}
print_crash() { # print_crash HEADLINE: the crash on stderr, each line prefixed (VmHarness reads them)
    local first
    first="$(crash_report | head -n1)"
    echo "run-guest.sh: $1: $first" >&2
    echo "run-guest.sh: crash in: $(crash_function)" >&2
    echo "run-guest.sh: the job's last step: $(crash_job_step)" >&2
    crash_report | sed 's/^/run-guest.sh: | /' >&2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) [ $# -ge 2 ] || usage; TIMEOUT="$2"; shift 2 ;;
        --timeout=*) TIMEOUT="${1#*=}"; shift ;;
        --env) [ $# -ge 2 ] || usage; ENVS+=("$2"); shift 2 ;;
        --env=*) ENVS+=("${1#*=}"); shift ;;
        --results) [ $# -ge 2 ] || usage; RESULTS="$2"; shift 2 ;;
        --results=*) RESULTS="${1#*=}"; shift ;;
        --mem) MEM="$2"; shift 2 ;;
        --smp) SMP="$2"; shift 2 ;;
        --hostfwd) [ $# -ge 2 ] || usage
            [[ "$2" =~ ^([0-9]+)(:([0-9]+))?$ ]] || die "--hostfwd wants HPORT[:GPORT], got $2"
            HOSTFWD="$HOSTFWD,hostfwd=tcp:127.0.0.1:${BASH_REMATCH[1]}-10.0.2.15:${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}"
            shift 2 ;;
        --guestfwd) [ $# -ge 2 ] || usage
            [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 65535 ] || die "--guestfwd wants a port, got $2"
            GUESTFWD_PORTS+=("$2"); shift 2 ;;
        --kernel-args) [ $# -ge 2 ] || usage
            [[ "$2" =~ ^[A-Za-z0-9_.,=\ -]*$ ]] || die "--kernel-args: letters, digits and _.,=- only, got $2"
            KERNEL_ARGS="$2"; shift 2 ;;
        --verbose) VERBOSE=1; shift ;;
        --keep) KEEP=1; shift ;;
        --prepare) PREPARE=1; shift ;;
        --kernel) [ $# -ge 2 ] || usage
            case "$2" in 6.1) ENVFILE="$CACHE/current.env" ;; 6.12) ENVFILE="$CACHE/linux-6.12.env" ;;
                *) die "--kernel wants 6.1 or 6.12, got $2" ;; esac
            shift 2 ;;
        --crash-report) [ $# -ge 2 ] || usage   # a saved console log: its crash report, exit 0 (1: no crash)
            CONSOLE="$2"; [ -f "$CONSOLE" ] || die "no such console log: $CONSOLE"
            [ -n "$(crash_report)" ] || exit 1
            print_crash "GUEST KERNEL CRASHED (console log $CONSOLE)"; exit 0 ;;
        -h|--help) usage ;;
        --) shift; break ;;
        -*) die "unknown option $1" ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout needs a number of seconds"

SCRIPT="$(readlink -f "$1")"; shift
[ -f "$SCRIPT" ] || die "no such script: $SCRIPT"

# ---- kernel + initramfs -----------------------------------------------------------------------------------------
if [ "$PREPARE" = 1 ] || [ ! -f "$ENVFILE" ]; then
    "$HERE/prepare.sh" --quiet >/dev/null || die "prepare.sh failed"
fi
# shellcheck disable=SC1091
. "$ENVFILE"
if [ ! -f "$KERNEL" ] || [ ! -f "$INITRD" ]; then
    "$HERE/prepare.sh" --quiet >/dev/null || die "prepare.sh failed"
    . "$ENVFILE"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not installed (run prepare.sh)"

# ---- run directory: control share (job.sh in, exit code out) ------------------------------------------------------
RUNDIR="$(mktemp -d "${TMPDIR:-/tmp}/nvmeof4j-guest.XXXXXX")"
CONSOLE="$RUNDIR/console.log"
mkdir -p "$RUNDIR/ctl"
OWN_RESULTS=0
if [ -z "$RESULTS" ]; then
    RESULTS="$RUNDIR/results"
    OWN_RESULTS=1
fi
mkdir -p "$RESULTS"
RESULTS="$(readlink -f "$RESULTS")"
case "$RESULTS$RUNDIR" in
    *[[:space:],]*) die "results and temp paths must not contain spaces or commas: $RESULTS $RUNDIR" ;;
esac

q() { # single-quote for sh
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
{
    echo '#!/bin/sh'
    echo '# generated by run-guest.sh'
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    echo 'export HOME=/root TERM=dumb LANG=C.UTF-8 NVMEOF4J_IN_GUEST=1'
    echo ': > /run/nvmeof4j-ctl/job-started'   # tells a boot failure (safe to boot again) from a job failure
    echo "export RESULTS_DIR=$(q "$RESULTS")"
    echo 'export NVMEOF4J_GUEST_TMPFS=/nvmeof4j-tmpfs'
    echo "export NVMEOF4J_HOST_ADDR=$HOST_ADDR"
    [ -n "${JAVA_HOME:-}" ] && echo "export JAVA_HOME=$(q "$JAVA_HOME")"
    for kv in "${ENVS[@]+"${ENVS[@]}"}"; do
        key="${kv%%=*}"
        [[ "$key" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && [ "$key" != "$kv" ] || die "bad --env value: $kv"
        value="${kv#*=}"
        [ "$value" = 10.0.2.2 ] && value="$HOST_ADDR" # see "Network" above
        echo "export $key=$(q "$value")"
    done
    echo "cd $(q "$PWD") 2>/dev/null || cd /"
    if [ -x "$SCRIPT" ]; then printf 'exec %s' "$(q "$SCRIPT")"; else printf 'exec /bin/bash %s' "$(q "$SCRIPT")"; fi
    for a in "$@"; do printf ' %s' "$(q "$a")"; done
    echo
} > "$RUNDIR/ctl/job.sh"
chmod 0755 "$RUNDIR/ctl/job.sh"

# ---- network: restrict=on, plus the host ports the guest may reach ------------------------------------------------
for kv in "${ENVS[@]+"${ENVS[@]}"}"; do
    if [[ "$kv" =~ ^[A-Za-z0-9_]*PORT=([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le 65535 ]; then
        GUESTFWD_PORTS+=("${BASH_REMATCH[1]}")
    fi
done
GUESTFWD=""
for port in $(printf '%s\n' "${GUESTFWD_PORTS[@]+"${GUESTFWD_PORTS[@]}"}" | sort -un); do
    # QEMU spawns the bridge per guest connection, its stdin/stdout the connection (why not plain cats: the
    # bridge's header). ",," is an escaped comma in qemu options.
    GUESTFWD="$GUESTFWD,guestfwd=tcp:$HOST_ADDR:$port-cmd:perl ${HERE//,/,,}/guestfwd-bridge.pl $port"
done

if [ "$VERBOSE" = 1 ]; then LOGOPTS="loglevel=7"; else LOGOPTS="quiet loglevel=3"; fi
# hardened_usercopy=off: Debian's 6.1 kernel BUG()s in usercopy checks on large NVMe/TCP transfers (seen in
# nvmet_tcp_io_work with 1 MiB writes at QD32: "Kernel memory exposure attempt detected from page alloc");
# the same false positive is reported for the nvme-tcp host side. The copies themselves are fine.
# oops=panic: an oops (NULL dereference, BUG(), GPF) panics, and panic=-1 with qemu's -no-reboot ends the guest
# at once. Without it an oops kills only the task it hit: a kworker dies holding its queue and the job hangs until
# --timeout (seen: 6.1's nvme_tcp_recv_skb NULL dereference in nvme_tcp_io_work, docs/testing.md). The kernel
# itself stops, so nothing depends on a console watcher keeping up; the console is read afterwards to report.
# panic_print=0x20: the panic replays the kernel's whole log on the console, so the messages "quiet loglevel=3"
# hid (an nvme host's "got bad c2hdata.command_id" before the oops) are in the guest's console log.
APPEND="console=ttyS0 $LOGOPTS panic=-1 oops=panic panic_print=0x20 8250.nr_uarts=1 random.trust_cpu=on"
APPEND="$APPEND hardened_usercopy=off"
APPEND="$APPEND nvmeof4j.results=$RESULTS nvmeof4j.modules=$MODULES_DIR${KERNEL_ARGS:+ $KERNEL_ARGS}"

# shellcheck disable=SC2054  # commas belong to qemu option values
QEMU=(qemu-system-x86_64
    -accel tcg,thread=multi -cpu max -m "$MEM" -smp "$SMP" -nographic -no-reboot
    -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND"
    -netdev "user,id=net0,restrict=on$HOSTFWD$GUESTFWD" -device virtio-net-pci,netdev=net0,romfile=
    -device virtio-rng-pci
    -virtfs local,path=/,mount_tag=nvmeof4j_root,security_model=none,readonly=on,multidevs=remap
    -virtfs "local,path=$RUNDIR/ctl,mount_tag=nvmeof4j_ctl,security_model=none,multidevs=remap"
    -virtfs "local,path=$RESULTS,mount_tag=nvmeof4j_results,security_model=none,multidevs=remap")

# ---- boot, stream, wait -------------------------------------------------------------------------------------------
# The guest kernel can die before the job starts: under multi-threaded TCG a vCPU may still execute the int3 that
# the kernel's live text patching (static keys, alternatives) placed and removed a moment ago ("Oops: int3" in
# sched_clock_cpu seen with 6.12 on a loaded CI machine, about once in tens of boots). Nothing of the job has run
# then, so it is booted again (at most BOOT_ATTEMPTS times, said on stderr); a failure after the job started is
# the job's and is never retried.
BOOT_ATTEMPTS=3
START=$(date +%s)
INTERRUPTED=0
on_signal() {
    INTERRUPTED=1
    kill -TERM "$QPID" 2>/dev/null
}
boot_once() {
    rm -f "$RUNDIR/console.fifo" "$RUNDIR/ctl/job-started" "$RUNDIR/ctl/exit-code"
    mkfifo "$RUNDIR/console.fifo"
    # Serial console output has CRLF line ends; strip the CR so callers can match lines.
    sed -u 's/\r$//' < "$RUNDIR/console.fifo" | tee "$CONSOLE" &
    TEE_PID=$!
    timeout --kill-after=15 "$TIMEOUT" "${QEMU[@]}" < /dev/null > "$RUNDIR/console.fifo" 2>&1 &
    QPID=$!
    trap on_signal TERM INT HUP
    wait "$QPID"; QRC=$?
    while kill -0 "$QPID" 2>/dev/null; do   # a trapped signal interrupts wait: wait again for qemu to go
        wait "$QPID"; QRC=$?
    done
    wait "$TEE_PID" 2>/dev/null
    trap - TERM INT HUP
}
for attempt in $(seq 1 "$BOOT_ATTEMPTS"); do
    boot_once
    if [ "$INTERRUPTED" = 1 ] || [ "$QRC" = 124 ] || [ "$QRC" = 137 ] || [ -f "$RUNDIR/ctl/job-started" ] \
        || [ "$attempt" = "$BOOT_ATTEMPTS" ]; then
        break
    fi
    why="$(crash_report | head -n1)"
    [ -n "$why" ] || why="$(grep -m1 FATAL "$CONSOLE" || echo 'no panic line')"
    echo "run-guest.sh: the guest died before its job started (boot $attempt of $BOOT_ATTEMPTS, qemu exit $QRC:" \
        "$why); booting again" >&2
done
ELAPSED=$(( $(date +%s) - START ))

RC=""
if [ -f "$RUNDIR/ctl/exit-code" ]; then
    RC="$(tr -dc '0-9' < "$RUNDIR/ctl/exit-code")"
fi
if [ -z "$RC" ]; then
    RC="$(sed -n 's/.*NVMEOF4J-GUEST-EXIT=\([0-9][0-9]*\).*/\1/p' "$CONSOLE" | tail -n1)"
fi
CRASHED=0
[ -n "$(crash_report | head -n1)" ] && CRASHED=1
if [ "$INTERRUPTED" = 1 ]; then
    echo "run-guest.sh: interrupted; qemu stopped after ${ELAPSED}s" >&2
    RC=130
elif [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
    echo "run-guest.sh: TIMEOUT: guest killed after ${TIMEOUT}s" >&2
    [ "$CRASHED" = 1 ] && print_crash "the guest kernel had crashed before"
    RC=124
elif [ -z "$RC" ] && [ "$CRASHED" = 1 ] && [ -f "$RUNDIR/ctl/job-started" ]; then
    print_crash "GUEST KERNEL CRASHED after ${ELAPSED}s (exit 126)"
    RC=126
elif [ -z "$RC" ]; then
    echo "run-guest.sh: guest ended without an exit code (qemu exit $QRC) after ${ELAPSED}s" >&2
    [ "$CRASHED" = 1 ] && print_crash "the guest kernel crashed before the job started (boot $attempt)"
    RC=125
else
    echo "run-guest.sh: guest exit code $RC after ${ELAPSED}s" >&2
    [ "$CRASHED" = 1 ] && print_crash "the guest kernel crashed after the job reported its exit code"
fi

if [ "$KEEP" = 1 ]; then
    echo "run-guest.sh: run directory kept: $RUNDIR" >&2
else
    if [ "$OWN_RESULTS" = 1 ] && [ -n "$(ls -A "$RESULTS")" ]; then
        KEPT="$(mktemp -d "${TMPDIR:-/tmp}/nvmeof4j-results.XXXXXX")"
        cp -a "$RESULTS/." "$KEPT/"
        echo "run-guest.sh: results kept in $KEPT" >&2
    fi
    rm -rf "$RUNDIR"
fi
exit "$RC"
