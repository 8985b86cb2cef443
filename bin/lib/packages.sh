# Sourced by the bin/ scripts: installs missing Debian packages when run as root, otherwise prints the exact
# command and fails. Usage: ensure_packages CALLER PACKAGE...
# BUILD_PACKAGES: what building nvmeof4j needs (Java 17, Maven, gcc and the headers of the JNI libraries).
BUILD_PACKAGES=(openjdk-17-jdk-headless maven gcc libc6-dev libibverbs-dev librdmacm-dev liburing-dev)
# CONTAINER_PACKAGES: the container engine and what builds the local base image (deploy/base-image) for the
# Testcontainers tests and deploy/build-image.sh. Installing docker.io does not start the engine (see
# bin/lib/docker-engine.sh for that).
CONTAINER_PACKAGES=(docker.io debootstrap)

ensure_packages() {
    local caller=$1; shift
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "$caller: installing ${missing[*]}" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "$caller: missing Debian packages; run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
}
