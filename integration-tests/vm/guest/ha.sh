#!/bin/bash
# High-availability checks of the Linux kernel host against our daemon(s): sourced by kernel-host-vs-target.sh, which
# runs them as the phases ha-ana, ha-failover, resv-setup and resv-check (one guest boot for all of them).
#
# Environment (besides kernel-host-vs-target.sh's):
#   HA_NQN             subsystem served by daemon A on two ports (HA_A1_PORT optimized, HA_A2_PORT non-optimized)
#                      and by daemon B (HA_B_PORT) from the same shared file
#   HA_A1_PORT, HA_A2_PORT, HA_B_PORT (named *_PORT: run-guest.sh forwards those to $NVMEOF4J_HOST_ADDR)
#   HA_HTTP_PORT       daemon A's management API port; API_URL defaults to http://$TARGET_ADDR:HA_HTTP_PORT
#   API_TOKEN          its bearer token
#   HA_KILL_MARKER     ha-failover: file this script creates to ask the host to SIGKILL daemon B (and restart it)
#   RESV_NQN           subsystem with one file namespace for the reservation checks: host 1 connects through
#                      TARGET_PORT, host 2 through RESV_PORT2 (nvme-cli 2.3 refuses a second connect to the same
#                      address and subsystem whatever the host NQN, even with --duplicate-connect)
#   HOSTNQN2, HOSTID2  the second host identity for the reservation checks

HA_FIO_SIZE="${HA_FIO_SIZE:-32M}"
HA_KILL_MARKER="${HA_KILL_MARKER:-${RESULTS_DIR:-/tmp}/ha-kill-b}"

ha_connect() { # ha_connect NQN PORT HOSTNQN HOSTID: prints the new controller name
    local nqn="$1" port="$2" hnqn="$3" hid="$4" before after c
    before="$(ctrls_of_subsys "$nqn" | sort)"
    timeout 90 nvme connect -t tcp -a "$TARGET_ADDR" -s "$port" -n "$nqn" --hostnqn="$hnqn" --hostid="$hid" \
        --nr-io-queues=1 --reconnect-delay=1 --ctrl-loss-tmo=120 >&2 || return 1
    for _ in $(seq 1 100); do
        after="$(ctrls_of_subsys "$nqn" | sort)"
        c="$(comm -13 <(echo "$before") <(echo "$after") | head -n 1)"
        [ -n "$c" ] && { echo "$c"; return 0; }
        sleep 0.2
    done
    return 1
}

ctrl_port() { # trsvcid of controller NAME
    tr ',' '\n' < "/sys/class/nvme/$1/address" | sed -n 's/^trsvcid=//p'
}

path_ana_state() { # ana_state of the path of controller CTRL to namespace 1 (multipath: nvmeXcYn1)
    local ctrl="$1" p
    for p in /sys/class/nvme/"$ctrl"/nvme*c*n1; do
        [ -e "$p/ana_state" ] && { cat "$p/ana_state"; return 0; }
    done
    return 1
}

api_put_ana() { # api_put_ana PORTID GRPID STATE
    local url="${API_URL:-http://$TARGET_ADDR:$HA_HTTP_PORT}"
    curl -s -o /dev/null -w '%{http_code}' --max-time 20 -X PUT -H "Authorization: Bearer $API_TOKEN" \
        -H 'Content-Type: application/json' -d "{\"state\": \"$3\"}" "$url/api/v1/ports/$1/ana_groups/$2"
}

ha_fio() { # ha_fio NAME DEV LOOPS: write + crc32c verify; prints fio's exit code when done (run in background)
    timeout 600 fio --name="$1" --filename="$2" --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=16 \
        --size="$HA_FIO_SIZE" --loops="$3" --verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 \
        --output="${RESULTS_DIR:-/tmp}/$1.fio.txt" >/dev/null 2>&1
}

ha_fio_errors() { # the error lines of a fio output file, if any
    grep -iE 'err=[ ]*[1-9]|verify:|bad magic|crc32c|io_u error' "${RESULTS_DIR:-/tmp}/$1.fio.txt" 2>/dev/null \
        | grep -v 'err= 0' | head -n 5
}

phase_ha_ana() { # two ports of one daemon: both paths with their ANA states; a path goes inaccessible and back under fio
    local c1 c2 dev fio_pid rc out
    timeout 60 nvme disconnect -n "$HA_NQN" >/dev/null 2>&1
    c1="$(ha_connect "$HA_NQN" "$HA_A1_PORT" "$HOSTNQN" "$HOSTID")" || { fail "ha-connect-two-ports" "connect to $HA_A1_PORT failed"; return 1; }
    c2="$(ha_connect "$HA_NQN" "$HA_A2_PORT" "$HOSTNQN" "$HOSTID")" || { fail "ha-connect-two-ports" "connect to $HA_A2_PORT failed"; return 1; }
    pass "ha-connect-two-ports"
    if ! wait_for 20 ns_blockdev "$HA_NQN" 1; then fail "ha-one-namespace-two-paths" "no block device"; return 1; fi
    dev="$(ns_blockdev "$HA_NQN" 1)"
    out="$(nvme list-subsys "$dev" 2>&1)"
    info "list-subsys: $(echo "$out" | tr '\n' ' ')"
    if [ "$(echo "$out" | grep -c ' live')" -ge 2 ] && echo "$out" | grep -q ' live optimized' \
        && echo "$out" | grep -q ' live non-optimized'; then
        pass "ha-list-subsys-two-paths-ana"
    else
        fail "ha-list-subsys-two-paths-ana" "expected two live paths, optimized and non-optimized: $out"
    fi
    if [ "$(path_ana_state "$c1")" = optimized ] && [ "$(path_ana_state "$c2")" = non-optimized ]; then
        pass "ha-sysfs-ana-states"
    else
        fail "ha-sysfs-ana-states" "$c1: $(path_ana_state "$c1"), $c2: $(path_ana_state "$c2")"
    fi
    ha_fio ha-ana-fio "$dev" 3 &
    fio_pid=$!
    sleep 3
    rc="$(api_put_ana 1 "${HA_GRPID:-1}" inaccessible)"
    if [ "$rc" = 200 ] && wait_for 30 bash -c "[ \"\$(cat /sys/class/nvme/$c1/nvme*c*n1/ana_state)\" = inaccessible ]"; then
        pass "ha-ana-inaccessible-seen-by-host"
    else
        fail "ha-ana-inaccessible-seen-by-host" "PUT answered $rc; $c1 ana_state $(path_ana_state "$c1")"
    fi
    sleep 5
    rc="$(api_put_ana 1 "${HA_GRPID:-1}" optimized)"
    if [ "$rc" = 200 ] && wait_for 30 bash -c "[ \"\$(cat /sys/class/nvme/$c1/nvme*c*n1/ana_state)\" = optimized ]"; then
        pass "ha-ana-optimized-again"
    else
        fail "ha-ana-optimized-again" "PUT answered $rc; $c1 ana_state $(path_ana_state "$c1")"
    fi
    if wait "$fio_pid"; then
        pass "ha-ana-fio-verify-no-error"
    else
        fail "ha-ana-fio-verify-no-error" "fio failed: $(ha_fio_errors ha-ana-fio | tr '\n' ' ')"
    fi
    timeout 60 nvme disconnect -n "$HA_NQN" >/dev/null 2>&1
    wait_for 30 test -z "$(ctrls_of_subsys "$HA_NQN")"
}

phase_ha_failover() { # daemons A and B on one shared file; B is SIGKILLed by the host under fio, then rejoins
    local ca cb dev fio_pid s
    timeout 60 nvme disconnect -n "$HA_NQN" >/dev/null 2>&1
    ca="$(ha_connect "$HA_NQN" "$HA_A1_PORT" "$HOSTNQN" "$HOSTID")" || { fail "ha-two-daemons-connect" "daemon A"; return 1; }
    cb="$(ha_connect "$HA_NQN" "$HA_B_PORT" "$HOSTNQN" "$HOSTID")" || { fail "ha-two-daemons-connect" "daemon B"; return 1; }
    if [ "$(cat "/sys/class/nvme/$ca/cntlid")" != "$(cat "/sys/class/nvme/$cb/cntlid")" ] \
        && wait_for 20 ns_blockdev "$HA_NQN" 1; then
        pass "ha-two-daemons-one-subsystem"
    else
        fail "ha-two-daemons-one-subsystem" "cntlids $(cat "/sys/class/nvme/$ca/cntlid") / $(cat "/sys/class/nvme/$cb/cntlid")"
        return 1
    fi
    dev="$(ns_blockdev "$HA_NQN" 1)"
    # Spread I/O over both paths so daemon B has I/O in flight when it dies.
    for s in /sys/class/nvme-subsystem/nvme-subsys*; do
        [ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$HA_NQN" ] && echo round-robin > "$s/iopolicy" 2>/dev/null
    done
    info "failover: $dev over $ca (port $(ctrl_port "$ca")) and $cb (port $(ctrl_port "$cb"))"
    ha_fio ha-failover-fio "$dev" 4 &
    fio_pid=$!
    sleep 2
    : > "$HA_KILL_MARKER"
    info "asked the host to SIGKILL daemon B ($HA_KILL_MARKER)"
    if wait "$fio_pid"; then
        pass "ha-failover-fio-verify-no-error"
    else
        fail "ha-failover-fio-verify-no-error" "fio failed: $(ha_fio_errors ha-failover-fio | tr '\n' ' ')"
    fi
    if grep -q 'daemon B killed' "$HA_KILL_MARKER.done" 2>/dev/null || wait_for 60 test -e "$HA_KILL_MARKER.done"; then
        info "host: $(cat "$HA_KILL_MARKER.done" 2>/dev/null)"
    fi
    if wait_for 120 bash -c "[ \"\$(cat /sys/class/nvme/$cb/state)\" = live ]"; then
        pass "ha-failover-restarted-daemon-rejoins"
    else
        fail "ha-failover-restarted-daemon-rejoins" "$cb state $(cat "/sys/class/nvme/$cb/state" 2>/dev/null)"
    fi
    timeout 60 nvme disconnect -n "$HA_NQN" >/dev/null 2>&1
    wait_for 30 test -z "$(ctrls_of_subsys "$HA_NQN")"
}

RESV_C1=""
RESV_C2=""
resv_connect_both() {
    timeout 60 nvme disconnect -n "$RESV_NQN" >/dev/null 2>&1
    RESV_C1="$(ha_connect "$RESV_NQN" "$TARGET_PORT" "$HOSTNQN" "$HOSTID")" || return 1
    RESV_C2="$(ha_connect "$RESV_NQN" "${RESV_PORT2:-$TARGET_PORT}" "$HOSTNQN2" "$HOSTID2")" || return 1
    # I/O commands go to one controller's namespace through its character device (one namespace per controller).
    wait_for 20 test -c "/dev/$RESV_C1" && wait_for 20 test -c "/dev/$RESV_C2"
}

resv_write() { # resv_write CTRL: a one-block Write through that controller; prints nvme-cli's output
    head -c 4096 /dev/zero > /tmp/resv-block
    timeout 30 nvme io-passthru "/dev/$1" --opcode=0x01 --namespace-id=1 --data-len=4096 --write \
        --input-file=/tmp/resv-block --cdw10=0 --cdw11=0 --cdw12=0 2>&1
}

resv_expect_conflict() { # NAME CTRL
    local out
    if out="$(resv_write "$2")"; then
        fail "$1" "the write succeeded: $out"
    elif echo "$out" | grep -qiE 'conflict|0x83|0x4083'; then
        pass "$1"
    else
        fail "$1" "failed, but not with Reservation Conflict: $out"
    fi
}

resv_report_field() { # resv_report_field CTRL FIELD
    timeout 30 nvme resv-report "/dev/$1" --namespace-id=1 --eds 2>&1 | nvme_field "$2"
}

phase_resv_setup() { # two hosts register, host 1 takes Write Exclusive with PTPL; host 2's write conflicts
    resv_connect_both || { fail "resv-connect-two-hosts" "connect failed"; return 1; }
    pass "resv-connect-two-hosts"
    check "resv-register-host1" timeout 30 nvme resv-register "/dev/$RESV_C1" --namespace-id=1 --nrkey=0xAAAA --rrega=0 --cptpl=3
    check "resv-register-host2" timeout 30 nvme resv-register "/dev/$RESV_C2" --namespace-id=1 --nrkey=0xBBBB --rrega=0
    check "resv-acquire-host1" timeout 30 nvme resv-acquire "/dev/$RESV_C1" --namespace-id=1 --crkey=0xAAAA --rtype=1 --racqa=0
    local rtype regctl
    rtype="$(resv_report_field "$RESV_C2" rtype)"; regctl="$(resv_report_field "$RESV_C2" regctl)"
    if [ "$rtype" = 1 ] && [ "$regctl" = 2 ]; then pass "resv-report"; else
        fail "resv-report" "rtype '$rtype' regctl '$regctl': $(timeout 30 nvme resv-report "/dev/$RESV_C2" --namespace-id=1 --eds 2>&1 | tr '\n' ' ')"
    fi
    resv_expect_conflict "resv-non-holder-write-conflict" "$RESV_C2"
    check "resv-holder-write" resv_write "$RESV_C1"
    timeout 60 nvme disconnect -n "$RESV_NQN" >/dev/null 2>&1
}

phase_resv_check() { # after the daemon restarted: the reservation is still there; host 2 preempts and aborts host 1
    resv_connect_both || { fail "resv-connect-after-restart" "connect failed"; return 1; }
    local rtype ptpls
    rtype="$(resv_report_field "$RESV_C2" rtype)"; ptpls="$(resv_report_field "$RESV_C2" ptpls)"
    if [ "$rtype" = 1 ] && [ "$ptpls" = 1 ]; then pass "resv-survives-restart"; else
        fail "resv-survives-restart" "rtype '$rtype' ptpls '$ptpls'"
    fi
    resv_expect_conflict "resv-conflict-after-restart" "$RESV_C2"
    # Preempt and Abort (RACQA 2) as the Linux host sends it: host 1 loses its registration and the reservation.
    check "resv-preempt-abort-host2" timeout 30 nvme resv-acquire "/dev/$RESV_C2" --namespace-id=1 --crkey=0xBBBB \
        --prkey=0xAAAA --rtype=1 --racqa=2
    resv_expect_conflict "resv-preempted-host1-conflict" "$RESV_C1"
    check "resv-write-after-preempt" resv_write "$RESV_C2"
    check "resv-release-host2" timeout 30 nvme resv-release "/dev/$RESV_C2" --namespace-id=1 --crkey=0xBBBB --rtype=1 --rrela=0
    check "resv-write-after-release" resv_write "$RESV_C1"
    check "resv-unregister" timeout 30 nvme resv-register "/dev/$RESV_C2" --namespace-id=1 --crkey=0xBBBB --rrega=1
    timeout 60 nvme disconnect -n "$RESV_NQN" >/dev/null 2>&1
}
