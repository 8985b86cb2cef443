/*
 * libnvmeof4j-affinity: the CPU affinity of threads (io.nvmeof4j.jni.cpu.CpuAffinity). libc only, so it loads
 * wherever the JVM runs on Linux, with or without rdma-core and io_uring.
 *
 * A CPU set crosses the boundary as a long[] bitmap (bit c of word c / 64 is CPU c), the layout of the kernel's
 * cpumask; C copies it into a CPU_ALLOC'ed cpu_set_t sized for that many CPUs, so machines beyond CPU_SETSIZE
 * (1024) work. Java sizes the array for the machine's possible CPUs (/sys/devices/system/cpu/possible).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nvmeof4j_jni.h"

/* The kernel's thread id of the calling thread (what /proc/self/task lists). */
static jint affinity_gettid(JNIEnv *env, jclass cls)
{
    return (jint)syscall(SYS_gettid);
}

/*
 * An empty cpu_set_t for the CPUs a bitmap of Java's length can name: *set (CPU_FREE it), *cpus and *size. 0, or
 * -EINVAL for an empty or absurd length, -ENOMEM.
 */
static int affinity_alloc(JNIEnv *env, jlongArray bitmap, cpu_set_t **set, int *cpus, size_t *size)
{
    jsize words = (*env)->GetArrayLength(env, bitmap);
    if (words <= 0 || words > 1 << 16) {
        return -EINVAL;
    }
    *cpus = words * 64;
    *set = CPU_ALLOC(*cpus);
    if (*set == NULL) {
        return -ENOMEM;
    }
    *size = CPU_ALLOC_SIZE(*cpus);
    CPU_ZERO_S(*size, *set);
    return 0;
}

/* sched_setaffinity(tid, the CPUs set in mask); tid 0 is the calling thread. 0 or -errno. */
static jint affinity_set(JNIEnv *env, jclass cls, jint tid, jlongArray mask)
{
    cpu_set_t *set;
    int cpus;
    size_t size;
    int rc = affinity_alloc(env, mask, &set, &cpus, &size);
    if (rc != 0) {
        return rc;
    }
    jlong *bits = (*env)->GetLongArrayElements(env, mask, NULL);
    if (bits == NULL) {
        CPU_FREE(set);
        return -ENOMEM;
    }
    for (int c = 0; c < cpus; c++) {
        if (((uint64_t)bits[c / 64] >> (c % 64)) & 1) {
            CPU_SET_S(c, size, set);
        }
    }
    (*env)->ReleaseLongArrayElements(env, mask, bits, JNI_ABORT);
    rc = sched_setaffinity((pid_t)tid, size, set);
    int err = errno;
    CPU_FREE(set);
    return rc == 0 ? 0 : (err > 0 ? -err : -EIO);
}

/*
 * sched_getaffinity(tid) into out (cleared first); tid 0 is the calling thread. The number of CPUs set, or -errno
 * (EINVAL when out is smaller than the kernel's mask: the machine has more CPUs than Java sized it for).
 */
static jint affinity_get(JNIEnv *env, jclass cls, jint tid, jlongArray out)
{
    cpu_set_t *set;
    int cpus;
    size_t size;
    int rc = affinity_alloc(env, out, &set, &cpus, &size);
    if (rc != 0) {
        return rc;
    }
    jsize words = cpus / 64;
    if (sched_getaffinity((pid_t)tid, size, set) != 0) {
        int err = errno;
        CPU_FREE(set);
        return err > 0 ? -err : -EIO;
    }
    jlong *bits = (*env)->GetLongArrayElements(env, out, NULL);
    if (bits == NULL) {
        CPU_FREE(set);
        return -ENOMEM;
    }
    int count = 0;
    for (int w = 0; w < words; w++) {
        bits[w] = 0;
    }
    for (int c = 0; c < cpus; c++) {
        if (CPU_ISSET_S(c, size, set)) {
            bits[c / 64] |= (jlong)((uint64_t)1 << (c % 64));
            count++;
        }
    }
    (*env)->ReleaseLongArrayElements(env, out, bits, 0);
    CPU_FREE(set);
    return count;
}

static const JNINativeMethod affinity_methods[] = {
    {"gettid0", "()I", (void *)affinity_gettid},
    {"setAffinity0", "(I[J)I", (void *)affinity_set},
    {"getAffinity0", "(I[J)I", (void *)affinity_get},
};

NVMEOF4J_EXPORT jint JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) {
        return JNI_ERR;
    }
    if (nvmeof4j_register(env, "io/nvmeof4j/jni/cpu/CpuAffinity", affinity_methods,
                          NVMEOF4J_ARRAY_LEN(affinity_methods)) != JNI_OK) {
        return JNI_ERR;
    }
    return JNI_VERSION_1_8;
}
