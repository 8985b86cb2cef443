/* libnvmeof4j-bdev: poll groups, channels and I/O on io_uring (see bdev_internal.h). */
#include "bdev_internal.h"

/* ------------------------------------------------------------------------------------------------ groups */

jlong bdev_group_create(JNIEnv *env, jclass cls, jint capacity, jobject region)
{
    if (capacity < 1 || (uint32_t)capacity > BDEV_MAX_CAPACITY) {
        return -EINVAL;
    }
    struct bdev_group *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return -ENOMEM;
    }
    g->capacity = (uint32_t)capacity;
    g->tasks = calloc(g->capacity, sizeof(*g->tasks));
    g->subs = calloc(g->capacity, sizeof(*g->subs));
    g->cpls = calloc(g->capacity, sizeof(*g->cpls));
    g->pending = calloc(g->capacity, sizeof(*g->pending));
    int err = 0;
    if (g->tasks == NULL || g->subs == NULL || g->cpls == NULL || g->pending == NULL
        || posix_memalign((void **)&g->zeroes, 4096, BDEV_ZERO_BUFFER) != 0) {
        g->zeroes = NULL;
        err = -ENOMEM;
        goto fail;
    }
    memset(g->zeroes, 0, BDEV_ZERO_BUFFER);
    /* The SQ holds every task at once (resubmissions included), so io_uring_get_sqe never runs dry; the CQ is
     * twice that so completions never overflow. */
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    /* Not SINGLE_ISSUER: the daemon creates a reactor's group on the main thread and the reactor submits. */
    /* COOP_TASKRUN defers completion work to the next kernel entry; TASKRUN_FLAG makes the kernel say so in the SQ
     * flags, so liburing's peek enters the kernel to run it. Without the flag a reactor that makes no syscalls (RDMA
     * polling, busy idling) would not see completions that have already happened. */
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    p.cq_entries = g->capacity * 2;
    int rc = io_uring_queue_init_params(g->capacity, &g->ring, &p);
    if (rc == -EINVAL) {
        /* Kernels before 5.19 know neither COOP_TASKRUN nor TASKRUN_FLAG. */
        memset(&p, 0, sizeof(p));
        p.flags = IORING_SETUP_CQSIZE;
        p.cq_entries = g->capacity * 2;
        rc = io_uring_queue_init_params(g->capacity, &g->ring, &p);
    }
    if (rc < 0) {
        err = rc;
        goto fail;
    }
    if (region != NULL) {
        void *base = (*env)->GetDirectBufferAddress(env, region);
        jlong len = (*env)->GetDirectBufferCapacity(env, region);
        if (base != NULL && len > 0) {
            struct iovec iov = {.iov_base = base, .iov_len = (size_t)len};
            rc = io_uring_register_buffers(&g->ring, &iov, 1);
            if (rc == 0) {
                g->fixed = 1;
                g->region = base;
                g->region_len = (uint64_t)len;
            } else {
                g->fixed_errno = -rc; /* RLIMIT_MEMLOCK, most often: Java logs it and I/O goes unregistered */
            }
        }
    }
    return nvmeof4j_handle(g);
fail:
    free(g->tasks);
    free(g->subs);
    free(g->cpls);
    free(g->pending);
    free(g->zeroes);
    free(g);
    return err;
}

/* out: submission array, completion array (direct buffers over native memory the group owns) */
jint bdev_group_arrays(JNIEnv *env, jclass cls, jlong handle, jobjectArray out)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    jobject subs = (*env)->NewDirectByteBuffer(env, g->subs, (jlong)g->capacity * sizeof(struct bdev_sub));
    jobject cpls = (*env)->NewDirectByteBuffer(env, g->cpls, (jlong)g->capacity * sizeof(struct bdev_cpl));
    if (subs == NULL || cpls == NULL) {
        return -ENOMEM;
    }
    (*env)->SetObjectArrayElement(env, out, 0, subs);
    (*env)->SetObjectArrayElement(env, out, 1, cpls);
    return 0;
}

/* out: fixed (1/0), errno of a failed registration, region address, region length */
jint bdev_group_info(JNIEnv *env, jclass cls, jlong handle, jlongArray out)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    jlong v[4] = {g->fixed, g->fixed_errno, (jlong)(intptr_t)g->region, (jlong)g->region_len};
    (*env)->SetLongArrayRegion(env, out, 0, 4, v);
    return 0;
}

jint bdev_group_destroy(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    io_uring_queue_exit(&g->ring);
    free(g->tasks);
    free(g->subs);
    free(g->cpls);
    free(g->pending);
    free(g->zeroes);
    free(g);
    return 0;
}

jlong bdev_channel_create(JNIEnv *env, jclass cls, jlong desc_handle, jlong group_handle)
{
    struct bdev_channel *ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return -ENOMEM;
    }
    ch->desc = nvmeof4j_ptr(desc_handle);
    ch->group = nvmeof4j_ptr(group_handle);
    return nvmeof4j_handle(ch);
}

jint bdev_channel_destroy(JNIEnv *env, jclass cls, jlong handle)
{
    free(nvmeof4j_ptr(handle));
    return 0;
}

/* ------------------------------------------------------------------------------------------------ I/O */

static void bdev_complete_now(struct bdev_group *g, uint32_t tag, int32_t result)
{
    uint32_t at = (g->pending_head + g->pending_count) % g->capacity;
    g->pending[at].tag = tag;
    g->pending[at].result = result;
    g->pending_count++;
}

static struct io_uring_sqe *bdev_sqe(struct bdev_group *g)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&g->ring);
    if (sqe == NULL) {
        io_uring_submit(&g->ring);
        sqe = io_uring_get_sqe(&g->ring);
    }
    return sqe;
}

static void bdev_prep_zero_write(struct bdev_group *g, struct bdev *dev, struct bdev_task *t,
                                 struct io_uring_sqe *sqe)
{
    uint64_t n = t->length - t->done;
    if (n > BDEV_ZERO_BUFFER) {
        n = BDEV_ZERO_BUFFER;
    }
    io_uring_prep_write(sqe, dev->fd, g->zeroes, (unsigned)n, t->offset + t->done);
    if (t->flags & BDEV_IO_FUA) {
        sqe->rw_flags = RWF_DSYNC;
    }
}

/*
 * Queues the task's next step on the ring; returns 0, or a result to complete it with at once.
 */
/* Write zeroes and a file's unmap: fallocate with MODE, or, where the file system refused it before (REFUSED),
 * writes of the zero buffer. */
static void bdev_prep_fallocate(struct bdev_group *g, struct bdev *dev, struct bdev_task *t, struct io_uring_sqe *sqe,
                                int refused, int mode)
{
    if (refused) {
        t->step = BDEV_STEP_ZERO_WRITE;
        bdev_prep_zero_write(g, dev, t, sqe);
    } else {
        io_uring_prep_fallocate(sqe, dev->fd, mode | FALLOC_FL_KEEP_SIZE, t->offset, t->length);
    }
}

static int bdev_queue(struct bdev_group *g, uint32_t tag)
{
    struct bdev_task *t = &g->tasks[tag];
    struct bdev *dev = t->channel->desc->bdev;
    if (t->op > BDEV_OP_DELAY) {
        return -EINVAL; /* before taking an SQE: one taken and left unprepared would be submitted stale */
    }
    if (t->op == BDEV_OP_UNMAP && dev->blkdev && dev->no_discard_cmd && t->step == BDEV_STEP_MAIN) {
        return BDEV_RESULT_BLOCKING; /* the ioctl would block this thread: Java runs it on a worker */
    }
    struct io_uring_sqe *sqe = bdev_sqe(g);
    if (sqe == NULL) {
        return -EBUSY;
    }
    if (t->op == BDEV_OP_DELAY) {
        io_uring_prep_timeout(sqe, &t->delay, 0, 0);
    } else if (t->step == BDEV_STEP_ZERO_WRITE) {
        bdev_prep_zero_write(g, dev, t, sqe);
    } else if (t->step == BDEV_STEP_SYNC) {
        io_uring_prep_fsync(sqe, dev->fd, IORING_FSYNC_DATASYNC);
    } else {
        switch (t->op) {
        case BDEV_OP_READ:
        case BDEV_OP_WRITE: {
            void *addr = (void *)(uintptr_t)(t->addr + t->done);
            uint64_t rest = t->length - t->done;
            unsigned n = rest > (1u << 30) ? (1u << 30) : (unsigned)rest;
            uint64_t off = t->offset + t->done;
            if (t->flags & BDEV_IO_FIXED) {
                if (t->op == BDEV_OP_READ) {
                    io_uring_prep_read_fixed(sqe, dev->fd, addr, n, off, 0);
                } else {
                    io_uring_prep_write_fixed(sqe, dev->fd, addr, n, off, 0);
                }
            } else if (t->op == BDEV_OP_READ) {
                io_uring_prep_read(sqe, dev->fd, addr, n, off);
            } else {
                io_uring_prep_write(sqe, dev->fd, addr, n, off);
            }
            if (t->op == BDEV_OP_WRITE && (t->flags & BDEV_IO_FUA)) {
                sqe->rw_flags = RWF_DSYNC;
            }
            break;
        }
        case BDEV_OP_FLUSH:
            io_uring_prep_fsync(sqe, dev->fd, IORING_FSYNC_DATASYNC);
            break;
        case BDEV_OP_WRITE_ZEROES:
            bdev_prep_fallocate(g, dev, t, sqe, dev->no_zero_range, FALLOC_FL_ZERO_RANGE);
            break;
        case BDEV_OP_UNMAP:
            if (dev->blkdev) {
                /* io_uring_prep_cmd_discard of liburing 2.8, written out for 2.3. */
                io_uring_prep_rw(IORING_OP_URING_CMD, sqe, dev->fd, NULL, 0, 0);
                sqe->cmd_op = BDEV_BLOCK_URING_CMD_DISCARD;
                sqe->addr = t->offset;
                sqe->addr3 = t->length;
            } else {
                bdev_prep_fallocate(g, dev, t, sqe, dev->no_punch_hole, FALLOC_FL_PUNCH_HOLE);
            }
            break;
        default:
            return -EINVAL;
        }
    }
    io_uring_sqe_set_data64(sqe, tag);
    g->uring_inflight++;
    g->to_submit++;
    return 0;
}

/* Start of a task: checks, then the device. */
static void bdev_start(struct bdev_group *g, const struct bdev_sub *s)
{
    uint32_t tag = s->tag;
    struct bdev_task *t = &g->tasks[tag];
    t->channel = (struct bdev_channel *)(uintptr_t)s->channel;
    t->offset = s->offset;
    t->addr = s->addr;
    t->length = s->length;
    t->done = 0;
    t->op = s->op;
    t->flags = s->flags;
    t->step = BDEV_STEP_MAIN;
    if (t->op == BDEV_OP_DELAY) {
        t->delay.tv_sec = (int64_t)(t->length / 1000000000u);
        t->delay.tv_nsec = (long long)(t->length % 1000000000u);
        int rc = bdev_queue(g, tag);
        if (rc != 0) {
            bdev_complete_now(g, tag, rc);
        }
        return;
    }
    struct bdev *dev = t->channel->desc->bdev;
    if (t->op != BDEV_OP_FLUSH && (t->offset + t->length > dev->size_bytes || t->offset + t->length < t->offset)) {
        bdev_complete_now(g, tag, -ERANGE);
        return;
    }
    if (t->op != BDEV_OP_READ && !t->channel->desc->writable) {
        bdev_complete_now(g, tag, -EBADF);
        return;
    }
    if ((t->flags & BDEV_IO_FIXED)
        && (!g->fixed || t->addr < (uint64_t)(uintptr_t)g->region
            || t->addr + t->length > (uint64_t)(uintptr_t)g->region + g->region_len)) {
        t->flags &= ~BDEV_IO_FIXED;
    }
    if (t->length == 0 && t->op != BDEV_OP_FLUSH) {
        bdev_complete_now(g, tag, 0);
        return;
    }
    int rc = bdev_queue(g, tag);
    if (rc != 0) {
        bdev_complete_now(g, tag, rc);
    }
}

jint bdev_submit(JNIEnv *env, jclass cls, jlong handle, jint count)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    if (count < 0 || (uint32_t)count > g->capacity) {
        return -EINVAL;
    }
    for (jint i = 0; i < count; i++) {
        if (g->subs[i].tag >= g->capacity) {
            continue; /* Java never does this; nothing to complete it with */
        }
        bdev_start(g, &g->subs[i]);
    }
    if (g->to_submit > 0) {
        int rc = io_uring_submit(&g->ring);
        if (rc >= 0) {
            g->to_submit = 0;
        } else if (rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
            return rc;
        }
    }
    return count;
}

/* The ring answered a step: returns 1 and sets *result when the task is done, 0 when it was queued again. */
static int bdev_advance(struct bdev_group *g, uint32_t tag, int res, int32_t *result)
{
    struct bdev_task *t = &g->tasks[tag];
    struct bdev *dev = t->channel->desc->bdev;
    if (t->op == BDEV_OP_DELAY) {
        *result = res == -ETIME ? 0 : res; /* -ETIME is a timeout's normal end */
        return 1;
    }
    if (res == -EINTR || res == -EAGAIN) {
        goto again;
    }
    if (t->step == BDEV_STEP_SYNC) {
        *result = res < 0 ? res : 0;
        return 1;
    }
    if (t->step == BDEV_STEP_ZERO_WRITE || t->op == BDEV_OP_READ || t->op == BDEV_OP_WRITE) {
        if (res < 0) {
            *result = res;
            return 1;
        }
        if (res == 0) {
            if (t->op == BDEV_OP_READ) {
                /* End of file (the file shrank under us): the rest reads as zeros, like a hole. */
                memset((void *)(uintptr_t)(t->addr + t->done), 0, t->length - t->done);
                *result = 0;
                return 1;
            }
            *result = -EIO; /* a write that makes no progress would loop forever */
            return 1;
        }
        t->done += (uint64_t)res;
        if (t->done < t->length) {
            goto again; /* short read or write: the rest */
        }
        *result = 0;
        return 1;
    }
    switch (t->op) {
    case BDEV_OP_FLUSH:
        *result = res < 0 ? res : 0;
        return 1;
    case BDEV_OP_WRITE_ZEROES:
        if (res == -EOPNOTSUPP || res == -EINVAL || res == -ENODEV) {
            dev->no_zero_range = 1;
            t->step = BDEV_STEP_ZERO_WRITE;
            t->done = 0;
            goto again;
        }
        if (res < 0) {
            *result = res;
            return 1;
        }
        if (t->flags & BDEV_IO_FUA) {
            t->step = BDEV_STEP_SYNC;
            goto again;
        }
        *result = 0;
        return 1;
    case BDEV_OP_UNMAP:
        if (dev->blkdev && (res == -EOPNOTSUPP || res == -EINVAL || res == -ENOTTY)) {
            /* A kernel without the block io_uring command (before 6.12): the ioctl, on a worker, from now on. */
            dev->no_discard_cmd = 1;
            *result = BDEV_RESULT_BLOCKING;
            return 1;
        }
        if (!dev->blkdev && (res == -EOPNOTSUPP || res == -EINVAL)) {
            dev->no_punch_hole = 1; /* zeros written instead, so reads still return zeros */
            t->step = BDEV_STEP_ZERO_WRITE;
            t->done = 0;
            goto again;
        }
        *result = res < 0 ? res : 0;
        return 1;
    default:
        *result = -EINVAL;
        return 1;
    }
again: {
        int rc = bdev_queue(g, tag);
        if (rc != 0) {
            *result = rc;
            return 1;
        }
        return 0;
    }
}

jint bdev_poll(JNIEnv *env, jclass cls, jlong handle, jint max)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    uint32_t limit = max < 0 ? 0 : (uint32_t)max;
    if (limit > g->capacity) {
        limit = g->capacity;
    }
    uint32_t n = 0;
    while (n < limit && g->pending_count > 0) {
        g->cpls[n++] = g->pending[g->pending_head];
        g->pending_head = (g->pending_head + 1) % g->capacity;
        g->pending_count--;
    }
    while (n < limit && g->uring_inflight > 0) {
        struct io_uring_cqe *cqe;
        if (io_uring_peek_cqe(&g->ring, &cqe) != 0) {
            break;
        }
        uint32_t tag = (uint32_t)io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&g->ring, cqe);
        g->uring_inflight--;
        if (tag >= g->capacity) {
            continue;
        }
        int32_t result;
        if (bdev_advance(g, tag, res, &result)) {
            g->cpls[n].tag = tag;
            g->cpls[n].result = result;
            n++;
        }
    }
    if (g->to_submit > 0) {
        if (io_uring_submit(&g->ring) >= 0) {
            g->to_submit = 0;
        }
    }
    return (jint)n;
}

/* Blocks up to timeout_nanos for a completion of an in-flight I/O; returns at once when there is none to wait for. */
jint bdev_wait(JNIEnv *env, jclass cls, jlong handle, jlong timeout_nanos)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    if (g->pending_count > 0 || g->uring_inflight == 0 || timeout_nanos <= 0) {
        return 0;
    }
    struct __kernel_timespec ts = {.tv_sec = timeout_nanos / 1000000000L, .tv_nsec = timeout_nanos % 1000000000L};
    struct io_uring_cqe *cqe;
    int rc = io_uring_wait_cqe_timeout(&g->ring, &cqe, &ts);
    return rc == -ETIME || rc == -EINTR ? 0 : rc;
}

/*
 * Makes this ring's completions wake a thread blocked in `selector` (issue 17: one wait primitive per reactor): the
 * selector's wake-up eventfd is registered as the ring's completion eventfd, so a completion is a Selector.wakeup()
 * done by the kernel, and the selector drains the eventfd itself as it does after a wakeup(). Notifications start
 * disabled: bdev_group_arm enables them only while the reactor blocks, so a busy reactor's completions never touch
 * the selector. The kernel checks that the fd is an eventfd (EINVAL otherwise).
 */
jint bdev_group_wake_selector(JNIEnv *env, jclass cls, jlong handle, jobject selector)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    if (g->wakes_selector) {
        return -EBUSY;
    }
    int fd;
    int found = nvmeof4j_selector_fds(env, selector, NULL, &fd); /* common/selector.c */
    if (found < 0) {
        return found;
    }
    if (g->ring.cq.kflags == NULL) {
        return -ENOSYS; /* a kernel before 5.8: no way to turn notifications off while busy */
    }
    int rc = io_uring_register_eventfd(&g->ring, fd);
    if (rc < 0) {
        return rc;
    }
    io_uring_cq_eventfd_toggle(&g->ring, false);
    g->wakes_selector = 1;
    return 0;
}

/*
 * The reactor is about to block in the selector: completions from now on signal its eventfd. Returns 1 when a
 * completion is already there (or waits in the kernel's task work) and the reactor must not block. The fence orders
 * our flag store before our loads of the CQ tail and SQ flags; the kernel posts a CQE and then reads the flag under
 * its completion lock, so one of the two sides sees the other (no lost wake-up).
 */
jint bdev_group_arm(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    io_uring_cq_eventfd_toggle(&g->ring, true);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (g->pending_count > 0 || io_uring_cq_ready(&g->ring) > 0
        || (IO_URING_READ_ONCE(*g->ring.sq.kflags) & IORING_SQ_TASKRUN)) {
        return 1;
    }
    return 0;
}

/* The reactor is awake again: its polling finds completions, the selector need not hear of them. */
jint bdev_group_disarm(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    io_uring_cq_eventfd_toggle(&g->ring, false);
    return 0;
}

/* out: in flight on the ring, completions waiting to be reaped */
jint bdev_group_pending(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    return (jint)(g->uring_inflight + g->pending_count);
}

