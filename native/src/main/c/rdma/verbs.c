/*
 * libibverbs natives: VerbsContext, ProtectionDomain, MemoryRegion, CompletionChannel, CompletionChannelSet,
 * CompletionQueue and the posting side of QueuePair. Symbols are prefixed verbs_. Verbs calls that return an int
 * return an errno, positive (most providers) or negative (some): verbs_errno() normalises it to -errno and never
 * looks at errno (a -1 from a provider is -EPERM, not "see errno"). Calls returning NULL and setting errno go
 * through NVMEOF4J_ERR().
 * A destroy that fails frees nothing (the object is still in use: EBUSY) and returns -errno for Java to report.
 *
 * The data-path natives (post, poll) take raw addresses of preallocated buffers laid out by Java with offsets from
 * onload.c, so a crossing does no JNI array or object access at all.
 */
#define _GNU_SOURCE /* ppoll */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "nvmeof4j_jni.h"
#include "rdma_shim.h"

/*
 * A completion channel, the eventfd that wakes its waiter, and, once its fd joined a reactor's selector
 * (verbs_channel_join0), our duplicate of that selector's epoll fd (-1: not joined).
 */
struct verbs_channel {
    struct ibv_comp_channel *channel;
    int wakefd;
    int joined_epfd;
};

static int verbs_errno(int rc)
{
    return rc > 0 ? -rc : rc;
}

/* ---- device attributes (RdmaDevice.ATTR_* order) ---- */

#define ATTR_PORTS 12
#define PORT_ATTRS 6
#define MAX_PORTS 4
#define ATTR_COUNT (ATTR_PORTS + PORT_ATTRS * MAX_PORTS)

int verbs_query_context(void *context, JNIEnv *env, jlongArray attrs)
{
    struct ibv_context *ctx = context;
    struct ibv_device_attr da;
    jlong v[ATTR_COUNT];
    memset(v, 0, sizeof(v));
    int rc = ibv_query_device(ctx, &da);
    if (rc != 0) {
        return verbs_errno(rc);
    }
    v[0] = (jlong)be64toh(da.node_guid);
    v[1] = da.max_qp_wr;
    v[2] = da.max_sge;
    v[3] = da.max_cqe;
    v[4] = (jlong)da.max_mr_size;
    v[5] = da.max_qp_rd_atom;
    v[6] = da.max_qp_init_rd_atom;
    v[7] = da.max_qp;
    v[8] = da.max_cq;
    v[9] = da.max_mr;
    v[10] = da.max_pd;
    v[11] = da.phys_port_cnt;
    for (int p = 1; p <= da.phys_port_cnt && p <= MAX_PORTS; p++) {
        struct ibv_port_attr pa;
        rc = ibv_query_port(ctx, (uint8_t)p, &pa);
        if (rc != 0) {
            return verbs_errno(rc);
        }
        jlong *port = &v[ATTR_PORTS + (p - 1) * PORT_ATTRS];
        port[0] = pa.state;
        port[1] = pa.max_mtu;
        port[2] = pa.active_mtu;
        port[3] = pa.link_layer;
        port[4] = pa.lid;
        port[5] = pa.gid_tbl_len;
    }
    jsize len = (*env)->GetArrayLength(env, attrs);
    (*env)->SetLongArrayRegion(env, attrs, 0, len < ATTR_COUNT ? len : ATTR_COUNT, v);
    return 0;
}

/* ---- VerbsContext ---- */

static jlong JNICALL verbs_open0(JNIEnv *env, jclass cls, jstring name)
{
    const char *cname = (*env)->GetStringUTFChars(env, name, NULL);
    if (cname == NULL) {
        return -ENOMEM;
    }
    int num = 0;
    jlong result = -ENODEV;
    struct ibv_device **list = ibv_get_device_list(&num);
    for (int i = 0; list != NULL && i < num; i++) {
        if (strcmp(ibv_get_device_name(list[i]), cname) == 0) {
            struct ibv_context *ctx = ibv_open_device(list[i]);
            result = ctx != NULL ? nvmeof4j_handle(ctx) : NVMEOF4J_ERR();
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    (*env)->ReleaseStringUTFChars(env, name, cname);
    return result;
}

static jint JNICALL verbs_query0(JNIEnv *env, jclass cls, jlong context, jlongArray attrs)
{
    return verbs_query_context(nvmeof4j_ptr(context), env, attrs);
}

static jint JNICALL verbs_close0(JNIEnv *env, jclass cls, jlong context)
{
    return verbs_errno(ibv_close_device(nvmeof4j_ptr(context)));
}

/* ---- ProtectionDomain, MemoryRegion ---- */

static jlong JNICALL verbs_alloc_pd0(JNIEnv *env, jclass cls, jlong context)
{
    struct ibv_pd *pd = ibv_alloc_pd(nvmeof4j_ptr(context));
    return pd != NULL ? nvmeof4j_handle(pd) : NVMEOF4J_ERR();
}

static jint JNICALL verbs_dealloc_pd0(JNIEnv *env, jclass cls, jlong pd)
{
    return verbs_errno(ibv_dealloc_pd(nvmeof4j_ptr(pd)));
}

static jlong JNICALL verbs_reg_mr0(JNIEnv *env, jclass cls, jlong pd, jlong address, jlong length, jint access)
{
    struct ibv_mr *mr = ibv_reg_mr(nvmeof4j_ptr(pd), nvmeof4j_ptr(address), (size_t)length, access);
    return mr != NULL ? nvmeof4j_handle(mr) : NVMEOF4J_ERR();
}

static jlong JNICALL verbs_mr_keys0(JNIEnv *env, jclass cls, jlong mr)
{
    struct ibv_mr *m = nvmeof4j_ptr(mr);
    return (jlong)(((uint64_t)m->rkey << 32) | m->lkey);
}

static jint JNICALL verbs_dereg_mr0(JNIEnv *env, jclass cls, jlong mr)
{
    return verbs_errno(ibv_dereg_mr(nvmeof4j_ptr(mr)));
}

/* ---- CompletionChannel ---- */

static jlong JNICALL verbs_channel_create0(JNIEnv *env, jclass cls, jlong context)
{
    struct verbs_channel *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return -ENOMEM;
    }
    c->channel = ibv_create_comp_channel(nvmeof4j_ptr(context));
    if (c->channel == NULL) {
        jlong rc = NVMEOF4J_ERR();
        free(c);
        return rc;
    }
    c->joined_epfd = -1;
    int flags = fcntl(c->channel->fd, F_GETFL);
    c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (flags < 0 || fcntl(c->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0 || c->wakefd < 0) {
        jlong rc = NVMEOF4J_ERR();
        if (c->wakefd >= 0) {
            close(c->wakefd);
        }
        ibv_destroy_comp_channel(c->channel);
        free(c);
        return rc;
    }
    return nvmeof4j_handle(c);
}

static jint JNICALL verbs_channel_fd0(JNIEnv *env, jclass cls, jlong channel)
{
    return ((struct verbs_channel *)nvmeof4j_ptr(channel))->channel->fd;
}

static jint JNICALL verbs_channel_wakefd0(JNIEnv *env, jclass cls, jlong channel)
{
    return ((struct verbs_channel *)nvmeof4j_ptr(channel))->wakefd;
}

static jint JNICALL verbs_channel_wake0(JNIEnv *env, jclass cls, jlong channel)
{
    return shim_wake(((struct verbs_channel *)nvmeof4j_ptr(channel))->wakefd);
}

/*
 * Joins the channel's fd to the epoll set of a reactor's selector (common/selector.c: one shot, re-armed by
 * verbs_set_wait0 each time it drains the channel), so a completion event ends the reactor's select. -EBUSY when
 * already joined, -ENOTSUP when the selector is not the JDK's epoll selector. Java holds the waiter lock.
 */
static jint JNICALL verbs_channel_join0(JNIEnv *env, jclass cls, jlong channel, jobject selector)
{
    struct verbs_channel *c = nvmeof4j_ptr(channel);
    if (c->joined_epfd >= 0) {
        return -EBUSY;
    }
    int epfd = nvmeof4j_selector_join(env, selector, c->channel->fd);
    if (epfd < 0) {
        return epfd;
    }
    c->joined_epfd = epfd;
    return 0;
}

/* The selector's epoll fd (>= 0, not ours to keep), or -ENOTSUP: can a channel join this selector at all. */
static jint JNICALL verbs_selector_epoll0(JNIEnv *env, jclass cls, jobject selector)
{
    int epfd;
    int rc = nvmeof4j_selector_fds(env, selector, &epfd, NULL);
    return rc < 0 ? rc : epfd;
}

/* The same join, rearm and leave for a bare fd (tests: a pipe stands in for a channel on a host without RDMA). */
static jint JNICALL verbs_selector_join_fd0(JNIEnv *env, jclass cls, jobject selector, jint fd)
{
    return nvmeof4j_selector_join(env, selector, fd);
}

static jint JNICALL verbs_selector_rearm_fd0(JNIEnv *env, jclass cls, jint epfd, jint fd)
{
    return nvmeof4j_selector_rearm(epfd, fd);
}

static jint JNICALL verbs_selector_leave_fd0(JNIEnv *env, jclass cls, jint epfd, jint fd)
{
    return nvmeof4j_selector_leave(epfd, fd);
}

static jint JNICALL verbs_channel_destroy0(JNIEnv *env, jclass cls, jlong channel)
{
    struct verbs_channel *c = nvmeof4j_ptr(channel);
    if (c->joined_epfd >= 0) {
        /* Out of the selector's set before the fd closes: afterwards its number may be another file's, maybe a
         * socket the JDK registered, and no epoll_ctl of ours may touch it. */
        nvmeof4j_selector_leave(c->joined_epfd, c->channel->fd);
        c->joined_epfd = -1;
    }
    int rc = verbs_errno(ibv_destroy_comp_channel(c->channel));
    if (rc != 0) {
        return rc; /* EBUSY: a CQ still reports here; the channel and its eventfd stay valid (leaked) */
    }
    close(c->wakefd);
    free(c);
    return 0;
}

/* ---- CompletionChannelSet ---- */

/*
 * One member of a set (CompletionChannelSet.ENTRY_*, 16 bytes, written by Java when a member is added or found
 * closed): the fd polled for events, the eventfd polled for wake-ups (-1: none) and the verbs_channel whose events
 * are taken (0: the fd is only reported readable). A closed member has fd and wakefd -1, which ppoll skips.
 */
struct set_entry {
    int32_t fd;
    int32_t wakefd;
    int64_t channel;
};

/* An event taken (CompletionChannelSet.EVENT_*, 16 bytes): the CQ it is for and the member it came through. */
struct set_event {
    int64_t cq;
    int32_t entry;
    int32_t reserved;
};

/* Our own fixed-width layouts (not a library's struct): Java's constants name these offsets; keep them equal. */
_Static_assert(sizeof(struct set_entry) == 16 && offsetof(struct set_entry, wakefd) == 4
               && offsetof(struct set_entry, channel) == 8, "CompletionChannelSet.ENTRY_*");
_Static_assert(sizeof(struct set_event) == 16 && offsetof(struct set_event, entry) == 8,
               "CompletionChannelSet.EVENT_*");

/* CompletionChannelSet.MAX_MEMBERS: the pollfd array lives on the stack. */
#define SET_MAX_MEMBERS 64
#define SET_READABLE 1
#define SET_WOKEN 2

/*
 * One ppoll over every member's fd and wake-up eventfd, up to timeout_nanos. Then, for each member: its eventfd
 * drained (ready |= WOKEN), and when its fd is readable (ready |= READABLE) its pending completion events taken
 * with ibv_get_cq_event until none is left or max_events were taken. Returns the number of events written to
 * events (0 on timeout, wake-up, EINTR or a spurious readiness) or -errno; an error after some events were taken
 * returns those (they must be acknowledged), the error shows again on the next wait.
 */
static jint JNICALL verbs_set_wait0(JNIEnv *env, jclass cls, jlong entries, jint count, jlong ready,
                                    jlong events, jint max_events, jlong timeout_nanos)
{
    struct set_entry *e = nvmeof4j_ptr(entries);
    int32_t *flags = nvmeof4j_ptr(ready);
    struct set_event *out = nvmeof4j_ptr(events);
    struct pollfd fds[2 * SET_MAX_MEMBERS];
    if (count < 0 || count > SET_MAX_MEMBERS) {
        return -EINVAL;
    }
    for (int i = 0; i < count; i++) {
        fds[2 * i] = (struct pollfd){.fd = e[i].fd, .events = POLLIN};
        fds[2 * i + 1] = (struct pollfd){.fd = e[i].wakefd, .events = POLLIN};
        flags[i] = 0;
    }
    jlong t = timeout_nanos > 0 ? timeout_nanos : 0;
    struct timespec ts = {.tv_sec = t / 1000000000L, .tv_nsec = t % 1000000000L};
    int rc = ppoll(fds, (nfds_t)(2 * count), &ts, NULL);
    if (rc <= 0) {
        return rc == 0 || errno == EINTR ? 0 : NVMEOF4J_ERR();
    }
    int n = 0;
    for (int i = 0; i < count; i++) {
        if ((fds[2 * i].revents | fds[2 * i + 1].revents) & (POLLERR | POLLNVAL)) {
            return n > 0 ? n : -EBADF;
        }
        if (fds[2 * i + 1].revents & POLLIN) {
            uint64_t v;
            ssize_t ignored = read(e[i].wakefd, &v, sizeof(v)); /* non-blocking: drains the counter */
            (void)ignored;
            flags[i] |= SET_WOKEN;
        }
        if (!(fds[2 * i].revents & POLLIN)) {
            continue;
        }
        flags[i] |= SET_READABLE;
        struct verbs_channel *c = nvmeof4j_ptr(e[i].channel);
        while (c != NULL && n < max_events) {
            struct ibv_cq *cq;
            void *cq_context;
            if (ibv_get_cq_event(c->channel, &cq, &cq_context) != 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && n == 0) {
                    return NVMEOF4J_ERR();
                }
                break;
            }
            out[n].cq = nvmeof4j_handle(cq);
            out[n].entry = i;
            out[n].reserved = 0;
            n++;
        }
        if (c != NULL && c->joined_epfd >= 0) {
            /* Readable means its one-shot join may have been reported (and disarmed) since the last drain; not
             * readable, nothing arrived since, and the join is still armed. Re-armed after the drain: an event
             * arriving in between is reported at once. */
            int rearmed = nvmeof4j_selector_rearm(c->joined_epfd, c->channel->fd);
            if (rearmed < 0 && n == 0) {
                return rearmed;
            }
        }
    }
    return n;
}

static jint JNICALL verbs_set_wake0(JNIEnv *env, jclass cls, jint wakefd)
{
    return shim_wake(wakefd);
}

/* ---- CompletionQueue ---- */

static jlong JNICALL verbs_cq_create0(JNIEnv *env, jclass cls, jlong context, jint min_entries, jlong channel,
                                      jint vector)
{
    struct verbs_channel *c = nvmeof4j_ptr(channel);
    struct ibv_cq *cq = ibv_create_cq(nvmeof4j_ptr(context), min_entries, NULL, c != NULL ? c->channel : NULL,
                                      vector);
    return cq != NULL ? nvmeof4j_handle(cq) : NVMEOF4J_ERR();
}

static jint JNICALL verbs_cq_cqe0(JNIEnv *env, jclass cls, jlong cq)
{
    return ((struct ibv_cq *)nvmeof4j_ptr(cq))->cqe;
}

static jint JNICALL verbs_cq_poll0(JNIEnv *env, jclass cls, jlong cq, jlong address, jint max)
{
    int n = ibv_poll_cq(nvmeof4j_ptr(cq), max, nvmeof4j_ptr(address));
    /* providers report a failed poll with a negative value that is not always an errno */
    return n >= 0 ? n : -EIO;
}

static jint JNICALL verbs_cq_notify0(JNIEnv *env, jclass cls, jlong cq, jboolean solicited_only)
{
    return verbs_errno(ibv_req_notify_cq(nvmeof4j_ptr(cq), solicited_only ? 1 : 0));
}

static void JNICALL verbs_cq_ack0(JNIEnv *env, jclass cls, jlong cq, jint events)
{
    ibv_ack_cq_events(nvmeof4j_ptr(cq), (unsigned int)events);
}

static jint JNICALL verbs_cq_destroy0(JNIEnv *env, jclass cls, jlong cq)
{
    return verbs_errno(ibv_destroy_cq(nvmeof4j_ptr(cq)));
}

/* ---- QueuePair posting ---- */

/* 0, or -((index of the bad request << 32) | errno). */
static jlong verbs_post_result(int rc, const void *first, const void *bad, jint stride)
{
    if (rc == 0) {
        return 0;
    }
    /* the provider's errno, positive or negative; never errno (a -1 is EPERM) */
    int err = rc > 0 ? rc : (rc > -4096 ? -rc : EIO);
    jlong index = bad != NULL && stride > 0 ? ((const char *)bad - (const char *)first) / stride : 0;
    return -((index << 32) | (jlong)(uint32_t)err);
}

/*
 * One crossing per queue per reactor round: the receives the round staged (ibv_post_recv of one chain), then its send
 * work requests (ibv_post_send of one chain), either list 0 when empty. Receives first: a receive reposted for a
 * command must be posted before that command's response reaches the host, or the host's next capsule may find no
 * receive (RNR). On Soft-RoCE a receive post costs no system call; each send post is one (the doorbell write).
 * Returns 0, or -((SEND_FAILED if the send chain failed) | index of the first entry not posted << 32 | errno); when
 * the receive chain fails the send chain is not posted.
 */
#define VERBS_POST_SEND_FAILED ((jlong)1 << 48)

static jlong JNICALL verbs_post0(JNIEnv *env, jclass cls, jlong qp, jlong recv_first, jint recv_stride,
                                 jlong send_first, jint send_stride)
{
    struct ibv_qp *q = nvmeof4j_ptr(qp);
    if (recv_first != 0) {
        struct ibv_recv_wr *wr = nvmeof4j_ptr(recv_first);
        struct ibv_recv_wr *bad = NULL;
        /* its own statement: bad is read only after the post has set it */
        int posted = ibv_post_recv(q, wr, &bad);
        jlong rc = verbs_post_result(posted, wr, bad, recv_stride);
        if (rc != 0) {
            return rc;
        }
    }
    if (send_first != 0) {
        struct ibv_send_wr *wr = nvmeof4j_ptr(send_first);
        struct ibv_send_wr *bad = NULL;
        int posted = ibv_post_send(q, wr, &bad);
        jlong rc = verbs_post_result(posted, wr, bad, send_stride);
        if (rc != 0) {
            return rc - VERBS_POST_SEND_FAILED;
        }
    }
    return 0;
}

static jint JNICALL verbs_qp_state0(JNIEnv *env, jclass cls, jlong qp)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    int rc = ibv_query_qp(nvmeof4j_ptr(qp), &attr, IBV_QP_STATE, &init);
    return rc != 0 ? verbs_errno(rc) : (jint)attr.qp_state;
}

static const JNINativeMethod verbs_context_methods[] = {
    {"open0", "(Ljava/lang/String;)J", (void *)verbs_open0},
    {"query0", "(J[J)I", (void *)verbs_query0},
    {"close0", "(J)I", (void *)verbs_close0},
};
static const JNINativeMethod verbs_pd_methods[] = {
    {"alloc0", "(J)J", (void *)verbs_alloc_pd0},
    {"dealloc0", "(J)I", (void *)verbs_dealloc_pd0},
    {"reg0", "(JJJI)J", (void *)verbs_reg_mr0},
};
static const JNINativeMethod verbs_mr_methods[] = {
    {"keys0", "(J)J", (void *)verbs_mr_keys0},
    {"dereg0", "(J)I", (void *)verbs_dereg_mr0},
};
static const JNINativeMethod verbs_channel_methods[] = {
    {"create0", "(J)J", (void *)verbs_channel_create0},
    {"fd0", "(J)I", (void *)verbs_channel_fd0},
    {"wakeFd0", "(J)I", (void *)verbs_channel_wakefd0},
    {"wake0", "(J)I", (void *)verbs_channel_wake0},
    {"destroy0", "(J)I", (void *)verbs_channel_destroy0},
    {"joinSelector0", "(JLjava/nio/channels/Selector;)I", (void *)verbs_channel_join0},
    {"selectorEpoll0", "(Ljava/nio/channels/Selector;)I", (void *)verbs_selector_epoll0},
    {"joinFd0", "(Ljava/nio/channels/Selector;I)I", (void *)verbs_selector_join_fd0},
    {"rearmFd0", "(II)I", (void *)verbs_selector_rearm_fd0},
    {"leaveFd0", "(II)I", (void *)verbs_selector_leave_fd0},
};
static const JNINativeMethod verbs_set_methods[] = {
    {"wait0", "(JIJJIJ)I", (void *)verbs_set_wait0},
    {"wake0", "(I)I", (void *)verbs_set_wake0},
};
static const JNINativeMethod verbs_cq_methods[] = {
    {"create0", "(JIJI)J", (void *)verbs_cq_create0},
    {"cqe0", "(J)I", (void *)verbs_cq_cqe0},
    {"poll0", "(JJI)I", (void *)verbs_cq_poll0},
    {"notify0", "(JZ)I", (void *)verbs_cq_notify0},
    {"ack0", "(JI)V", (void *)verbs_cq_ack0},
    {"destroy0", "(J)I", (void *)verbs_cq_destroy0},
};
static const JNINativeMethod verbs_qp_methods[] = {
    {"post0", "(JJIJI)J", (void *)verbs_post0},
    {"queryState0", "(J)I", (void *)verbs_qp_state0},
};

jint verbs_register(JNIEnv *env)
{
    if (nvmeof4j_register(env, RDMA_CLASS("VerbsContext"), verbs_context_methods,
                          NVMEOF4J_ARRAY_LEN(verbs_context_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("ProtectionDomain"), verbs_pd_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_pd_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("MemoryRegion"), verbs_mr_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_mr_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("CompletionChannel"), verbs_channel_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_channel_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("CompletionChannelSet"), verbs_set_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_set_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("CompletionQueue"), verbs_cq_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_cq_methods)) != JNI_OK
        || nvmeof4j_register(env, RDMA_CLASS("QueuePair"), verbs_qp_methods,
                             NVMEOF4J_ARRAY_LEN(verbs_qp_methods)) != JNI_OK) {
        return JNI_ERR;
    }
    return JNI_OK;
}
