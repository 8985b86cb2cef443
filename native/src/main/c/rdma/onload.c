/*
 * libnvmeof4j-rdma: JNI_OnLoad, the layout table (RdmaLayout) and the natives of io.nvmeof4j.jni.rdma.Rdma
 * (device list and attributes, direct buffer addresses). Symbols of this file are prefixed rdma_onload_.
 */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "nvmeof4j_jni.h"
#include "rdma_shim.h"

/* Java mirrors these constants (MemoryRegion, SendWorkRequests, WorkCompletions, CmEventType): keep them equal. */
_Static_assert(IBV_ACCESS_LOCAL_WRITE == 1 && IBV_ACCESS_REMOTE_WRITE == 2 && IBV_ACCESS_REMOTE_READ == 4,
               "MemoryRegion access flags");
_Static_assert(IBV_WR_RDMA_WRITE == 0 && IBV_WR_RDMA_WRITE_WITH_IMM == 1 && IBV_WR_SEND == 2
               && IBV_WR_SEND_WITH_IMM == 3 && IBV_WR_RDMA_READ == 4 && IBV_WR_SEND_WITH_INV == 9,
               "SendWorkRequests opcodes");
_Static_assert(IBV_SEND_FENCE == 1 && IBV_SEND_SIGNALED == 2 && IBV_SEND_SOLICITED == 4 && IBV_SEND_INLINE == 8,
               "SendWorkRequests flags");
_Static_assert(IBV_WC_SUCCESS == 0 && IBV_WC_WR_FLUSH_ERR == 5 && IBV_WC_REM_ACCESS_ERR == 10
               && IBV_WC_RETRY_EXC_ERR == 12 && IBV_WC_RNR_RETRY_EXC_ERR == 13, "WorkCompletions statuses");
_Static_assert(IBV_WC_SEND == 0 && IBV_WC_RDMA_WRITE == 1 && IBV_WC_RDMA_READ == 2 && IBV_WC_LOCAL_INV == 6
               && IBV_WC_RECV == 128 && IBV_WC_RECV_RDMA_WITH_IMM == 129, "WorkCompletions opcodes");
_Static_assert(IBV_WC_WITH_IMM == 2 && IBV_WC_WITH_INV == 8, "WorkCompletions flags");
_Static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0 && RDMA_CM_EVENT_CONNECT_REQUEST == 4 && RDMA_CM_EVENT_REJECTED == 8
               && RDMA_CM_EVENT_ESTABLISHED == 9 && RDMA_CM_EVENT_TIMEWAIT_EXIT == 15, "CmEventType order");
_Static_assert(IBV_PORT_ACTIVE == 4 && IBV_LINK_LAYER_ETHERNET == 2, "RdmaDevice port constants");

/* Order = RdmaLayout's index constants. */
static const jint rdma_onload_layout[] = {
    sizeof(struct ibv_wc),
    offsetof(struct ibv_wc, wr_id),
    offsetof(struct ibv_wc, status),
    offsetof(struct ibv_wc, opcode),
    offsetof(struct ibv_wc, vendor_err),
    offsetof(struct ibv_wc, byte_len),
    offsetof(struct ibv_wc, imm_data),
    offsetof(struct ibv_wc, qp_num),
    offsetof(struct ibv_wc, src_qp),
    offsetof(struct ibv_wc, wc_flags),
    sizeof(struct ibv_send_wr),
    offsetof(struct ibv_send_wr, wr_id),
    offsetof(struct ibv_send_wr, next),
    offsetof(struct ibv_send_wr, sg_list),
    offsetof(struct ibv_send_wr, num_sge),
    offsetof(struct ibv_send_wr, opcode),
    offsetof(struct ibv_send_wr, send_flags),
    offsetof(struct ibv_send_wr, imm_data),
    offsetof(struct ibv_send_wr, wr.rdma.remote_addr),
    offsetof(struct ibv_send_wr, wr.rdma.rkey),
    sizeof(struct ibv_recv_wr),
    offsetof(struct ibv_recv_wr, wr_id),
    offsetof(struct ibv_recv_wr, next),
    offsetof(struct ibv_recv_wr, sg_list),
    offsetof(struct ibv_recv_wr, num_sge),
    sizeof(struct ibv_sge),
    offsetof(struct ibv_sge, addr),
    offsetof(struct ibv_sge, length),
    offsetof(struct ibv_sge, lkey),
    sizeof(struct cm_event_record),
    offsetof(struct cm_event_record, type),
    offsetof(struct cm_event_record, status),
    offsetof(struct cm_event_record, id),
    offsetof(struct cm_event_record, listen_id),
    offsetof(struct cm_event_record, private_data_len),
    offsetof(struct cm_event_record, responder_resources),
    offsetof(struct cm_event_record, initiator_depth),
    offsetof(struct cm_event_record, flow_control),
    offsetof(struct cm_event_record, retry_count),
    offsetof(struct cm_event_record, rnr_retry_count),
    offsetof(struct cm_event_record, qp_num),
    offsetof(struct cm_event_record, private_data),
    CM_RECORD_PRIVATE_DATA_MAX,
};

static jint JNICALL rdma_onload_layout0(JNIEnv *env, jclass cls, jintArray values)
{
    jint n = (jint)NVMEOF4J_ARRAY_LEN(rdma_onload_layout);
    jsize len = (*env)->GetArrayLength(env, values);
    (*env)->SetIntArrayRegion(env, values, 0, len < n ? len : n, rdma_onload_layout);
    return n;
}

static jobjectArray JNICALL rdma_onload_device_names0(JNIEnv *env, jclass cls)
{
    int num = 0;
    struct ibv_device **list = ibv_get_device_list(&num);
    jclass string_class = (*env)->FindClass(env, "java/lang/String");
    if (string_class == NULL) {
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return NULL;
    }
    if (list == NULL) {
        num = 0; /* no kernel verbs support (ENOSYS) counts as no devices */
    }
    jobjectArray names = (*env)->NewObjectArray(env, num, string_class, NULL);
    for (int i = 0; names != NULL && i < num; i++) {
        jstring s = (*env)->NewStringUTF(env, ibv_get_device_name(list[i]));
        if (s == NULL) {
            names = NULL;
            break;
        }
        (*env)->SetObjectArrayElement(env, names, i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return names;
}

static jint JNICALL rdma_onload_query_device0(JNIEnv *env, jclass cls, jstring name, jlongArray attrs)
{
    const char *cname = (*env)->GetStringUTFChars(env, name, NULL);
    if (cname == NULL) {
        return -ENOMEM;
    }
    int num = 0, rc = -ENODEV;
    struct ibv_device **list = ibv_get_device_list(&num);
    for (int i = 0; list != NULL && i < num; i++) {
        if (strcmp(ibv_get_device_name(list[i]), cname) == 0) {
            struct ibv_context *ctx = ibv_open_device(list[i]);
            if (ctx == NULL) {
                rc = NVMEOF4J_ERR();
            } else {
                rc = verbs_query_context(ctx, env, attrs);
                ibv_close_device(ctx);
            }
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    (*env)->ReleaseStringUTFChars(env, name, cname);
    return rc;
}

static jlong JNICALL rdma_onload_buffer_address0(JNIEnv *env, jclass cls, jobject buffer)
{
    return nvmeof4j_handle((*env)->GetDirectBufferAddress(env, buffer));
}

static jlong JNICALL rdma_onload_noop0(JNIEnv *env, jclass cls, jlong a, jlong b, jint c)
{
    return 0;
}

int shim_wait_fd(int fd, int wakefd, jlong timeout_nanos)
{
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = wakefd, .events = POLLIN}};
    struct timespec ts = {.tv_sec = timeout_nanos / 1000000000L, .tv_nsec = timeout_nanos % 1000000000L};
    int rc = ppoll(fds, 2, &ts, NULL);
    if (rc < 0) {
        return errno == EINTR ? 0 : NVMEOF4J_ERR();
    }
    if (rc == 0) {
        return 0;
    }
    int result = 0;
    if (fds[1].revents & POLLIN) {
        uint64_t v;
        ssize_t ignored = read(wakefd, &v, sizeof(v)); /* non-blocking: drains the counter */
        (void)ignored;
        result |= SHIM_WOKEN;
    }
    if (fds[0].revents & (POLLERR | POLLNVAL)) {
        return -EBADF;
    }
    if (fds[0].revents & POLLIN) {
        result |= SHIM_READABLE;
    }
    return result;
}

jlong shim_now_nanos(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (jlong)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int shim_wake(int wakefd)
{
    uint64_t one = 1;
    ssize_t rc = write(wakefd, &one, sizeof(one));
    /* EAGAIN: the counter is saturated, a wake-up is pending anyway */
    return rc == (ssize_t)sizeof(one) || errno == EAGAIN ? 0 : NVMEOF4J_ERR();
}

static const JNINativeMethod rdma_onload_layout_methods[] = {
    {"layout0", "([I)I", (void *)rdma_onload_layout0},
};

static const JNINativeMethod rdma_onload_rdma_methods[] = {
    {"deviceNames0", "()[Ljava/lang/String;", (void *)rdma_onload_device_names0},
    {"queryDevice0", "(Ljava/lang/String;[J)I", (void *)rdma_onload_query_device0},
    {"bufferAddress0", "(Ljava/nio/ByteBuffer;)J", (void *)rdma_onload_buffer_address0},
    {"noop0", "(JJI)J", (void *)rdma_onload_noop0},
};

NVMEOF4J_EXPORT jint JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) {
        return JNI_ERR;
    }
    if (nvmeof4j_register(env, RDMA_CLASS("RdmaLayout"), rdma_onload_layout_methods,
                          NVMEOF4J_ARRAY_LEN(rdma_onload_layout_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("Rdma"), rdma_onload_rdma_methods,
                             NVMEOF4J_ARRAY_LEN(rdma_onload_rdma_methods)) != JNI_OK
        || verbs_register(env) != JNI_OK
        || cm_register(env) != JNI_OK) {
        return JNI_ERR;
    }
    return JNI_VERSION_1_8;
}
