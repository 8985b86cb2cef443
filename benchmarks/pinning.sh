# shellcheck shell=bash disable=SC2034 # sets variables for the sourcing script
# Sourced by the benchmark scripts (not run): how our daemon and our perf are pinned, as SPDK pins its own tools.
# nvmf_tgt -m MASK pins only its reactors (its other threads run on the rest of its CPUs) and spdk_nvme_perf -c MASK
# likewise. Ours alike ("cpus"): the daemon gets the setting "reactor_cpus" and perf --cpus, no taskset, so the JIT,
# GC and other JVM threads run on the other CPUs instead of taking turns with a busy reactor. "taskset" is the old
# way, the whole JVM under taskset -c: for a checkout that predates reactor_cpus, or for before/after figures.

# pinning_of ROOT: "cpus" when that checkout's daemon knows reactor_cpus and its perf --cpus, else "taskset".
pinning_of() {
    if grep -q 'REACTOR_CPUS = "reactor_cpus"' \
            "$1/target-daemon/src/main/java/io/nvmeof4j/target/config/DaemonSettings.java" 2>/dev/null \
        && grep -q '"--cpus"' "$1/initiator-lib/src/main/java/io/nvmeof4j/initiator/cli/PerfCommand.java" \
            2>/dev/null; then
        echo cpus
    else
        echo taskset
    fi
}

# daemon_pinning HOW CPUS: sets daemon_pin (a command prefix for bin/nvmeof-target) and daemon_cpus_setting (a JSON
# member, with its leading comma, to put into the daemon's "nvmeof4j" settings object).
daemon_pinning() {
    if [ "$1" = cpus ]; then
        daemon_pin=()
        daemon_cpus_setting=", \"reactor_cpus\": \"$2\""
    else
        daemon_pin=(taskset -c "$2")
        daemon_cpus_setting=""
    fi
}

# perf_pinning HOW CPUS: sets perf_pin (a command prefix for bin/nvmeof perf) and perf_cpus (its options).
perf_pinning() {
    if [ "$1" = cpus ]; then
        perf_pin=()
        perf_cpus=(--cpus "$2")
    else
        perf_pin=(taskset -c "$2")
        perf_cpus=()
    fi
}
