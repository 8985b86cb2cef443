/*
 * Internal declarations shared by the files of libnvmeof4j-rdma (onload.c, verbs.c, cm.c).
 * Each file registers the natives of its Java classes from its own table.
 */
#ifndef NVMEOF4J_RDMA_SHIM_H
#define NVMEOF4J_RDMA_SHIM_H

#include <jni.h>
#include <stdint.h>
#include <time.h>

#define RDMA_CLASS(name) "io/nvmeof4j/jni/rdma/" name

/* The record cm.c copies an rdma_cm_event into (CmEventChannel reads it; offsets exported by onload.c). */
#define CM_RECORD_PRIVATE_DATA_MAX 256
struct cm_event_record {
    int32_t type;
    int32_t status;
    int64_t id;
    int64_t listen_id;
    int32_t private_data_len;
    int32_t responder_resources;
    int32_t initiator_depth;
    int32_t flow_control;
    int32_t retry_count;
    int32_t rnr_retry_count;
    int32_t qp_num;
    int32_t reserved;
    uint8_t private_data[CM_RECORD_PRIVATE_DATA_MAX];
};

jint verbs_register(JNIEnv *env);
jint cm_register(JNIEnv *env);

/* Fills attrs (the layout of RdmaDevice.ATTR_*) from ibv_query_device/ibv_query_port; 0 or -errno. */
int verbs_query_context(void *context, JNIEnv *env, jlongArray attrs);

/* shim_wait_fd's result bits. */
#define SHIM_READABLE 1
#define SHIM_WOKEN 2

/*
 * Waits until fd or wakefd is readable or timeout_nanos passes (ppoll). Returns SHIM_READABLE when fd is readable,
 * SHIM_WOKEN (possibly with SHIM_READABLE) when the eventfd was written (it is drained), 0 on timeout or EINTR,
 * -errno on failure.
 */
int shim_wait_fd(int fd, int wakefd, jlong timeout_nanos);

/* CLOCK_MONOTONIC in nanoseconds (deadlines of the wait loops). */
jlong shim_now_nanos(void);

/* Writes 1 to an eventfd; 0 or -errno. */
int shim_wake(int wakefd);

#endif
