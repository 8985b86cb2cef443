#!/bin/bash
# Configures the Linux kernel NVMe target (nvmet) through configfs, inside the guest.
# Source it for the nvmet_* functions, or run it:
#
#   nvmet.sh subsystem NQN [MODEL] [SERIAL]        create a subsystem with allow_any_host=1
#   nvmet.sh file-ns NQN NSID FILE [SIZE]          file-backed namespace, buffered_io=1 (FILE on a plain tmpfs)
#   nvmet.sh port PORTID TRTYPE TRADDR TRSVCID     tcp or rdma port (ipv4)
#   nvmet.sh link PORTID NQN                       expose a subsystem on a port
#   nvmet.sh rxe-up [NETDEV]                       Soft-RoCE device rxe0 on NETDEV (default eth0), for rdma ports
#   nvmet.sh simple NQN FILE SIZE TRADDR TRSVCID [TRTYPE]   all of the above for one namespace (NSID 1), port 1
#   nvmet.sh clear                                 remove every port, subsystem and namespace
#   nvmet.sh show                                  print the configuration
#
# Backing files must live on a plain tmpfs ($NVMEOF4J_GUEST_TMPFS, /nvmeof4j-tmpfs), not on the overlay root:
# there the block size reads as 1 byte and the host sees a zero-sized disk. tmpfs has no O_DIRECT, hence
# buffered_io=1.
set -o pipefail

NVMET_CFS=/sys/kernel/config/nvmet

nvmet_load() { # nvmet_load [TRTYPE]
    local t="${1:-tcp}"
    if [ ! -d /sys/kernel/config/nvmet ]; then
        grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
    fi
    modprobe nvmet || return 1
    modprobe "nvmet-$t" || return 1
    [ -d "$NVMET_CFS" ]
}

nvmet_subsystem() { # NQN [MODEL] [SERIAL]
    local model="${2:-}" serial="${3:-}" s="$NVMET_CFS/subsystems/$1"
    nvmet_load tcp || return 1
    mkdir -p "$s" || return 1
    echo 1 > "$s/attr_allow_any_host" || return 1
    if [ -n "$model" ]; then echo -n "$model" > "$s/attr_model" || return 1; fi
    if [ -n "$serial" ]; then echo -n "$serial" > "$s/attr_serial" || return 1; fi
    return 0
}

nvmet_file_ns() { # NQN NSID FILE [SIZE]
    local file="$3" size="${4:-}" n="$NVMET_CFS/subsystems/$1/namespaces/$2"
    mkdir -p "$(dirname "$file")" || return 1
    if [ -n "$size" ]; then truncate -s "$size" "$file" || return 1; fi
    [ -f "$file" ] || { echo "nvmet: no backing file $file" >&2; return 1; }
    mkdir -p "$n" || return 1
    echo -n "$file" > "$n/device_path" || return 1
    echo 1 > "$n/buffered_io" || return 1
    echo 1 > "$n/enable" || return 1
}

nvmet_port() { # PORTID TRTYPE TRADDR TRSVCID
    local t="$2" addr="$3" svc="$4" p="$NVMET_CFS/ports/$1"
    nvmet_load "$t" || return 1
    mkdir -p "$p" || return 1
    echo "$t" > "$p/addr_trtype" || return 1
    echo ipv4 > "$p/addr_adrfam" || return 1
    echo "$addr" > "$p/addr_traddr" || return 1
    echo "$svc" > "$p/addr_trsvcid" || return 1
}

nvmet_link() { # PORTID NQN
    ln -sfn "$NVMET_CFS/subsystems/$2" "$NVMET_CFS/ports/$1/subsystems/$2"
}

nvmet_rxe_up() { # [NETDEV]
    local dev="${1:-eth0}"
    # rdma_rxe needs a crc32 implementation loaded first, or "rdma link add" fails with "failed to add eth0".
    modprobe crc32_generic 2>/dev/null; modprobe crc32-pclmul 2>/dev/null
    modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm || return 1
    rdma link show 2>/dev/null | grep -q "rxe0" && return 0
    rdma link add rxe0 type rxe netdev "$dev"
}

nvmet_clear() {
    [ -d "$NVMET_CFS" ] || return 0
    local p s l n
    for p in "$NVMET_CFS"/ports/*; do
        [ -d "$p" ] || continue
        for l in "$p"/subsystems/*; do [ -L "$l" ] && rm -f "$l"; done
        for l in "$p"/referrals/*; do [ -d "$l" ] && rmdir "$l"; done
        rmdir "$p"
    done
    for s in "$NVMET_CFS"/subsystems/*; do
        [ -d "$s" ] || continue
        for l in "$s"/allowed_hosts/*; do [ -L "$l" ] && rm -f "$l"; done
        for n in "$s"/namespaces/*; do
            [ -d "$n" ] || continue
            echo 0 > "$n/enable" 2>/dev/null
            rmdir "$n"
        done
        rmdir "$s"
    done
    for s in "$NVMET_CFS"/hosts/*; do [ -d "$s" ] && rmdir "$s"; done
    return 0
}

nvmet_show() {
    [ -d "$NVMET_CFS" ] || { echo "nvmet not loaded"; return 0; }
    local p s n
    for p in "$NVMET_CFS"/ports/*; do
        [ -d "$p" ] || continue
        echo "port $(basename "$p"): $(cat "$p/addr_trtype") $(cat "$p/addr_traddr"):$(cat "$p/addr_trsvcid")" \
             "-> $(ls "$p/subsystems" | tr '\n' ' ')"
    done
    for s in "$NVMET_CFS"/subsystems/*; do
        [ -d "$s" ] || continue
        echo "subsystem $(basename "$s") model=$(cat "$s/attr_model" 2>/dev/null) serial=$(cat "$s/attr_serial")"
        for n in "$s"/namespaces/*; do
            [ -d "$n" ] || continue
            echo "  ns $(basename "$n"): $(cat "$n/device_path") enable=$(cat "$n/enable") buffered_io=$(cat "$n/buffered_io")"
        done
    done
}

nvmet_simple() { # NQN FILE SIZE TRADDR TRSVCID [TRTYPE] [MODEL] [SERIAL]
    local t="${6:-tcp}"
    [ "$t" = rdma ] && { nvmet_rxe_up || return 1; }
    nvmet_load "$t" && nvmet_subsystem "$1" "${7:-}" "${8:-}" && nvmet_file_ns "$1" 1 "$2" "$3" \
        && nvmet_port 1 "$t" "$4" "$5" && nvmet_link 1 "$1"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cmd="${1:-}"; shift || true
    case "$cmd" in
        subsystem) nvmet_subsystem "$@" ;;
        file-ns) nvmet_file_ns "$@" ;;
        port) nvmet_port "$@" ;;
        link) nvmet_link "$@" ;;
        rxe-up) nvmet_rxe_up "$@" ;;
        simple) nvmet_simple "$@" ;;
        clear) nvmet_clear ;;
        show) nvmet_show ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
    esac
fi
