# Sourced by bin/test and deploy/build-image.sh: makes sure a Docker engine answers on this machine.
# Usage: ensure_docker_engine CALLER
#
# - Installs Debian's docker.io when no engine answers and the package is missing (root; otherwise prints
#   the apt-get command and fails), through ensure_packages from bin/lib/packages.sh.
# - When `docker info` does not answer and we are root, starts dockerd in the background as this machine's engine:
#   `--bridge=none --iptables=false` (no docker0 bridge, no NAT rules: our containers use host networking, and
#   the machine's firewall stays as it is), pid file and log under $NVMEOF4J_DOCKER_CACHE
#   (default ~/.cache/nvmeof4j-docker), then waits (bounded) until `docker info` answers. The engine is left
#   running for the next run and for other users of the machine; stop it with: kill "$(cat <cache>/dockerd.pid)".
# - Never starts a second engine: a lock serialises concurrent callers, and a live pid in the pid file or an
#   answering socket counts as running.
# An engine that runs already (systemd's docker.service, a CI service) is used as it is.

NVMEOF4J_DOCKER_CACHE="${NVMEOF4J_DOCKER_CACHE:-${HOME:-/root}/.cache/nvmeof4j-docker}"
# How long to wait for a starting engine to answer, seconds.
NVMEOF4J_DOCKER_START_TIMEOUT="${NVMEOF4J_DOCKER_START_TIMEOUT:-90}"

docker_answers() {
    timeout 20 docker info >/dev/null 2>&1
}

ensure_docker_engine() {
    local caller=$1
    command -v docker >/dev/null 2>&1 && docker_answers && return 0
    ensure_packages "$caller" docker.io
    docker_answers && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$caller: the Docker engine does not answer (docker info); start it (as root: systemctl start docker," \
            "or bin/test, which starts dockerd --bridge=none --iptables=false) or add this user to group docker" >&2
        exit 1
    fi
    mkdir -p "$NVMEOF4J_DOCKER_CACHE"
    local pidfile="$NVMEOF4J_DOCKER_CACHE/dockerd.pid" log="$NVMEOF4J_DOCKER_CACHE/dockerd.log"
    (
        # One starter at a time; the others wait here and then find the engine answering.
        flock -w "$NVMEOF4J_DOCKER_START_TIMEOUT" 9 || { echo "$caller: timed out waiting for $NVMEOF4J_DOCKER_CACHE/.engine.lock" >&2; exit 1; }
        docker_answers && exit 0
        local pid=""
        [ -f "$pidfile" ] && pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null; then
            echo "$caller: dockerd (pid $pid) is running but does not answer yet; waiting" >&2
        else
            # dockerd writes its own pid file (/var/run/docker.pid) too and refuses to start while that names a
            # live process; a stale one (after a reboot) it replaces.
            echo "$caller: starting dockerd --bridge=none --iptables=false (log: $log)" >&2
            # The engine outlives this run: it must not inherit (and so hold for its whole life) any descriptor
            # beyond stdio, such as the start-up lock (9) or a caller's `flock FILE bin/test` lock (seen: a
            # left-behind dockerd held the guest lock, and every later guest run waited on it).
            (
                for fd in /proc/"$BASHPID"/fd/*; do
                    fd=${fd##*/}
                    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
                done
                exec setsid dockerd --bridge=none --iptables=false --ip-masq=false >>"$log" 2>&1 < /dev/null
            ) &
            echo $! >"$pidfile"
            pid=$!
        fi
        local deadline=$((SECONDS + NVMEOF4J_DOCKER_START_TIMEOUT))
        until docker_answers; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "$caller: dockerd exited while starting; the end of $log:" >&2
                tail -n 20 "$log" >&2
                exit 1
            fi
            if [ "$SECONDS" -ge "$deadline" ]; then
                echo "$caller: dockerd (pid $pid) did not answer within ${NVMEOF4J_DOCKER_START_TIMEOUT} s; the end of $log:" >&2
                tail -n 20 "$log" >&2
                exit 1
            fi
            sleep 1
        done
        echo "$caller: dockerd (pid $pid) is up" >&2
    ) 9>"$NVMEOF4J_DOCKER_CACHE/.engine.lock"
}
