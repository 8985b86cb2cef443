/*
 * librdmacm natives: CmEventChannel and CmId (including rdma_create_qp). Symbols are prefixed cm_. rdma_* calls
 * return -1 and set errno; they are normalised to -errno with NVMEOF4J_ERR().
 *
 * The event channel's fd is always non-blocking and waits go through ppoll() until a CLOCK_MONOTONIC deadline (plus
 * an eventfd for wake-ups), so no CM call here can block without limit. Each event is copied into a cm_event_record
 * (private data included) and handed to Java unacknowledged: Java maps its id pointer to the CmId and then acks it
 * (ack0). rdma_destroy_id waits for the unacknowledged events of its id, so the id cannot be destroyed (and its
 * pointer reused by a new id) between the read and the lookup.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "nvmeof4j_jni.h"
#include "rdma_shim.h"

struct cm_channel {
    struct rdma_event_channel *channel;
    int wakefd;
};

/* Builds a sockaddr from 4 (IPv4) or 16 (IPv6) address bytes (with the IPv6 scope id); 0 or -EINVAL. */
static int cm_sockaddr(JNIEnv *env, jbyteArray address, jint port, jint scope_id, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    jsize len = (*env)->GetArrayLength(env, address);
    if (len == 4) {
        struct sockaddr_in *in = (struct sockaddr_in *)out;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        (*env)->GetByteArrayRegion(env, address, 0, 4, (jbyte *)&in->sin_addr);
        return 0;
    }
    if (len == 16) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        in6->sin6_scope_id = (uint32_t)scope_id;
        (*env)->GetByteArrayRegion(env, address, 0, 16, (jbyte *)&in6->sin6_addr);
        return 0;
    }
    return -EINVAL;
}

/* ---- CmEventChannel ---- */

static jlong JNICALL cm_channel_create0(JNIEnv *env, jclass cls)
{
    struct cm_channel *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return -ENOMEM;
    }
    c->channel = rdma_create_event_channel();
    if (c->channel == NULL) {
        jlong rc = NVMEOF4J_ERR();
        free(c);
        return rc;
    }
    int flags = fcntl(c->channel->fd, F_GETFL);
    c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (flags < 0 || fcntl(c->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0 || c->wakefd < 0) {
        jlong rc = NVMEOF4J_ERR();
        if (c->wakefd >= 0) {
            close(c->wakefd);
        }
        rdma_destroy_event_channel(c->channel);
        free(c);
        return rc;
    }
    return nvmeof4j_handle(c);
}

static jint JNICALL cm_channel_fd0(JNIEnv *env, jclass cls, jlong channel)
{
    return ((struct cm_channel *)nvmeof4j_ptr(channel))->channel->fd;
}

static void cm_copy_event(const struct rdma_cm_event *ev, struct cm_event_record *rec)
{
    memset(rec, 0, offsetof(struct cm_event_record, private_data));
    rec->type = ev->event;
    rec->status = ev->status;
    rec->id = nvmeof4j_handle(ev->id);
    rec->listen_id = nvmeof4j_handle(ev->listen_id);
    switch (ev->event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_DISCONNECTED: {
        const struct rdma_conn_param *p = &ev->param.conn;
        rec->responder_resources = p->responder_resources;
        rec->initiator_depth = p->initiator_depth;
        rec->flow_control = p->flow_control;
        rec->retry_count = p->retry_count;
        rec->rnr_retry_count = p->rnr_retry_count;
        rec->qp_num = (int32_t)p->qp_num;
        if (p->private_data != NULL && p->private_data_len > 0) {
            rec->private_data_len = p->private_data_len;
            memcpy(rec->private_data, p->private_data, p->private_data_len);
        }
        break;
    }
    default:
        break;
    }
}

/*
 * Reads the next event into the record, waiting until timeout_nanos passes. Returns the event pointer (ack it with
 * cm_channel_ack0 once Java has looked its id up), 0 on timeout, -ECANCELED when woken, or -errno.
 */
static jlong JNICALL cm_channel_get_event0(JNIEnv *env, jclass cls, jlong channel, jlong timeout_nanos,
                                           jlong record)
{
    struct cm_channel *c = nvmeof4j_ptr(channel);
    struct cm_event_record *rec = nvmeof4j_ptr(record);
    jlong deadline = shim_now_nanos() + (timeout_nanos > 0 ? timeout_nanos : 0);
    for (;;) {
        struct rdma_cm_event *ev;
        if (rdma_get_cm_event(c->channel, &ev) == 0) {
            cm_copy_event(ev, rec);
            return nvmeof4j_handle(ev);
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return NVMEOF4J_ERR();
        }
        jlong remaining = deadline - shim_now_nanos();
        if (remaining <= 0) {
            return 0;
        }
        int rc = shim_wait_fd(c->channel->fd, c->wakefd, remaining);
        if (rc < 0) {
            return rc;
        }
        if (rc & SHIM_WOKEN) {
            return -ECANCELED; /* a pending event stays in the fd for the next wait */
        }
        /* readable, EINTR or a spurious wake-up: read again, wait again until the deadline */
    }
}

static void JNICALL cm_channel_ack0(JNIEnv *env, jclass cls, jlong event)
{
    rdma_ack_cm_event(nvmeof4j_ptr(event));
}

static jint JNICALL cm_channel_wake0(JNIEnv *env, jclass cls, jlong channel)
{
    return shim_wake(((struct cm_channel *)nvmeof4j_ptr(channel))->wakefd);
}

static jint JNICALL cm_channel_destroy0(JNIEnv *env, jclass cls, jlong channel)
{
    struct cm_channel *c = nvmeof4j_ptr(channel);
    rdma_destroy_event_channel(c->channel);
    close(c->wakefd);
    free(c);
    return 0;
}

/* ---- CmId ---- */

static jlong JNICALL cm_id_create0(JNIEnv *env, jclass cls, jlong channel)
{
    struct cm_channel *c = nvmeof4j_ptr(channel);
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(c->channel, &id, NULL, RDMA_PS_TCP) != 0) {
        return NVMEOF4J_ERR();
    }
    return nvmeof4j_handle(id);
}

static jint JNICALL cm_id_bind0(JNIEnv *env, jclass cls, jlong id, jbyteArray address, jint port, jint scope)
{
    struct sockaddr_storage sa;
    int rc = cm_sockaddr(env, address, port, scope, &sa);
    if (rc != 0) {
        return rc;
    }
    return rdma_bind_addr(nvmeof4j_ptr(id), (struct sockaddr *)&sa) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_listen0(JNIEnv *env, jclass cls, jlong id, jint backlog)
{
    return rdma_listen(nvmeof4j_ptr(id), backlog) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_resolve_addr0(JNIEnv *env, jclass cls, jlong id, jbyteArray src, jint src_port,
                                        jint src_scope, jbyteArray dst, jint dst_port, jint dst_scope,
                                        jint timeout_ms)
{
    struct sockaddr_storage s, d;
    int rc;
    if (src != NULL && (rc = cm_sockaddr(env, src, src_port, src_scope, &s)) != 0) {
        return rc;
    }
    if ((rc = cm_sockaddr(env, dst, dst_port, dst_scope, &d)) != 0) {
        return rc;
    }
    return rdma_resolve_addr(nvmeof4j_ptr(id), src != NULL ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d,
                             timeout_ms) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_resolve_route0(JNIEnv *env, jclass cls, jlong id, jint timeout_ms)
{
    return rdma_resolve_route(nvmeof4j_ptr(id), timeout_ms) == 0 ? 0 : NVMEOF4J_ERR();
}

static jlong JNICALL cm_id_verbs0(JNIEnv *env, jclass cls, jlong id)
{
    return nvmeof4j_handle(((struct rdma_cm_id *)nvmeof4j_ptr(id))->verbs);
}

static jstring JNICALL cm_id_device_name0(JNIEnv *env, jclass cls, jlong context)
{
    struct ibv_context *ctx = nvmeof4j_ptr(context);
    const char *name = ibv_get_device_name(ctx->device);
    return (*env)->NewStringUTF(env, name != NULL ? name : "?");
}

static jlong JNICALL cm_id_create_qp0(JNIEnv *env, jclass cls, jlong id, jlong pd, jlong send_cq, jlong recv_cq,
                                      jint max_send_wr, jint max_recv_wr, jint max_send_sge, jint max_recv_sge,
                                      jint max_inline, jintArray actual)
{
    struct rdma_cm_id *cm_id = nvmeof4j_ptr(id);
    struct ibv_qp_init_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.send_cq = nvmeof4j_ptr(send_cq);
    attr.recv_cq = nvmeof4j_ptr(recv_cq);
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = (uint32_t)max_send_wr;
    attr.cap.max_recv_wr = (uint32_t)max_recv_wr;
    attr.cap.max_send_sge = (uint32_t)max_send_sge;
    attr.cap.max_recv_sge = (uint32_t)max_recv_sge;
    attr.cap.max_inline_data = (uint32_t)max_inline;
    if (rdma_create_qp(cm_id, nvmeof4j_ptr(pd), &attr) != 0) {
        return NVMEOF4J_ERR();
    }
    /* ibv_create_qp wrote the granted sizes back into attr.cap */
    jint out[6] = {(jint)attr.cap.max_send_wr, (jint)attr.cap.max_recv_wr, (jint)attr.cap.max_send_sge,
                   (jint)attr.cap.max_recv_sge, (jint)attr.cap.max_inline_data, (jint)cm_id->qp->qp_num};
    (*env)->SetIntArrayRegion(env, actual, 0, 6, out);
    return nvmeof4j_handle(cm_id->qp);
}

static void JNICALL cm_id_destroy_qp0(JNIEnv *env, jclass cls, jlong id)
{
    struct rdma_cm_id *cm_id = nvmeof4j_ptr(id);
    if (cm_id->qp != NULL) {
        rdma_destroy_qp(cm_id);
    }
}

/* Fills a conn param; private data is copied into buf (at least 256 bytes). */
static void cm_conn_param(JNIEnv *env, struct rdma_conn_param *p, uint8_t *buf, jbyteArray private_data,
                          jint responder_resources, jint initiator_depth, jint flow_control, jint retry_count,
                          jint rnr_retry_count)
{
    memset(p, 0, sizeof(*p));
    if (private_data != NULL) {
        jsize len = (*env)->GetArrayLength(env, private_data);
        if (len > 255) {
            len = 255;
        }
        (*env)->GetByteArrayRegion(env, private_data, 0, len, (jbyte *)buf);
        p->private_data = buf;
        p->private_data_len = (uint8_t)len;
    }
    p->responder_resources = (uint8_t)responder_resources;
    p->initiator_depth = (uint8_t)initiator_depth;
    p->flow_control = (uint8_t)flow_control;
    p->retry_count = (uint8_t)retry_count;
    p->rnr_retry_count = (uint8_t)rnr_retry_count;
}

static jint JNICALL cm_id_connect0(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data,
                                   jint responder_resources, jint initiator_depth, jint flow_control,
                                   jint retry_count, jint rnr_retry_count)
{
    struct rdma_conn_param p;
    uint8_t buf[256];
    cm_conn_param(env, &p, buf, private_data, responder_resources, initiator_depth, flow_control, retry_count,
                  rnr_retry_count);
    return rdma_connect(nvmeof4j_ptr(id), &p) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_accept0(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data,
                                  jint responder_resources, jint initiator_depth, jint flow_control,
                                  jint retry_count, jint rnr_retry_count)
{
    struct rdma_conn_param p;
    uint8_t buf[256];
    cm_conn_param(env, &p, buf, private_data, responder_resources, initiator_depth, flow_control, retry_count,
                  rnr_retry_count);
    return rdma_accept(nvmeof4j_ptr(id), &p) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_reject0(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data)
{
    uint8_t buf[256];
    jsize len = 0;
    if (private_data != NULL) {
        len = (*env)->GetArrayLength(env, private_data);
        if (len > 255) {
            len = 255;
        }
        (*env)->GetByteArrayRegion(env, private_data, 0, len, (jbyte *)buf);
    }
    return rdma_reject(nvmeof4j_ptr(id), len > 0 ? buf : NULL, (uint8_t)len) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_disconnect0(JNIEnv *env, jclass cls, jlong id)
{
    return rdma_disconnect(nvmeof4j_ptr(id)) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint JNICALL cm_id_address0(JNIEnv *env, jclass cls, jlong id, jboolean peer, jbyteArray out)
{
    struct rdma_cm_id *cm_id = nvmeof4j_ptr(id);
    struct sockaddr *sa = peer ? rdma_get_peer_addr(cm_id) : rdma_get_local_addr(cm_id);
    if (sa == NULL) {
        return -ENOTCONN;
    }
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        (*env)->SetByteArrayRegion(env, out, 0, 4, (const jbyte *)&in->sin_addr);
        return (4 << 16) | ntohs(in->sin_port);
    }
    if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        (*env)->SetByteArrayRegion(env, out, 0, 16, (const jbyte *)&in6->sin6_addr);
        if ((*env)->GetArrayLength(env, out) >= 20) {
            jint scope = (jint)in6->sin6_scope_id;
            (*env)->SetByteArrayRegion(env, out, 16, 4, (const jbyte *)&scope); /* native order */
        }
        return (6 << 16) | ntohs(in6->sin6_port);
    }
    return -ENOTCONN;
}

static jint JNICALL cm_id_destroy0(JNIEnv *env, jclass cls, jlong id)
{
    return rdma_destroy_id(nvmeof4j_ptr(id)) == 0 ? 0 : NVMEOF4J_ERR();
}

static const JNINativeMethod cm_channel_methods[] = {
    {"create0", "()J", (void *)cm_channel_create0},
    {"fd0", "(J)I", (void *)cm_channel_fd0},
    {"getEvent0", "(JJJ)J", (void *)cm_channel_get_event0},
    {"ack0", "(J)V", (void *)cm_channel_ack0},
    {"wake0", "(J)I", (void *)cm_channel_wake0},
    {"destroy0", "(J)I", (void *)cm_channel_destroy0},
};
static const JNINativeMethod cm_id_methods[] = {
    {"create0", "(J)J", (void *)cm_id_create0},
    {"bind0", "(J[BII)I", (void *)cm_id_bind0},
    {"listen0", "(JI)I", (void *)cm_id_listen0},
    {"resolveAddr0", "(J[BII[BIII)I", (void *)cm_id_resolve_addr0},
    {"resolveRoute0", "(JI)I", (void *)cm_id_resolve_route0},
    {"verbs0", "(J)J", (void *)cm_id_verbs0},
    {"deviceName0", "(J)Ljava/lang/String;", (void *)cm_id_device_name0},
    {"createQp0", "(JJJJIIIII[I)J", (void *)cm_id_create_qp0},
    {"destroyQp0", "(J)V", (void *)cm_id_destroy_qp0},
    {"connect0", "(J[BIIIII)I", (void *)cm_id_connect0},
    {"accept0", "(J[BIIIII)I", (void *)cm_id_accept0},
    {"reject0", "(J[B)I", (void *)cm_id_reject0},
    {"disconnect0", "(J)I", (void *)cm_id_disconnect0},
    {"address0", "(JZ[B)I", (void *)cm_id_address0},
    {"destroy0", "(J)I", (void *)cm_id_destroy0},
};

jint cm_register(JNIEnv *env)
{
    if (nvmeof4j_register(env, RDMA_CLASS("CmEventChannel"), cm_channel_methods,
                          NVMEOF4J_ARRAY_LEN(cm_channel_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("CmId"), cm_id_methods, NVMEOF4J_ARRAY_LEN(cm_id_methods)) != JNI_OK) {
        return JNI_ERR;
    }
    return JNI_OK;
}
