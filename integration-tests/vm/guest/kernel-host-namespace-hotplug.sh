#!/bin/bash
# The Linux kernel NVMe/TCP host sees namespaces added and removed through nvmeof4j's management API while it is
# connected: the target raises the namespace attribute changed event, the kernel reads the Changed Namespace List
# and rescans; a new block device appears (and works), a removed one disappears, all without reconnecting. Requests
# beyond the limits (RAM budget, allowed_paths, NSID above NN) are refused and the host never sees their namespace.
# Runs inside the guest as root; prints "PASS name" / "FAIL name: reason" and a SUMMARY line.
#
# Environment:
#   SUBNQN        subsystem NQN (required); it starts with namespace 1 only
#   TARGET_ADDR   target address (default 10.0.2.2 = the host's 127.0.0.1)
#   TARGET_PORT   NVMe/TCP port (default 4420)
#   HTTP_PORT     the daemon's HTTP port (required): the script calls the management API itself
#   API_TOKEN     the management API's bearer token (required; the daemon's api_token_file)
#   HOSTNQN, HOSTID   passed to nvme-cli (default: generated)
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

: "${SUBNQN:?SUBNQN is required}"
: "${HTTP_PORT:?HTTP_PORT is required}"
: "${API_TOKEN:?API_TOKEN is required}"
TARGET_ADDR="${TARGET_ADDR:-10.0.2.2}"
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

if out="$(timeout 60 nvme disconnect -n "$SUBNQN" 2>&1)" && wait_for 30 test -z "$(ctrls_of_subsys "$SUBNQN")"; then
    pass disconnect
else
    fail disconnect "nvme disconnect: $out"
fi
summary
