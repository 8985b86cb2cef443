#!/bin/bash
# Helpers for the NVMe-oF/RDMA guest scripts: our daemon started inside the guest on Soft-RoCE (rxe0).
# Source after lib.sh and nvmet.sh. Needs PROJECT (the repository root) and RES (the results directory).

# ours_start CONFIG LOG: starts bin/nvmeof-target --config CONFIG in the background (C1-only JVM, see
# initiator-vs-kernel-target.sh), sets OURS_PID, waits (bounded) for "target started" in LOG.
ours_start() {
    local cfg="$1" log="$2" deadline
    # The host built it before the boot; never let the launcher start Maven in here (read-only root + overlay).
    [ -d "$PROJECT/target-daemon/target/lib" ] && touch "$PROJECT/target-daemon/target/lib" 2>/dev/null
    NVMEOF4J_JAVA_OPTS="${NVMEOF4J_JAVA_OPTS:-} ${GUEST_JAVA_OPTS:--XX:TieredStopAtLevel=1} -XX:ErrorFile=$RES/hs_err_pid%p.log" \
        "$PROJECT/bin/nvmeof-target" --config "$cfg" > "$log" 2>&1 &
    OURS_PID=$!
    deadline=$(( $(date +%s) + ${OURS_START_TIMEOUT:-240} ))
    while ! grep -q "target started" "$log" 2>/dev/null; do
        if ! kill -0 "$OURS_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
            echo "INFO our daemon did not start; log tail:"; tail -n 30 "$log"
            return 1
        fi
        sleep 0.5
    done
    info "our daemon started: $(grep -m1 'target started' "$log")"
}

# ours_stop LOG: SIGTERM, waits up to 30 s, returns the exit code (143 counts as an orderly stop too).
ours_stop() {
    local log="$1" rc
    [ -n "${OURS_PID:-}" ] || return 1
    kill -TERM "$OURS_PID" 2>/dev/null
    for _ in $(seq 1 150); do kill -0 "$OURS_PID" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$OURS_PID" 2>/dev/null; then
        echo "INFO our daemon ignored SIGTERM for 30 s; killing it"; kill -KILL "$OURS_PID"
    fi
    wait "$OURS_PID" 2>/dev/null
    rc=$?
    OURS_PID=""
    [ "$rc" = 0 ] || [ "$rc" = 143 ]
}

# ours_config FILE PORT SUBNQN NSFILE [BLOCKDEV]: an nvmetcli-shaped config with one RDMA port on 10.0.2.15:PORT
# (which also answers discovery), a 64 MiB file namespace (4 KiB blocks), a 64 MiB RAM namespace (512-byte blocks)
# and, when BLOCKDEV is given, namespace 3 on that block device (O_DIRECT, the device's own block size).
# OURS_SETTINGS, when set, is the daemon's settings object (config key "nvmeof4j").
ours_config() {
    local ns3="" settings=""
    [ -n "${OURS_SETTINGS:-}" ] && settings=", \"nvmeof4j\": $OURS_SETTINGS"
    [ -n "${5:-}" ] && ns3=",
                      {\"nsid\": 3, \"enable\": 1, \"device\": {\"path\": \"$5\"}}"
    cat > "$1" <<J
{ "hosts": [],
  "ports": [ {"portid": 1, "addr": {"trtype": "rdma", "adrfam": "ipv4", "traddr": "10.0.2.15", "trsvcid": "$2"},
              "param": {"inline_data_size": "4096"}, "referrals": [], "subsystems": ["$3"]} ],
  "subsystems": [ {"nqn": "$3",
      "attr": {"allow_any_host": "1", "serial": "nvmeof4jrdmait01", "model": "nvmeof4j", "version": "1.3"},
      "allowed_hosts": [],
      "namespaces": [ {"nsid": 1, "enable": 1, "device": {"path": "$4", "size": "64M", "block_size": 4096}},
                      {"nsid": 2, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 512}}$ns3 ] } ]$settings }
J
}

# ours_log_clean LOG: no ERROR lines and no Java exception traces in our daemon's log.
ours_log_clean() {
    ! grep -E ' ERROR |Exception|^\s+at ' "$1" >/dev/null
}
