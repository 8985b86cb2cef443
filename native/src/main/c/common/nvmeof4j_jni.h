/*
 * Shared conventions of the nvmeof4j JNI libraries (see docs: architecture.md, "The native layer").
 *
 * - Natives are registered from a table in JNI_OnLoad (RegisterNatives), never found by symbol name, so the
 *   libraries export nothing but JNI_OnLoad (-fvisibility=hidden).
 * - Every native returns 0 or a non-negative result, or -errno. rdma_* calls that return -1 and set errno are
 *   normalised with NVMEOF4J_ERR(); verbs calls that return a positive errno are negated.
 * - Handles cross the boundary as jlong pointers owned by a Java AutoCloseable (io.nvmeof4j.jni.NativeHandle).
 */
#ifndef NVMEOF4J_JNI_H
#define NVMEOF4J_JNI_H

#include <errno.h>
#include <jni.h>
#include <stdint.h>

#define NVMEOF4J_EXPORT __attribute__((visibility("default")))
#define NVMEOF4J_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* -errno for a call that returned -1 and set errno (errno 0 would mean success: report EIO instead). */
#define NVMEOF4J_ERR() (errno > 0 ? -errno : -EIO)

static inline void *nvmeof4j_ptr(jlong handle) { return (void *)(intptr_t)handle; }
static inline jlong nvmeof4j_handle(const void *ptr) { return (jlong)(intptr_t)ptr; }

/* Registers a native table on a class; returns JNI_OK or a JNI error (the pending exception names the method). */
static inline jint nvmeof4j_register(JNIEnv *env, const char *class_name, const JNINativeMethod *methods, jint count)
{
    jclass cls = (*env)->FindClass(env, class_name);
    if (cls == NULL) {
        return JNI_ERR;
    }
    jint rc = (*env)->RegisterNatives(env, cls, methods, count);
    (*env)->DeleteLocalRef(env, cls);
    return rc == 0 ? JNI_OK : JNI_ERR;
}

/*
 * The JDK's epoll selector (common/selector.c; issue 17, one wait primitive per reactor). nvmeof4j_selector_fds reads
 * its epoll fd and wake-up eventfd (either out pointer may be NULL): 0 or -ENOTSUP for another selector.
 * nvmeof4j_selector_join adds fd to its epoll set (EPOLLIN | EPOLLONESHOT) through a duplicate of its epoll fd and
 * returns the duplicate, for nvmeof4j_selector_rearm (after each report) and nvmeof4j_selector_leave (before fd closes).
 */
int nvmeof4j_selector_fds(JNIEnv *env, jobject selector, int *epfd, int *eventfd);
int nvmeof4j_selector_join(JNIEnv *env, jobject selector, int fd);
int nvmeof4j_selector_rearm(int epfd, int fd);
int nvmeof4j_selector_leave(int epfd, int fd);

#endif
