#!/usr/bin/env bash
# Compiles the JNI libraries of nvmeof4j. Called by Maven (native/pom.xml, compile phase):
#   build-native.sh JAVA_HOME OUTPUT_DIR OBJECT_DIR
# libnvmeof4j-rdma: src/main/c/rdma/*.c, linked against libibverbs and librdmacm (their providers are dlopen'ed
#                   by rdma-core, so they are linked dynamically; without rdma-core installed the library does
#                   not load and Rdma.unavailabilityCause() says so).
# libnvmeof4j-bdev: src/main/c/bdev/*.c, liburing linked statically, so the block-device shim needs nothing at
#                   run time beyond libc.
# libnvmeof4j-affinity: src/main/c/affinity/*.c, thread CPU affinity (reactor pinning); libc only.
# Headers come from Debian's libibverbs-dev, librdmacm-dev and liburing-dev.
set -euo pipefail
java_home=$1
out=$2
obj=$3
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/src/main/c

need=()
[ -f /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
[ -f /usr/include/rdma/rdma_cma.h ] || need+=(librdmacm-dev)
[ -f /usr/include/liburing.h ] || need+=(liburing-dev)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    echo "build-native.sh: missing ${need[*]}; run as root: apt-get update && apt-get install -y ${need[*]}" >&2
    exit 1
fi
# Maven's java.home is the JDK root on Java 9+; jni.h lives in its include directory.
jni_include="$java_home/include"
[ -f "$jni_include/jni.h" ] || { echo "build-native.sh: no jni.h under $jni_include (a JDK, not a JRE, is needed)" >&2; exit 1; }

mkdir -p "$out" "$obj"
CFLAGS=(-std=gnu11 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -Werror
        -I"$jni_include" -I"$jni_include/linux" -I"$src/common")

# build NAME LIBS... : compiles src/main/c/NAME/*.c (plus common/*.c) into libnvmeof4j-NAME-linux-x86_64.so,
# only when a source or header is newer than the library.
build() {
    local name=$1; shift
    local lib="$out/libnvmeof4j-$name-linux-x86_64.so"
    local sources=("$src/$name"/*.c "$src/common"/*.c)
    local existing=()
    for s in "${sources[@]}"; do [ -f "$s" ] && existing+=("$s"); done
    [ ${#existing[@]} -gt 0 ] || return 0
    if [ -f "$lib" ] && [ -z "$(find "$src/$name" "$src/common" "${BASH_SOURCE[0]}" -newer "$lib" -print -quit)" ]; then
        return 0
    fi
    echo "build-native.sh: compiling $(basename "$lib")"
    gcc "${CFLAGS[@]}" -shared -o "$lib.tmp" "${existing[@]}" "$@" -Wl,-z,defs -Wl,--as-needed
    mv "$lib.tmp" "$lib"
}

build rdma -libverbs -lrdmacm
build bdev -Wl,-Bstatic -luring -Wl,-Bdynamic
build affinity
