#!/bin/bash
# The Linux kernel NVMe/TCP host sees namespaces added and removed through nvmeof4j's management API while it is
# connected: the target raises the namespace attribute changed event, the kernel reads the Changed Namespace List
# and rescans; a new block device appears (and works), a removed one disappears, all without reconnecting. Requests
# beyond the limits (RAM budget, allowed_paths, NSID above NN) are refused and the host never sees their namespace.
# Runs inside the guest as root; prints "PASS name" / "FAIL name: reason" and a SUMMARY line.
#
# Environment:
#   SUBNQN        subsystem NQN (required); it starts with namespace 1 only
#   TARGET_ADDR   target address, also of the management API (default $NVMEOF4J_HOST_ADDR: the host's forwarded
#                 127.0.0.1 ports; the daemon's http_allowed_hosts must name it)
#   TARGET_PORT   NVMe/TCP port (default 4420)
#   HTTP_PORT     the daemon's HTTP port (required): the script calls the management API itself
#   API_TOKEN     the management API's bearer token (required; the daemon's api_token_file)
#   HOSTNQN, HOSTID   passed to nvme-cli (default: generated)
#   LIVE_NQN, LIVE_PORT   optional: a subsystem, its listener and namespace 1 the daemon created live (control
#                 plane, not the configuration), allowing HOSTNQN only. The script discovers it, connects, does I/O,
#                 then allows the marker host LIVE_READY_HOST through the API: the test then removes the listener
#                 live, and the script checks that the controller is disconnected (and, with ctrl-loss-tmo 3 s, goes),
#                 and that the discovery log no longer lists the subsystem.
#   RESIZE_NSID   optional: a null namespace of SUBNQN to grow through the API (POST .../resize) to 48 MiB: the
#                 kernel must see the new size (blockdev --getsize64) after the namespace attribute notice, on the
#                 same controller; a shrink is refused (400) and changes nothing.
#   PORTID        optional: the portid of TARGET_PORT; with it a discovery referral (to REFERRAL_ADDR:8010, never
#                 contacted) is added through the API (POST /api/v1/ports/PORTID/referrals): nvme discover must list
#                 it as a referral; removed again (DELETE), nvme discover must no longer list it.
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

: "${SUBNQN:?SUBNQN is required}"
: "${HTTP_PORT:?HTTP_PORT is required}"
: "${API_TOKEN:?API_TOKEN is required}"
TARGET_ADDR="${TARGET_ADDR:-${NVMEOF4J_HOST_ADDR:-10.0.2.2}}"
TARGET_PORT="${TARGET_PORT:-4420}"
if [ -z "${HOSTID:-}" ]; then HOSTID="$(cat /proc/sys/kernel/random/uuid)"; fi
HOSTNQN="${HOSTNQN:-nqn.2014-08.org.nvmexpress:uuid:$HOSTID}"
API="http://$TARGET_ADDR:$HTTP_PORT/api/v1/subsystems/$SUBNQN/namespaces"
NEW_NSID=7
NEW_BYTES=$((32 * 1024 * 1024))

info "target tcp $TARGET_ADDR:$TARGET_PORT subsystem $SUBNQN; management API $API"
modprobe nvme-tcp 2>/dev/null
modprobe nvme-fabrics 2>/dev/null

# api METHOD URL [BODY] [CURL ARGS...]: prints "BODY HTTPSTATUS". The token goes in a header read from a file
# (-H @FILE), so it never appears in the process list.
printf 'Authorization: Bearer %s\n' "$API_TOKEN" > /tmp/api-auth.header
chmod 600 /tmp/api-auth.header
api() {
    local method="$1" url="$2" body="${3:-}" out
    shift 3 2>/dev/null || shift $#
    if [ -n "$body" ]; then
        out="$(curl -sS --max-time 30 -X "$method" -H @/tmp/api-auth.header -H 'Content-Type: application/json' \
            -d "$body" -w ' HTTP%{http_code}' "$@" "$url" 2>&1)"
    else
        out="$(curl -sS --max-time 30 -X "$method" -H @/tmp/api-auth.header -w ' HTTP%{http_code}' "$@" "$url" 2>&1)"
    fi
    echo "$out" | tr '\n' ' '
}
no_new_blockdev() { ! ns_blockdev "$SUBNQN" "$NEW_NSID" >/dev/null; }

if ! out="$(timeout 90 nvme connect -t tcp -a "$TARGET_ADDR" -s "$TARGET_PORT" -n "$SUBNQN" --hostnqn="$HOSTNQN" \
        --hostid="$HOSTID" --nr-io-queues=1 2>&1)"; then
    fail connect "nvme connect: $out"; summary; exit 1
fi
if ! wait_for 30 ns_blockdev "$SUBNQN" 1; then
    fail connect "no block device for nsid 1 within 30 s"; summary; exit 1
fi
CTRL="$(ctrls_of_subsys "$SUBNQN" | head -n1)"
CNTLID="$(cat "/sys/class/nvme/$CTRL/cntlid")"
pass connect
info "connected: $CTRL (cntlid $CNTLID), $(ns_blockdev "$SUBNQN" 1)"
if no_new_blockdev; then pass no-namespace-before; else fail no-namespace-before "nsid $NEW_NSID exists already"; fi

# ---- refused: no token, a wrong token, a foreign Host (DNS rebinding); nothing may change -----------------------
body="{\"nsid\": $NEW_NSID, \"device\": {\"backend\": \"ram\", \"size\": \"32M\"}}"
no_token="$(curl -sS --max-time 30 -X POST -H 'Content-Type: application/json' -d "$body" -w ' HTTP%{http_code}' \
    -D /tmp/no-token.headers "$API" 2>&1 | tr '\n' ' ')"
wrong_token="$(curl -sS --max-time 30 -X POST -H 'Authorization: Bearer wrong-wrong-wrong-wrong-wrong-wrong-wrong' \
    -H 'Content-Type: application/json' -d "$body" -w ' HTTP%{http_code}' "$API" 2>&1 | tr '\n' ' ')"
foreign_host="$(api POST "$API" "$body" -H 'Host: rebound.example')"
if [[ "$no_token" == *HTTP401* ]] && grep -qi '^WWW-Authenticate: Bearer' /tmp/no-token.headers \
    && [[ "$wrong_token" == *HTTP401* ]] && [[ "$foreign_host" == *HTTP421* ]] && no_new_blockdev; then
    pass api-auth-refused
else
    fail api-auth-refused "no token: $no_token; wrong token: $wrong_token; Host rebound.example: $foreign_host"
fi

# ---- refused: nothing a request outside the limits asks for ever reaches the host ------------------------------------
# (A RAM namespace beyond the memory budget, a file outside nvmeof4j.allowed_paths, an NSID above NN.)
refused_ok=yes
for body in "{\"nsid\": 8, \"device\": {\"backend\": \"ram\", \"size\": \"64T\"}}" \
            "{\"nsid\": 8, \"device\": {\"path\": \"/etc/shadow\"}}" \
            "{\"nsid\": 1025, \"device\": {\"backend\": \"ram\", \"size\": \"1M\"}}"; do
    out="$(api POST "$API" "$body")"
    case "$out" in *HTTP400*|*HTTP403*) ;; *) refused_ok=no; fail api-refused "POST $body: $out" ;; esac
done
if [ "$refused_ok" = yes ]; then pass api-refused; fi
ids="$(nvme list-ns "/dev/$CTRL" 2>&1)"
if ns_blockdev "$SUBNQN" 8 >/dev/null || ns_blockdev "$SUBNQN" 1025 >/dev/null; then
    fail refused-invisible "a block device exists for a refused namespace"
else
    case "$ids" in
        *0x8*|*0x401*) fail refused-invisible "nvme list-ns shows a refused NSID: $ids" ;;
        *0x1*) pass refused-invisible ;;
        *) fail refused-invisible "nvme list-ns: $ids" ;;
    esac
fi

# ---- add ------------------------------------------------------------------------------------------------------------
out="$(api POST "$API" "{\"nsid\": $NEW_NSID, \"device\": {\"backend\": \"ram\", \"size\": \"32M\", \"block_size\": 4096}}")"
case "$out" in *HTTP201*) pass api-add ;; *) fail api-add "POST $API: $out" ;; esac
if wait_for 60 ns_blockdev "$SUBNQN" "$NEW_NSID"; then
    DEV="$(ns_blockdev "$SUBNQN" "$NEW_NSID")"
    size=$(( $(cat "/sys/block/$(basename "$DEV")/size") * 512 ))
    if [ "$size" -eq "$NEW_BYTES" ]; then pass namespace-appeared; else fail namespace-appeared "$DEV has $size bytes, want $NEW_BYTES"; fi
    info "new namespace: $DEV ($size bytes)"
    # The same controller, never reconnected.
    now_ctrl="$(ctrls_of_subsys "$SUBNQN" | head -n1)"
    if [ "$now_ctrl" = "$CTRL" ] && [ "$(cat "/sys/class/nvme/$CTRL/cntlid")" = "$CNTLID" ] \
        && [ "$(cat "/sys/class/nvme/$CTRL/state")" = live ]; then
        pass no-reconnect
    else
        fail no-reconnect "controller now $now_ctrl cntlid $(cat "/sys/class/nvme/$now_ctrl/cntlid" 2>/dev/null)"
    fi
    # It carries I/O: 1 MiB written and read back with O_DIRECT.
    head -c $((1024 * 1024)) /dev/urandom > /tmp/hotplug.pattern
    if dd if=/tmp/hotplug.pattern of="$DEV" bs=64k oflag=direct conv=fsync status=none 2>/tmp/dd.err \
        && dd if="$DEV" of=/tmp/hotplug.back bs=64k count=16 iflag=direct status=none 2>>/tmp/dd.err \
        && cmp -s /tmp/hotplug.pattern /tmp/hotplug.back; then
        pass new-namespace-io
    else
        fail new-namespace-io "dd/cmp on $DEV: $(tr '\n' ' ' < /tmp/dd.err)"
    fi
else
    fail namespace-appeared "no block device for nsid $NEW_NSID within 60 s after the API added it"
fi

# ---- remove ---------------------------------------------------------------------------------------------------------
out="$(api DELETE "$API/$NEW_NSID")"
case "$out" in *HTTP200*) pass api-remove ;; *) fail api-remove "DELETE $API/$NEW_NSID: $out" ;; esac
if wait_for 60 no_new_blockdev; then pass namespace-disappeared; else fail namespace-disappeared "$(ns_blockdev "$SUBNQN" "$NEW_NSID") still present 60 s after the API removed it"; fi
if [ "$(ctrls_of_subsys "$SUBNQN" | head -n1)" = "$CTRL" ] && [ "$(cat "/sys/class/nvme/$CTRL/cntlid")" = "$CNTLID" ] \
    && ns_blockdev "$SUBNQN" 1 >/dev/null; then
    pass still-connected
else
    fail still-connected "controller or namespace 1 gone after the removal"
fi

# ---- resize: a null namespace grown live; the kernel picks up the new size after the notice -----------------------
if [ -n "${RESIZE_NSID:-}" ]; then
    RDEV="$(ns_blockdev "$SUBNQN" "$RESIZE_NSID")"
    RESIZED=$((48 * 1024 * 1024))
    info "resize: $RDEV ($(blockdev --getsize64 "$RDEV" 2>&1) bytes) to $RESIZED"
    out="$(api POST "$API/$RESIZE_NSID/resize" '{"size": "48M"}')"
    case "$out" in *HTTP200*) pass api-resize ;; *) fail api-resize "POST $API/$RESIZE_NSID/resize: $out" ;; esac
    grown() { [ "$(blockdev --getsize64 "$RDEV")" -eq "$RESIZED" ]; }
    if wait_for 60 grown; then
        pass namespace-resized
    else
        fail namespace-resized "$RDEV has $(blockdev --getsize64 "$RDEV" 2>&1) bytes 60 s after the resize, want $RESIZED"
    fi
    if [ "$(ctrls_of_subsys "$SUBNQN" | head -n1)" = "$CTRL" ] && [ "$(cat "/sys/class/nvme/$CTRL/cntlid")" = "$CNTLID" ]; then
        pass resize-no-reconnect
    else
        fail resize-no-reconnect "controller changed across the resize"
    fi
    out="$(api POST "$API/$RESIZE_NSID/resize" '{"size": "16M"}')"
    sleep 1
    if [[ "$out" == *HTTP400* ]] && grown; then
        pass resize-shrink-refused
    else
        fail resize-shrink-refused "POST resize 16M: $out; $RDEV has $(blockdev --getsize64 "$RDEV" 2>&1) bytes"
    fi
fi

# ---- referral: added and removed through the API, followed by nvme discover -----------------------------------------
if [ -n "${PORTID:-}" ]; then
    REFERRAL_ADDR="${REFERRAL_ADDR:-10.0.2.77}"
    REFERRALS="http://$TARGET_ADDR:$HTTP_PORT/api/v1/ports/$PORTID/referrals"
    # libnvme names SUBTYPE 1 "discovery subsystem referral" (nvme-cli's normal output: one "key: value" a line).
    referral_listed() {
        timeout 30 nvme discover -t tcp -a "$TARGET_ADDR" -s "$TARGET_PORT" --hostnqn="$HOSTNQN" --hostid="$HOSTID" \
            > /tmp/referral-discover.out 2>&1
        awk -v addr="$REFERRAL_ADDR" '/^=+Discovery Log Entry/ {sub_ = ""; svc = ""}
            /^subtype:/ {sub_ = $0} /^trsvcid:/ {svc = $2}
            /^traddr:/ && $2 == addr && sub_ ~ /referral/ && svc == "8010" {found = 1}
            END {exit found ? 0 : 1}' /tmp/referral-discover.out
    }
    out="$(api POST "$REFERRALS" "{\"name\": \"elsewhere\", \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"$REFERRAL_ADDR\", \"trsvcid\": \"8010\"}}")"
    case "$out" in *HTTP201*) pass api-referral-add ;; *) fail api-referral-add "POST $REFERRALS: $out" ;; esac
    if referral_listed; then
        pass referral-discovered
    else
        fail referral-discovered "nvme discover: $(tr '\n' ' ' < /tmp/referral-discover.out)"
    fi
    out="$(api DELETE "$REFERRALS/elsewhere")"
    case "$out" in *HTTP200*) pass api-referral-remove ;; *) fail api-referral-remove "DELETE $REFERRALS/elsewhere: $out" ;; esac
    if ! referral_listed && grep -q "subnqn" /tmp/referral-discover.out; then
        pass referral-gone
    else
        fail referral-gone "nvme discover: $(tr '\n' ' ' < /tmp/referral-discover.out)"
    fi
fi

if out="$(timeout 60 nvme disconnect -n "$SUBNQN" 2>&1)" && wait_for 30 test -z "$(ctrls_of_subsys "$SUBNQN")"; then
    pass disconnect
else
    fail disconnect "nvme disconnect: $out"
fi

# ---- a subsystem, listener and namespace created live; the listener removed live ------------------------------------
if [ -n "${LIVE_NQN:-}" ]; then
    : "${LIVE_PORT:?LIVE_PORT is required with LIVE_NQN}"
    LIVE_READY_HOST="${LIVE_READY_HOST:-nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000feed}"
    live_discovered() {
        timeout 30 nvme discover -t tcp -a "$TARGET_ADDR" -s "$TARGET_PORT" --hostnqn="$HOSTNQN" --hostid="$HOSTID" \
            > /tmp/live-discover.out 2>&1
        grep -q "subnqn: *$LIVE_NQN\$" /tmp/live-discover.out
    }
    if live_discovered && grep -q "trsvcid: *$LIVE_PORT\$" /tmp/live-discover.out; then
        pass live-discovered
    else
        fail live-discovered "nvme discover: $(tr '\n' ' ' < /tmp/live-discover.out)"
    fi
    if out="$(timeout 90 nvme connect -t tcp -a "$TARGET_ADDR" -s "$LIVE_PORT" -n "$LIVE_NQN" --hostnqn="$HOSTNQN" \
            --hostid="$HOSTID" --nr-io-queues=1 --ctrl-loss-tmo=3 --reconnect-delay=1 2>&1)" \
        && wait_for 30 ns_blockdev "$LIVE_NQN" 1; then
        pass live-connect
        LDEV="$(ns_blockdev "$LIVE_NQN" 1)"
        LCTRL="$(ctrls_of_subsys "$LIVE_NQN" | head -n1)"
        head -c $((1024 * 1024)) /dev/urandom > /tmp/live.pattern
        if dd if=/tmp/live.pattern of="$LDEV" bs=64k oflag=direct conv=fsync status=none 2>/tmp/dd.err \
            && dd if="$LDEV" of=/tmp/live.back bs=64k count=16 iflag=direct status=none 2>>/tmp/dd.err \
            && cmp -s /tmp/live.pattern /tmp/live.back; then
            pass live-io
        else
            fail live-io "dd/cmp on $LDEV: $(tr '\n' ' ' < /tmp/dd.err)"
        fi
        # Tell the test to remove the listener: allow a marker host through the API (the test watches for it).
        out="$(api POST "http://$TARGET_ADDR:$HTTP_PORT/api/v1/subsystems/$LIVE_NQN/hosts" \
            "{\"nqn\": \"$LIVE_READY_HOST\"}")"
        case "$out" in *HTTP201*) pass live-signal ;; *) fail live-signal "POST hosts: $out" ;; esac
        not_live() { [ "$(cat "/sys/class/nvme/$LCTRL/state" 2>/dev/null || echo gone)" != live ]; }
        if wait_for 60 not_live; then
            pass live-listener-removed-disconnects
        else
            fail live-listener-removed-disconnects "$LCTRL still live 60 s after the signal"
        fi
        # The port is closed: reconnects fail, and after ctrl-loss-tmo the kernel removes the controller itself.
        # (A function: wait_for re-runs it, so the controller list is read again each time.)
        live_ctrl_gone() { [ -z "$(ctrls_of_subsys "$LIVE_NQN")" ]; }
        if wait_for 60 live_ctrl_gone; then
            pass live-controller-gone
        else
            fail live-controller-gone "$(ctrls_of_subsys "$LIVE_NQN") still there; state $(cat "/sys/class/nvme/$LCTRL/state" 2>/dev/null)"
            timeout 30 nvme disconnect -n "$LIVE_NQN" >/dev/null 2>&1
        fi
        if ! live_discovered; then
            pass live-discovery-follows
        else
            fail live-discovery-follows "nvme discover still lists $LIVE_NQN: $(tr '\n' ' ' < /tmp/live-discover.out)"
        fi
    else
        fail live-connect "nvme connect to $LIVE_NQN on $LIVE_PORT: $out"
    fi
fi
summary
