#!/bin/bash
# DH-HMAC-CHAP against Linux 6.12 (the bookworm-backports kernel: CONFIG_NVME_HOST_AUTH, CONFIG_NVME_TARGET_AUTH),
# all in ONE guest boot (run-guest.sh --kernel 6.12):
#   A. the Linux host (nvme-cli --dhchap-secret / --dhchap-ctrl-secret) against our daemon on the host machine at
#      $TARGET_ADDR:$TARGET_PORT: one host NQN per case, each with its own hash and DH group in the daemon's
#      configuration ($CASES); connect, fio write+verify, disconnect; a wrong secret and a wrong controller secret
#      refused;
#   B. our initiator (io.nvmeof4j.it.vm.AuthProbe, run with the host's JDK through 9p) against nvmet in the guest
#      with dhchap_key / dhchap_ctrl_key / dhchap_hash / dhchap_dhgroup per host: connect, verified I/O on every
#      I/O queue, wrong key refused.
# Prints PASS/FAIL lines and a SUMMARY; exits non-zero on any failure. LinuxKernel612IT runs it (through linux612.sh).
#
# Environment: TARGET_ADDR [10.0.2.2], TARGET_PORT, SUBNQN, CASES (A: "name|hostnqn|hostid|secret|ctrlsecret|hash|
# dhgroup" entries separated by spaces; ctrlsecret "-" for none; hash and dhgroup as the target is configured for that
# host), WRONG_SECRET (a valid secret no host has), PROBE_CP (B: test classpath), JAVA_BIN, KT_PORT [4420], KT_SUBNQN,
# KT_CASES (B, the same shape), FIO_SIZE [8M].
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib.sh"
. "$HERE/nvmet.sh"

TARGET_ADDR="${TARGET_ADDR:-10.0.2.2}"
FIO_SIZE="${FIO_SIZE:-8M}"
KT_PORT="${KT_PORT:-4420}"
KT_SUBNQN="${KT_SUBNQN:-nqn.2014-08.io.nvmeof4j:kernel-auth-it}"
RES="${RESULTS_DIR:-/tmp}"
if [ -z "${JAVA_BIN:-}" ]; then
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then JAVA_BIN="$JAVA_HOME/bin/java"; else JAVA_BIN=java; fi
fi
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

info "kernel $(uname -r); nvme-cli $(nvme version 2>/dev/null | head -n1)"
case "$(uname -r)" in 6.12*) pass kernel-6.12 ;; *) fail kernel-6.12 "booted $(uname -r), not the 6.12 kernel" ;; esac
modprobe nvme-tcp 2>/dev/null
modprobe nvme-fabrics 2>/dev/null

# ---- A. Linux host -> our target ------------------------------------------------------------------------------------
gone() { test -z "$(ctrls_of_subsys "$SUBNQN")"; }

# The Linux host logs what it negotiated on the admin queue ("qid 0: authenticated with hash hmac(sha384) dhgroup
# ffdhe2048", and "qid 0: controller authenticated" when it checked the controller): counting those lines before
# and after a connect proves which hash and group our target chose, and that bidirectional really was.
auth_lines() { dmesg | grep -c -F "qid 0: $1" ; }

host_case() { # host_case NAME HOSTNQN HOSTID SECRET CTRLSECRET [HASH DHGROUP]
    local name="$1" hostnqn="$2" hostid="$3" secret="$4" ctrl="$5" hash="${6:-}" dhgroup="${7:-}" out dev ctl
    local negotiated_before ctrl_before
    negotiated_before="$(auth_lines "authenticated with hash $hash dhgroup $dhgroup")"
    ctrl_before="$(auth_lines "controller authenticated")"
    local args=(-t tcp -a "$TARGET_ADDR" -s "$TARGET_PORT" -n "$SUBNQN" --hostnqn="$hostnqn" --hostid="$hostid"
                --nr-io-queues=2 --dhchap-secret="$secret")
    [ "$ctrl" != - ] && args+=(--dhchap-ctrl-secret="$ctrl")
    if ! out="$(timeout 120 nvme connect "${args[@]}" 2>&1)"; then
        fail "host-$name" "nvme connect: $out"; return 1
    fi
    if ! wait_for 30 ns_blockdev "$SUBNQN" 1; then
        fail "host-$name" "connected but no block device within 30 s ($out)"; timeout 60 nvme disconnect -n "$SUBNQN" >/dev/null 2>&1
        return 1
    fi
    dev="$(ns_blockdev "$SUBNQN" 1)"
    ctl="$(ctrls_of_subsys "$SUBNQN" | head -n1)"
    pass "host-$name"
    if [ -n "$hash" ]; then
        if [ "$(auth_lines "authenticated with hash $hash dhgroup $dhgroup")" -gt "$negotiated_before" ]; then
            pass "negotiated-$name"
        else
            fail "negotiated-$name" "no 'qid 0: authenticated with hash $hash dhgroup $dhgroup' in dmesg: $(dmesg | grep 'qid 0: ' | tail -n 2 | tr '\n' ' ')"
        fi
        if [ "$ctrl" != - ]; then
            if [ "$(auth_lines "controller authenticated")" -gt "$ctrl_before" ]; then pass "controller-authenticated-$name"
            else fail "controller-authenticated-$name" "the host did not log 'qid 0: controller authenticated'"; fi
        fi
    fi
    info "host-$name: $ctl $dev; sysfs dhchap_secret set: $([ -s "/sys/class/nvme/$ctl/dhchap_secret" ] && echo yes || echo no) ($(elapsed))"
    if out="$(timeout 120 fio --name="auth-$name" --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
              --iodepth=8 --numjobs=1 --size="$FIO_SIZE" --verify=crc32c --do_verify=1 --verify_fatal=1 \
              --randrepeat=0 --output-format=terse 2>&1)"; then
        pass "fio-verify-$name"
    else
        fail "fio-verify-$name" "$(echo "$out" | tail -n 5 | tr '\n' ' ')"
    fi
    timeout 60 nvme disconnect -n "$SUBNQN" >/dev/null 2>&1
    if wait_for 30 gone; then pass "disconnect-$name"; else fail "disconnect-$name" "controller still present"; fi
}

host_refused() { # host_refused NAME HOSTNQN HOSTID SECRET CTRLSECRET
    local name="$1" hostnqn="$2" hostid="$3" secret="$4" ctrl="$5" out rc
    local args=(-t tcp -a "$TARGET_ADDR" -s "$TARGET_PORT" -n "$SUBNQN" --hostnqn="$hostnqn" --hostid="$hostid"
                --nr-io-queues=1 --dhchap-secret="$secret")
    [ "$ctrl" != - ] && args+=(--dhchap-ctrl-secret="$ctrl")
    out="$(timeout 120 nvme connect "${args[@]}" 2>&1)"; rc=$?
    sleep 1
    if [ "$rc" != 0 ] && gone; then
        pass "refused-$name"
        info "refused-$name: nvme connect exit $rc: $(echo "$out" | tail -n 2 | tr '\n' ' '); dmesg: $(dmesg | grep -i -E 'auth|dhchap' | tail -n 2 | tr '\n' ' ')"
    else
        fail "refused-$name" "nvme connect exit $rc, controllers: $(ctrls_of_subsys "$SUBNQN" | tr '\n' ' '): $out"
        timeout 60 nvme disconnect -n "$SUBNQN" >/dev/null 2>&1
    fi
}

if [ -n "${CASES:-}" ]; then
    if wait_tcp_port "$TARGET_ADDR" "$TARGET_PORT" 30; then pass target-reachable; else fail target-reachable "$TARGET_ADDR:$TARGET_PORT"; fi
    first=""
    for c in $CASES; do
        IFS='|' read -r name hostnqn hostid secret ctrl hash dhgroup <<< "$c"
        [ -z "$first" ] && first="$c"
        host_case "$name" "$hostnqn" "$hostid" "$secret" "$ctrl" "$hash" "$dhgroup"
    done
    IFS='|' read -r name hostnqn hostid secret ctrl hash dhgroup <<< "$first"
    host_refused wrong-secret "$hostnqn" "$hostid" "$WRONG_SECRET" -
    host_refused wrong-ctrl-secret "$hostnqn" "$hostid" "$secret" "$WRONG_SECRET"
    # After the refusals the same host still gets in with the right secret: the daemon kept serving.
    host_case after-refusals "$hostnqn" "$hostid" "$secret" "$ctrl"
fi

# ---- B. our initiator -> the Linux 6.12 target --------------------------------------------------------------------
nvmet_auth_host() { # HOSTNQN SECRET CTRLSECRET HASH DHGROUP: a host entry with DH-HMAC-CHAP, allowed on KT_SUBNQN
    local h="$NVMET_CFS/hosts/$1"
    mkdir -p "$h" || return 1
    echo -n "$2" > "$h/dhchap_key" || return 1
    [ "$3" != - ] && { echo -n "$3" > "$h/dhchap_ctrl_key" || return 1; }
    echo -n "$4" > "$h/dhchap_hash" || return 1
    echo -n "$5" > "$h/dhchap_dhgroup" || return 1
    ln -s "$h" "$NVMET_CFS/subsystems/$KT_SUBNQN/allowed_hosts/$1" || return 1
}

if [ -n "${KT_CASES:-}" ]; then
    nvmet_clear
    ok=1
    nvmet_subsystem "$KT_SUBNQN" "linux-nvmet-auth" "kernelauth000001" || ok=0
    # nvmet authenticates only hosts it finds in allowed_hosts (allow_any_host skips DH-HMAC-CHAP altogether).
    echo 0 > "$NVMET_CFS/subsystems/$KT_SUBNQN/attr_allow_any_host" || ok=0
    nvmet_file_ns "$KT_SUBNQN" 1 "${NVMEOF4J_GUEST_TMPFS:-/nvmeof4j-tmpfs}/auth-ns1.img" 32M || ok=0
    probe_args=()
    for c in $KT_CASES; do
        IFS='|' read -r name hostnqn hostid secret ctrl hash dhgroup <<< "$c"
        nvmet_auth_host "$hostnqn" "$secret" "$ctrl" "$hash" "$dhgroup" || ok=0
        probe_args+=("$c")
    done
    nvmet_port 1 tcp 127.0.0.1 "$KT_PORT" && nvmet_link 1 "$KT_SUBNQN" || ok=0
    if [ "$ok" = 1 ] && wait_tcp_port 127.0.0.1 "$KT_PORT" 20; then pass kernel-target-auth-setup; else
        fail kernel-target-auth-setup "nvmet configfs setup failed"; fi
    # The wrong-key case: the first host with a secret nvmet does not hold.
    IFS='|' read -r name hostnqn hostid secret ctrl hash dhgroup <<< "${KT_CASES%% *}"
    probe_args+=("wrong-key|$hostnqn|$hostid|$WRONG_SECRET|-|refuse|-")
    t0=$(date +%s)
    timeout --kill-after=10 "${PROBE_TIMEOUT:-300}" "$JAVA_BIN" -XX:ErrorFile="$RES/hs_err_pid%p.log" -XX:+UseSerialGC \
        -Xms32m -Xmx256m -XX:TieredStopAtLevel=1 -cp "$PROBE_CP" io.nvmeof4j.it.vm.AuthProbe 127.0.0.1 "$KT_PORT" \
        "$KT_SUBNQN" "${probe_args[@]}" 2>&1 | tee "$RES/auth-probe.log" | grep -E '^(PASS|FAIL|INFO)|Exception|^\s+at ' | head -n 200
    prc=${PIPESTATUS[0]}
    info "auth probe exit code $prc after $(( $(date +%s) - t0 ))s"
    if [ "$prc" = 0 ]; then pass auth-probe; else fail auth-probe "AuthProbe exit code $prc (124 = timed out)"; fi
    nvmet_clear
fi

summary
