# Sourced by bin/nvmeof and bin/nvmeof-target. Usage: ensure_built CALLER MODULE ROOT
# Builds MODULE of the tree at ROOT (mvn -pl MODULE -am package) when its runtime classpath (ROOT/MODULE/target/classes
# and target/lib) is missing, or when any module's main sources or any POM changed since. Inside the QEMU guest
# (NVMEOF4J_IN_GUEST=1: the host's tree, read-only, which the host builds before the boot) it never builds: a build
# older than the sources (a source edited on the host during a guest run) is run as it is, with a warning.
ensure_built() {
    local caller=$1 module=$2 root=$3
    local classes="$root/$module/target/classes" lib="$root/$module/target/lib" stale=
    if [ ! -d "$classes" ] || [ ! -d "$lib" ]; then
        stale="missing"
    elif [ -n "$(find "$root"/*/src/main -newer "$lib" -print -quit 2>/dev/null)" ] \
        || [ -n "$(find "$root" -maxdepth 2 -name pom.xml -newer "$lib" -print -quit 2>/dev/null)" ]; then
        stale="older than the sources"
    fi
    [ -z "$stale" ] && return 0
    if [ "${NVMEOF4J_IN_GUEST:-0}" = 1 ]; then
        if [ "$stale" = missing ]; then
            echo "$caller: $module is not built in $root, and the guest does not build (build it on the host)" >&2
            exit 1
        fi
        echo "$caller: the build of $module is older than the sources; running it (the guest does not build)" >&2
        return 0
    fi
    echo "$caller: building (mvn -pl $module -am package)..." >&2
    # (Maven 3.8 prints stray ANSI resets even in batch mode; the sed drops them. pipefail keeps mvn's status.)
    if ! (cd "$root" && mvn -q -B -ntp -DskipTests -pl "$module" -am package) 2>&1 \
        | sed 's/\x1b\[0m//g' >&2; then
        echo "$caller: the build failed (see above)" >&2
        exit 1
    fi
    # copy-dependencies leaves unchanged jars (and the directory's time) alone: mark the build as current.
    touch "$lib"
}
