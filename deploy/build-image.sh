#!/usr/bin/env bash
# Builds the target daemon's container image (default tag nvmeof4j/target:dev) from deploy/Dockerfile.
#
#   deploy/build-image.sh [--tag TAG] [--base-image IMAGE] [--skip-daemon-build] [--print-base-image] [--stage-only]
#
# 1. Makes sure a Docker engine answers (bin/lib/docker-engine.sh: installs docker.io and starts
#    `dockerd --bridge=none --iptables=false` when run as root and no engine runs).
# 2. Builds the daemon (mvn -pl target-daemon -am package) when its jar or runtime jars are missing or older than
#    the sources; --skip-daemon-build uses target-daemon/target as it is (the Testcontainers tests run inside the
#    Maven build that just packaged it) and fails when it is missing.
# 3. Stages the build context in deploy/target/context: lib/ (target-daemon's jar as nvmeof4j-target.jar and its
#    runtime jars from target-daemon/target/lib), bin/ (deploy/docker/nvmeof-target, the entrypoint) and
#    etc/target.json (deploy/config/target.json, the example configuration).
# 4. Picks the base image: --base-image or $NVMEOF4J_BASE_IMAGE when given; else the Dockerfile's default
#    (eclipse-temurin:17-jre) when present or pullable; else the local Debian base from
#    deploy/base-image/build-base-image.sh (built once, cached by the hash of its recipe).
# 5. docker build --network host --build-arg BASE_IMAGE=... -t TAG. The last line on stdout is the tag.
# --print-base-image does steps 1 and 4 only and prints the base image (bin/test prepares it this way).
# --stage-only does steps 2 and 3 only (no Docker): deploy/target/context is then the layout to install on a host
# (deploy/systemd/README.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=../bin/lib/packages.sh
. "$root/bin/lib/packages.sh"
# shellcheck source=../bin/lib/docker-engine.sh
. "$root/bin/lib/docker-engine.sh"

TAG=nvmeof4j/target:dev
BASE_IMAGE="${NVMEOF4J_BASE_IMAGE:-}"
SKIP_DAEMON_BUILD=0
PRINT_BASE=0
STAGE_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --tag) TAG=$2; shift 2 ;;
        --base-image) BASE_IMAGE=$2; shift 2 ;;
        --skip-daemon-build) SKIP_DAEMON_BUILD=1; shift ;;
        --print-base-image) PRINT_BASE=1; shift ;;
        --stage-only) STAGE_ONLY=1; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "build-image.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

log() { echo "build-image.sh: $*" >&2; }

# The Dockerfile's default base image: the one ARG BASE_IMAGE names.
DEFAULT_BASE=$(sed -n 's/^ARG BASE_IMAGE=\(.*\)$/\1/p' deploy/Dockerfile | head -n1)
[ "$STAGE_ONLY" = 1 ] || ensure_docker_engine build-image.sh
if [ "$STAGE_ONLY" = 0 ] && [ -z "$BASE_IMAGE" ]; then
    if docker image inspect "$DEFAULT_BASE" >/dev/null 2>&1; then
        BASE_IMAGE=$DEFAULT_BASE
    elif timeout "${NVMEOF4J_PULL_TIMEOUT:-120}" docker pull -q "$DEFAULT_BASE" >/dev/null 2>&1; then
        BASE_IMAGE=$DEFAULT_BASE
    else
        log "$DEFAULT_BASE cannot be pulled (no registry reachable?); using the local Debian base image"
        if ! docker image inspect "$(deploy/base-image/build-base-image.sh --print-tag)" >/dev/null 2>&1; then
            ensure_packages build-image.sh debootstrap
        fi
        BASE_IMAGE=$(deploy/base-image/build-base-image.sh | tail -n1)
    fi
fi
if [ "$PRINT_BASE" = 1 ]; then
    echo "$BASE_IMAGE"
    exit 0
fi

# The daemon: target-daemon's jar and its runtime jars (copy-dependencies in target-daemon/pom.xml).
lib=target-daemon/target/lib
jar=$(ls target-daemon/target/target-daemon-*.jar 2>/dev/null | grep -v -e '-sources\.jar$' -e '-tests\.jar$' | head -n1 || true)
needs_build=
if [ -z "$jar" ] || [ ! -d "$lib" ]; then
    needs_build="missing"
elif [ -n "$(find ./*/src/main -newer "$jar" -print -quit 2>/dev/null)" ] \
    || [ -n "$(find . -maxdepth 2 -name pom.xml -newer "$jar" -print -quit 2>/dev/null)" ]; then
    needs_build="older than the sources"
fi
if [ -n "$needs_build" ]; then
    if [ "$SKIP_DAEMON_BUILD" = 1 ]; then
        if [ "$needs_build" = missing ]; then
            log "target-daemon is not packaged (no target-daemon/target/target-daemon-*.jar or lib/); run mvn -pl target-daemon -am package"
            exit 1
        fi
        log "note: the daemon's jar is older than some sources; using it as it is (--skip-daemon-build)"
    else
        log "building the daemon (mvn -pl target-daemon -am package; its jar is $needs_build)"
        ensure_packages build-image.sh "${BUILD_PACKAGES[@]}"
        if ! mvn -q -B -ntp -DskipTests -pl target-daemon -am package 2>&1 | sed 's/\x1b\[0m//g' >&2; then
            log "the build failed (see above)"
            exit 1
        fi
        jar=$(ls target-daemon/target/target-daemon-*.jar | grep -v -e '-sources\.jar$' -e '-tests\.jar$' | head -n1)
    fi
fi

# The build context: only what the image needs (the Docker client sends all of it to the engine).
ctx=deploy/target/context
rm -rf "$ctx"
mkdir -p "$ctx/lib" "$ctx/bin" "$ctx/etc"
cp -p "$lib"/*.jar "$ctx/lib/"
cp -p "$jar" "$ctx/lib/nvmeof4j-target.jar"
cp -p deploy/docker/nvmeof-target "$ctx/bin/"
cp -p deploy/config/target.json "$ctx/etc/"
# Stable times: the engine's layer cache compares file contents and metadata, and a re-staged but unchanged
# jar should reuse its layer.
find "$ctx" -exec touch -h -d @0 {} +
if [ "$STAGE_ONLY" = 1 ]; then
    echo "$ctx"
    exit 0
fi

log "docker build -t $TAG (BASE_IMAGE=$BASE_IMAGE)"
# The legacy builder is used where the docker CLI has no buildx plugin; it sends the context and builds the same.
if ! DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker build --network host --build-arg "BASE_IMAGE=$BASE_IMAGE" \
        -f deploy/Dockerfile -t "$TAG" "$ctx" >deploy/target/docker-build.log 2>&1; then
    log "docker build failed; the end of deploy/target/docker-build.log:"
    tail -n 30 deploy/target/docker-build.log >&2
    exit 1
fi
# The image this build replaced under the tag is left untagged: remove such leftovers of earlier builds (only
# untagged images carrying this Dockerfile's title label, and never one a container still uses).
docker image prune -f --filter 'label=org.opencontainers.image.title=nvmeof4j target' >/dev/null 2>&1 || true
echo "$TAG"
