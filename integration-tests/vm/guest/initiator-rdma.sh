#!/bin/bash
# Our initiator (initiator-lib through KernelTargetProbe, and bin/nvmeof perf) over NVMe-oF/RDMA (Soft-RoCE rxe0 on
# eth0, 10.0.2.15), inside the guest, against
#   1. the Linux kernel target nvmet-rdma on rdma://10.0.2.15:4420 (file namespace on the guest's tmpfs), then
#   2. our daemon on rdma://10.0.2.15:4421.
# Each: the probe (discover, connect with 1 and 4 I/O queues, write-then-verify at 4 KiB / 128 KiB / 1 MiB, FUA,
# deallocate reads zeros, flush, disconnect, a short callback-API load) with its PASS/FAIL names prefixed "kernel-" or
# "ours-", then bin/nvmeof perf -t rdma for $PERF_SECONDS s (4 KiB randread, QD $PERF_QD, JSON saved as
# $RESULTS_DIR/perf-{kernel,ours}.json); against the kernel target also bin/nvmeof discover, identify, write and
# read -t rdma (1 MiB written, read back, compared). Prints PASS/FAIL lines and a SUMMARY; exits non-zero on any failure.
# InitiatorRdmaIT runs it with:
#   integration-tests/vm/run-guest.sh --results DIR --env PROBE_CP=CLASSPATH integration-tests/vm/guest/initiator-rdma.sh
# Environment (defaults in brackets): PROBE_CP (required), JAVA_BIN, SIZE_MB [64], PROBE_SEED, PROBE_PERF_SECONDS [3],
# PERF_SECONDS [5], PERF_QD [16], NVMEOF_CLI [<repo>/bin/nvmeof], GUEST_JAVA_OPTS [-XX:TieredStopAtLevel=1].
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(cd "$HERE/../../.." && pwd)"
. "$HERE/lib.sh"
. "$HERE/nvmet.sh"
. "$HERE/rdma-lib.sh"
RES="${RESULTS_DIR:-/tmp}"
KNQN="nqn.2014-08.io.nvmeof4j:rdma-kernel-it"
ONQN="nqn.2014-08.io.nvmeof4j:rdma-ours-it"
SIZE_MB="${SIZE_MB:-64}"
PROBE_SEED="${PROBE_SEED:-$RANDOM$RANDOM}"
PERF_SECONDS="${PERF_SECONDS:-5}"
PERF_QD="${PERF_QD:-16}"
NVMEOF_CLI="${NVMEOF_CLI:-$PROJECT/bin/nvmeof}"
TMPFS="${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}"
if [ -z "${JAVA_BIN:-}" ]; then
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then JAVA_BIN="$JAVA_HOME/bin/java"; else JAVA_BIN=java; fi
fi
GUEST_JAVA_OPTS="${GUEST_JAVA_OPTS:--XX:TieredStopAtLevel=1}"   # C1 only: see initiator-vs-kernel-target.sh
export NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} $GUEST_JAVA_OPTS -XX:ErrorFile=$RES/hs_err_pid%p.log"
[ -d "$PROJECT/initiator-lib/target/lib" ] && touch "$PROJECT/initiator-lib/target/lib" 2>/dev/null

info "kernel $(uname -r), $(nproc) vCPUs; java: $("$JAVA_BIN" -version 2>&1 | head -n 1)"
[ -n "${PROBE_CP:-}" ] || { fail setup "PROBE_CP (the test classpath) is not set"; summary; exit 1; }
if nvmet_rxe_up && ibv_devices 2>/dev/null | grep -q rxe0; then
    pass rxe-up
else
    fail rxe-up "no Soft-RoCE device: $(rdma link show 2>&1 | tr '\n' ' ')"; summary; exit 1
fi

probe() { # probe LABEL PORT NQN
    local label="$1" t0 prc
    t0=$(date +%s)
    # shellcheck disable=SC2086  # GUEST_JAVA_OPTS holds several options
    timeout --kill-after=10 "${PROBE_TIMEOUT:-300}" "$JAVA_BIN" -XX:ErrorFile="$RES/hs_err_pid%p.log" -XX:+UseSerialGC \
        -Xms32m -Xmx256m $GUEST_JAVA_OPTS -cp "$PROBE_CP" io.nvmeof4j.it.vm.KernelTargetProbe 10.0.2.15 "$2" "$3" \
        $((SIZE_MB << 20)) "$PROBE_SEED" "${PROBE_PERF_SECONDS:-3}" rdma 2>&1 | tee "$RES/probe-$label.log" \
        | grep -E '^(PASS|FAIL|INFO|SUMMARY|FAILED)|Exception|^\s+at ' | head -n 400 \
        | sed -e "s/^PASS /PASS $label-/" -e "s/^FAIL /FAIL $label-/" -e "s/^SUMMARY/INFO $label probe summary/"
    prc=${PIPESTATUS[0]}
    info "$label probe exit code $prc after $(( $(date +%s) - t0 ))s (full output: $RES/probe-$label.log)"
    # The probe's own lines were relabelled above; count them here so SUMMARY covers them.
    PASSED=$((PASSED + $(grep -c '^PASS ' "$RES/probe-$label.log")))
    local f; f=$(grep -c '^FAIL ' "$RES/probe-$label.log")
    FAILED=$((FAILED + f))
    [ "$f" -gt 0 ] && FAILED_NAMES+=("$label-probe-checks")
    if [ "$prc" = 0 ]; then pass "$label-probe"; else fail "$label-probe" "exit code $prc (124 = timed out)"; fi
}

perf() { # perf LABEL PORT NQN
    local label="$1" t0 crc
    t0=$(date +%s)
    timeout --kill-after=10 "${PERF_TIMEOUT:-180}" "$NVMEOF_CLI" perf -t rdma -a 10.0.2.15 -s "$2" -n "$3" \
        --queue-depth "$PERF_QD" --io-size 4096 --workload randread --time "$PERF_SECONDS" --json \
        > "$RES/perf-$label.out" 2> "$RES/perf-$label.err"
    crc=$?
    info "$label bin/nvmeof perf exit code $crc after $(( $(date +%s) - t0 ))s"
    perf_cli_check "$label-perf-cli" "$RES/perf-$label.out" "$RES/perf-$label.json" "$RES/perf-$label.err" "$crc" \
        "perf summary"
}

cli_checks() { # cli_checks LABEL PORT NQN: bin/nvmeof discover, identify, write, read -t rdma (one JVM each)
    local label="$1" out
    if out="$(timeout 120 "$NVMEOF_CLI" discover -t rdma -a 10.0.2.15 -s "$2" 2>&1)" && echo "$out" | grep -q "$3"; then
        pass "$label-cli-discover"
    else
        fail "$label-cli-discover" "$(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    if out="$(timeout 120 "$NVMEOF_CLI" identify -t rdma -a 10.0.2.15 -s "$2" -n "$3" --json 2>&1)" \
        && echo "$out" | grep -q "$3"; then
        pass "$label-cli-identify"
    else
        fail "$label-cli-identify" "$(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    head -c $((1024 * 1024)) /dev/urandom > "$RES/cli-$label-out.bin"
    if out="$(timeout 120 "$NVMEOF_CLI" write -t rdma -a 10.0.2.15 -s "$2" -n "$3" --start-block 256 \
            -d "$RES/cli-$label-out.bin" 2>&1)" \
        && out="$(timeout 120 "$NVMEOF_CLI" read -t rdma -a 10.0.2.15 -s "$2" -n "$3" --start-block 256 -z 1M \
            -d "$RES/cli-$label-in.bin" 2>&1)" \
        && cmp -s "$RES/cli-$label-out.bin" "$RES/cli-$label-in.bin"; then
        pass "$label-cli-write-read"
    else
        fail "$label-cli-write-read" "$(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
}

# ---- 1. the kernel target (nvmet-rdma) ------------------------------------------------------------------------------
nvmet_clear
if nvmet_subsystem "$KNQN" "linux-nvmet-it" "kernelrdma000001" \
    && nvmet_file_ns "$KNQN" 1 "$TMPFS/rdma-kernel-ns1.img" "${SIZE_MB}M" \
    && nvmet_port 1 rdma 10.0.2.15 4420 && nvmet_link 1 "$KNQN"; then
    pass kernel-target-setup
    nvmet_show
    probe kernel 4420 "$KNQN"
    perf kernel 4420 "$KNQN"
    cli_checks kernel 4420 "$KNQN"
else
    fail kernel-target-setup "configfs setup of nvmet-rdma on 10.0.2.15:4420 failed"
fi
nvmet_clear
rm -f "$TMPFS/rdma-kernel-ns1.img"

# ---- 2. our target --------------------------------------------------------------------------------------------------
ours_config "$TMPFS/rdma-ours.json" 4421 "$ONQN" "$TMPFS/rdma-ours-ns1.img"
if ours_start "$TMPFS/rdma-ours.json" "$RES/ours-daemon.log"; then
    pass ours-target-start
    probe ours 4421 "$ONQN"
    perf ours 4421 "$ONQN"
    if ours_stop "$RES/ours-daemon.log"; then pass ours-target-stop; else fail ours-target-stop "exit code not 0/143"; fi
    if ours_log_clean "$RES/ours-daemon.log"; then
        pass ours-log-clean
    else
        fail ours-log-clean "$(grep -m3 -E ' ERROR |Exception' "$RES/ours-daemon.log" | tr '\n' ' ')"
    fi
else
    fail ours-target-start "our daemon did not start on rdma://10.0.2.15:4421"
fi
summary
