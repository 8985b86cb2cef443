/*
 * libnvmeof4j-bdev: a block-device layer shaped like SPDK's bdev (docs: architecture.md, "The native layer").
 *
 *   device (struct bdev)        name, block size, block count, capabilities; a file or block device through
 *                               io_uring. spdk_bdev. (RAM and null namespaces are Java: target-daemon's
 *                               RamBlockDevice and NullBlockDevice complete inline, with no native call.)
 *   descriptor (bdev_desc)      an open of a device, read-only or read-write. spdk_bdev_desc.
 *   poll group (bdev_group)     one per reactor thread: one io_uring shared by every device the thread uses
 *                               (like SPDK's uring module's per-thread group channel), the reactor's buffer pool
 *                               registered as fixed buffers, a submission array Java fills and a completion array
 *                               Java reads, both preallocated native memory.
 *   channel (bdev_channel)      a descriptor's I/O channel on one poll group. spdk_io_channel.
 *
 * Batching: Java writes N submission entries and makes one call (bdev_submit) that queues them all and enters the
 * kernel once; one call (bdev_poll) reaps up to N completions into the completion array. Each I/O carries a tag
 * (0 .. capacity-1) Java chose; the tag indexes both Java's context table and the native task table, so nothing is
 * allocated per I/O on either side.
 *
 * Semantics: FUA writes carry RWF_DSYNC; flush is fdatasync (IORING_OP_FSYNC + DATASYNC); write zeroes is
 * fallocate(ZERO_RANGE | KEEP_SIZE) and, where the file system or device refuses it, writes of a zero buffer;
 * unmap is fallocate(PUNCH_HOLE | KEEP_SIZE) on files and a discard on block devices: the io_uring block command
 * where the kernel has it (6.12+, learned at run time from the first refusal). Where it has not, BLKDISCARD is an
 * ioctl the kernel runs synchronously for as long as the discard takes (seconds on large ranges), so the shim never
 * runs it on the polling thread: it completes the I/O with BDEV_RESULT_BLOCKING and Java hands it to a worker that
 * calls bdev_discard_blocking. Short reads and writes are resubmitted for the rest; a read at end of file returns
 * zeros for the missing part; a write that makes no progress fails with EIO. Results are 0 or -errno (or
 * BDEV_RESULT_BLOCKING): the NVMe status is chosen in Java.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <liburing.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nvmeof4j_jni.h"

#define BDEV_TYPE_URING 1

#define BDEV_CAP_FLUSH 0x1
#define BDEV_CAP_UNMAP 0x2
#define BDEV_CAP_WRITE_ZEROES 0x4
#define BDEV_CAP_FUA 0x8

#define BDEV_OP_READ 0
#define BDEV_OP_WRITE 1
#define BDEV_OP_FLUSH 2
#define BDEV_OP_WRITE_ZEROES 3
#define BDEV_OP_UNMAP 4
/* No device access: completes after t->length nanoseconds (IORING_OP_TIMEOUT). A completion that arrives while
 * the reactor blocks, at a known time: what the wake-up tests and benchmarks need. */
#define BDEV_OP_DELAY 5

#define BDEV_IO_FUA 0x1
#define BDEV_IO_FIXED 0x2

#define BDEV_OPEN_BUFFERED 0x1
#define BDEV_OPEN_CREATE 0x2
#define BDEV_OPEN_READ_ONLY 0x4
/* A path the management API checked against nvmeof4j.allowed_paths: opened without following any symlink (so one
 * swapped in after the check fails with ELOOP instead of leading elsewhere), created only if still absent (O_EXCL),
 * and only a regular file with one link (a hard link could name a file outside the allowed directories). */
#define BDEV_OPEN_CONFINED 0x8
/* With BDEV_OPEN_CONFINED: the checked path was a block device, and must still be one. */
#define BDEV_OPEN_BLOCK_DEVICE 0x10
#define BDEV_OPEN_NO_DISCARD_CMD 0x20 /* behave as a kernel without the block discard command (tests, old kernels) */
/* Read-write under the shared lock: a second daemon serving the same subsystem from the same file. */
#define BDEV_OPEN_SHARED 0x40

/* A completion result meaning "not done: run it with the blocking call on a worker thread" (errno results are < 0). */
#define BDEV_RESULT_BLOCKING 1

/* Task states beyond the plain operation. */
#define BDEV_STEP_MAIN 0
#define BDEV_STEP_ZERO_WRITE 1 /* writing the zero buffer (write zeroes / unmap fallback) */
#define BDEV_STEP_SYNC 2       /* fdatasync after a FUA fallocate */

#define BDEV_ZERO_BUFFER (1u << 20)
#define BDEV_MAX_CAPACITY 32768u

/* The kernel's block io_uring command (include/uapi/linux/fs.h, 6.12): BLOCK_URING_CMD_DISCARD = _IO(0x12, 0). */
#define BDEV_BLOCK_URING_CMD_DISCARD _IO(0x12, 0)

struct bdev {
    int type;
    int fd;
    int blkdev;
    int direct;
    int read_only;
    uint32_t block_size;
    uint32_t dio_align;
    uint64_t size_bytes;
    uint32_t caps;
    /* Learned at run time, never reset: the fallocate or command the file system / kernel refused. */
    int no_zero_range;
    int no_punch_hole;
    int no_discard_cmd;
    int created; /* the open created the file: a failed open removes it again */
};

struct bdev_desc {
    struct bdev *bdev;
    int writable;
};

struct bdev_group;

struct bdev_channel {
    struct bdev_desc *desc;
    struct bdev_group *group;
};

struct bdev_task {
    struct bdev_channel *channel;
    uint64_t offset;
    uint64_t addr;
    uint64_t length;
    uint64_t done;
    uint16_t op;
    uint16_t flags;
    int step;
    struct __kernel_timespec delay; /* BDEV_OP_DELAY: read by the kernel when the entry is submitted */
};

/* The submission entry Java writes (offsets reported by bdev_layout). */
struct bdev_sub {
    uint64_t channel;
    uint64_t offset;
    uint64_t addr;
    uint64_t length;
    uint16_t op;
    uint16_t flags;
    uint32_t tag;
};

/* The completion entry Java reads. */
struct bdev_cpl {
    uint32_t tag;
    int32_t result;
};

struct bdev_group {
    struct io_uring ring;
    uint32_t capacity;
    struct bdev_task *tasks;
    struct bdev_sub *subs;
    struct bdev_cpl *cpls;
    /* Completions decided at submission (refused entries, the discard ioctl): a FIFO of capacity. */
    struct bdev_cpl *pending;
    uint32_t pending_head;
    uint32_t pending_count;
    uint32_t uring_inflight;
    uint32_t to_submit;
    uint8_t *region;
    uint64_t region_len;
    int fixed;
    int fixed_errno;
    uint8_t *zeroes;
    /* bdev_group_wake_selector succeeded: completions signal a selector's eventfd while armed (bdev_group_arm). */
    int wakes_selector;
};

/* ------------------------------------------------------------------------------------------------ devices */

static uint64_t bdev_round_down(uint64_t v, uint32_t align) { return v - v % align; }

/* open(2), or for a confined path openat2(2) resolving no symlink at all (Linux 5.6+; older kernels: ENOSYS, and
 * the path is refused rather than opened unconfined). */
static int bdev_open_path(const char *path, int oflags, int confined)
{
    if (!confined) {
        return open(path, oflags, 0644);
    }
    struct open_how how = {.flags = (uint64_t)oflags, .mode = (oflags & O_CREAT) ? 0600 : 0,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

static jlong bdev_uring_open(JNIEnv *env, jclass cls, jstring jpath, jint flags, jint block_size, jlong size_bytes)
{
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        return -ENOMEM;
    }
    int read_only = (flags & BDEV_OPEN_READ_ONLY) != 0;
    int oflags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
    int direct = (flags & BDEV_OPEN_BUFFERED) == 0;
    int confined = (flags & BDEV_OPEN_CONFINED) != 0;
    int create = (flags & BDEV_OPEN_CREATE) != 0 && !read_only;
    int created = 0;
    int fd = -1;
    errno = ENOENT;
    /* A confined path to create was absent when checked: an existing file there appeared since, and is refused
     * (EEXIST from the O_EXCL create below) instead of opened. */
    if (!(confined && create)) {
        fd = bdev_open_path(path, oflags | (direct ? O_DIRECT : 0), confined);
        if (fd < 0 && direct && errno == EINVAL) {
            /* The file system has no O_DIRECT (tmpfs before 6.6, some FUSE): buffered, and Java says so. */
            direct = 0;
            fd = bdev_open_path(path, oflags, confined);
        }
    }
    if (fd < 0 && errno == ENOENT && create) {
        /* O_EXCL: only a file this call created is removed again when the open fails further on. O_DIRECT is set
         * after the create, so a file system refusing it leaves no file to remove before a second attempt. */
        fd = bdev_open_path(path, oflags | O_CREAT | O_EXCL, confined);
        created = fd >= 0;
        if (created && direct) {
            int fl = fcntl(fd, F_GETFL);
            if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT) != 0) {
                direct = 0;
            }
        }
    }
    int err = fd < 0 ? NVMEOF4J_ERR() : 0;
    if (fd < 0) {
        (*env)->ReleaseStringUTFChars(env, jpath, path);
        return err;
    }
    struct bdev *dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        close(fd);
        if (created) {
            unlink(path);
        }
        (*env)->ReleaseStringUTFChars(env, jpath, path);
        return -ENOMEM;
    }
    dev->created = created;
    dev->no_discard_cmd = (flags & BDEV_OPEN_NO_DISCARD_CMD) != 0;
    dev->type = BDEV_TYPE_URING;
    dev->fd = fd;
    dev->direct = direct;
    dev->read_only = read_only;
    /* An open-file-description lock: it conflicts with another open of the file in this process and with POSIX
     * (fcntl) locks of other processes, which is what Java's FileChannel.lock and nvmet-style tools take.
     * Shared opens (two daemons serving one subsystem from one file) take the read lock: shared openers coexist,
     * while an exclusive opener and a shared one still refuse each other. */
    int shared = (flags & BDEV_OPEN_SHARED) != 0;
    struct flock lk = {.l_type = (read_only || shared) ? F_RDLCK : F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
                       .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &lk) != 0) {
        err = (errno == EAGAIN || errno == EACCES) ? -EBUSY : NVMEOF4J_ERR();
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        err = NVMEOF4J_ERR();
        goto fail;
    }
    if (confined && ((flags & BDEV_OPEN_BLOCK_DEVICE) ? !S_ISBLK(st.st_mode) : !S_ISREG(st.st_mode))) {
        err = -ENODEV;
        goto fail;
    }
    if (confined && S_ISREG(st.st_mode) && st.st_nlink != 1) {
        err = -EMLINK;
        goto fail;
    }
    uint64_t device_bytes;
    if (S_ISBLK(st.st_mode)) {
        int lbs = 0;
        if (ioctl(fd, BLKSSZGET, &lbs) != 0 || ioctl(fd, BLKGETSIZE64, &device_bytes) != 0) {
            err = NVMEOF4J_ERR();
            goto fail;
        }
        dev->blkdev = 1;
        dev->dio_align = (uint32_t)lbs;
        if (block_size == 0) {
            block_size = lbs;
        } else if (direct && (uint32_t)block_size < (uint32_t)lbs) {
            /* O_DIRECT I/O smaller than the logical block size fails with EINVAL: refuse at open instead. */
            err = -EINVAL;
            goto fail;
        }
    } else if (S_ISREG(st.st_mode)) {
        device_bytes = (uint64_t)st.st_size;
        dev->dio_align = 512;
        if (block_size == 0) {
            block_size = 4096;
        }
    } else {
        err = -ENODEV;
        goto fail;
    }
    if (block_size < 512 || block_size > 65536 || (block_size & (block_size - 1)) != 0) {
        err = -EINVAL;
        goto fail;
    }
    dev->block_size = (uint32_t)block_size;
    if (size_bytes > 0) {
        if ((uint64_t)size_bytes > device_bytes) {
            if (dev->blkdev || read_only) {
                err = -ENOSPC;
                goto fail;
            }
            if (ftruncate(fd, size_bytes) != 0) { /* sparse extension */
                err = NVMEOF4J_ERR();
                goto fail;
            }
        }
        dev->size_bytes = (uint64_t)size_bytes;
    } else {
        dev->size_bytes = bdev_round_down(device_bytes, dev->block_size);
    }
    if (dev->size_bytes == 0) {
        err = -ENOSPC;
        goto fail;
    }
    dev->caps = BDEV_CAP_FLUSH | BDEV_CAP_UNMAP | BDEV_CAP_WRITE_ZEROES | BDEV_CAP_FUA;
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    return nvmeof4j_handle(dev);
fail:
    close(fd);
    if (dev->created) {
        unlink(path);
    }
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    free(dev);
    return err;
}

/* Sets the size I/O is checked against (a namespace resized live): size_bytes > 0 that size, 0 the file's or block
 * device's size now rounded down to blocks (a rescan), which may not shrink the device (-EBUSY, as SPDK's bdev layer
 * refuses shrinking an open bdev); never beyond what the file or device holds (-ENOSPC). Returns the size set, or
 * -errno. A plain aligned 64-bit store: a reactor checking an I/O sees the old or the new size. */
static jlong bdev_resize(JNIEnv *env, jclass cls, jlong handle, jlong size_bytes)
{
    struct bdev *dev = nvmeof4j_ptr(handle);
    if (dev->type != BDEV_TYPE_URING || size_bytes < 0) {
        return -EINVAL;
    }
    struct stat st;
    uint64_t device_bytes;
    if (fstat(dev->fd, &st) != 0) {
        return NVMEOF4J_ERR();
    }
    if (S_ISBLK(st.st_mode)) {
        if (ioctl(dev->fd, BLKGETSIZE64, &device_bytes) != 0) {
            return NVMEOF4J_ERR();
        }
    } else {
        device_bytes = (uint64_t)st.st_size;
    }
    uint64_t size = size_bytes > 0 ? (uint64_t)size_bytes : bdev_round_down(device_bytes, dev->block_size);
    if (size == 0 || size % dev->block_size != 0) {
        return -EINVAL;
    }
    if (size > device_bytes) {
        return -ENOSPC;
    }
    if (size_bytes == 0 && size < dev->size_bytes) {
        return -EBUSY;
    }
    __atomic_store_n(&dev->size_bytes, size, __ATOMIC_RELEASE);
    return (jlong)size;
}

/* out: type, block size, block count, capabilities, direct, block device, dio alignment, created */
static jint bdev_info(JNIEnv *env, jclass cls, jlong handle, jlongArray out)
{
    struct bdev *dev = nvmeof4j_ptr(handle);
    jlong v[8] = {dev->type, dev->block_size, (jlong)(dev->size_bytes / dev->block_size), dev->caps, dev->direct,
                  dev->blkdev, dev->dio_align, dev->created};
    if ((*env)->GetArrayLength(env, out) < 8) {
        return -EINVAL;
    }
    (*env)->SetLongArrayRegion(env, out, 0, 8, v);
    return 0;
}

/* BLKDISCARD, synchronously: for a worker thread, never a reactor (it blocks for as long as the discard takes). */
static jint bdev_discard_blocking(JNIEnv *env, jclass cls, jlong handle, jlong offset, jlong length)
{
    struct bdev *dev = nvmeof4j_ptr(handle);
    if (!dev->blkdev || offset < 0 || length < 0 || (uint64_t)offset + (uint64_t)length > dev->size_bytes) {
        return -EINVAL;
    }
    uint64_t range[2] = {(uint64_t)offset, (uint64_t)length};
    return ioctl(dev->fd, BLKDISCARD, range) == 0 ? 0 : NVMEOF4J_ERR();
}

static jint bdev_close_device(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev *dev = nvmeof4j_ptr(handle);
    int err = 0;
    if (dev->fd >= 0) {
        if (!dev->read_only && fsync(dev->fd) != 0) {
            err = NVMEOF4J_ERR();
        }
        close(dev->fd);
    }
    free(dev);
    return err;
}

static jlong bdev_open_desc(JNIEnv *env, jclass cls, jlong handle, jboolean writable)
{
    struct bdev *dev = nvmeof4j_ptr(handle);
    if (writable && dev->read_only) {
        return -EROFS;
    }
    struct bdev_desc *desc = calloc(1, sizeof(*desc));
    if (desc == NULL) {
        return -ENOMEM;
    }
    desc->bdev = dev;
    desc->writable = writable;
    return nvmeof4j_handle(desc);
}

static jint bdev_close_desc(JNIEnv *env, jclass cls, jlong handle)
{
    free(nvmeof4j_ptr(handle));
    return 0;
}

/* ------------------------------------------------------------------------------------------------ groups */

static jlong bdev_group_create(JNIEnv *env, jclass cls, jint capacity, jobject region)
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
static jint bdev_group_arrays(JNIEnv *env, jclass cls, jlong handle, jobjectArray out)
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
static jint bdev_group_info(JNIEnv *env, jclass cls, jlong handle, jlongArray out)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    jlong v[4] = {g->fixed, g->fixed_errno, (jlong)(intptr_t)g->region, (jlong)g->region_len};
    (*env)->SetLongArrayRegion(env, out, 0, 4, v);
    return 0;
}

static jint bdev_group_destroy(JNIEnv *env, jclass cls, jlong handle)
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

static jlong bdev_channel_create(JNIEnv *env, jclass cls, jlong desc_handle, jlong group_handle)
{
    struct bdev_channel *ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return -ENOMEM;
    }
    ch->desc = nvmeof4j_ptr(desc_handle);
    ch->group = nvmeof4j_ptr(group_handle);
    return nvmeof4j_handle(ch);
}

static jint bdev_channel_destroy(JNIEnv *env, jclass cls, jlong handle)
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
            if (dev->no_zero_range) {
                t->step = BDEV_STEP_ZERO_WRITE;
                bdev_prep_zero_write(g, dev, t, sqe);
            } else {
                io_uring_prep_fallocate(sqe, dev->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, t->offset,
                                        t->length);
            }
            break;
        case BDEV_OP_UNMAP:
            if (dev->blkdev) {
                /* io_uring_prep_cmd_discard of liburing 2.8, written out for 2.3. */
                io_uring_prep_rw(IORING_OP_URING_CMD, sqe, dev->fd, NULL, 0, 0);
                sqe->cmd_op = BDEV_BLOCK_URING_CMD_DISCARD;
                sqe->addr = t->offset;
                sqe->addr3 = t->length;
            } else if (dev->no_punch_hole) {
                t->step = BDEV_STEP_ZERO_WRITE;
                bdev_prep_zero_write(g, dev, t, sqe);
            } else {
                io_uring_prep_fallocate(sqe, dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, t->offset,
                                        t->length);
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

static jint bdev_submit(JNIEnv *env, jclass cls, jlong handle, jint count)
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

static jint bdev_poll(JNIEnv *env, jclass cls, jlong handle, jint max)
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
static jint bdev_wait(JNIEnv *env, jclass cls, jlong handle, jlong timeout_nanos)
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
 * The selector's own wake-up eventfd (sun.nio.ch.EPollSelectorImpl.eventfd.efd, JDK 16 and later), read through JNI,
 * which ignores module boundaries: no --add-opens. Returns the fd, or -ENOTSUP for any other selector (another
 * JDK, another provider): the caller then keeps the bounded ring wait.
 */
static int bdev_selector_eventfd(JNIEnv *env, jobject selector)
{
    jclass cls = (*env)->GetObjectClass(env, selector);
    jfieldID eventfd_field = (*env)->GetFieldID(env, cls, "eventfd", "Lsun/nio/ch/EventFD;");
    if (eventfd_field == NULL) {
        (*env)->ExceptionClear(env);
        return -ENOTSUP;
    }
    jobject eventfd = (*env)->GetObjectField(env, selector, eventfd_field);
    if (eventfd == NULL) {
        return -ENOTSUP;
    }
    jclass eventfd_cls = (*env)->GetObjectClass(env, eventfd);
    jfieldID efd_field = (*env)->GetFieldID(env, eventfd_cls, "efd", "I");
    if (efd_field == NULL) {
        (*env)->ExceptionClear(env);
        return -ENOTSUP;
    }
    jint fd = (*env)->GetIntField(env, eventfd, efd_field);
    return fd >= 0 ? fd : -EBADF;
}

/*
 * Makes this ring's completions wake a thread blocked in `selector` (issue 17: one wait primitive per reactor): the
 * selector's wake-up eventfd is registered as the ring's completion eventfd, so a completion is a Selector.wakeup()
 * done by the kernel, and the selector drains the eventfd itself as it does after a wakeup(). Notifications start
 * disabled: bdev_group_arm enables them only while the reactor blocks, so a busy reactor's completions never touch
 * the selector. The kernel checks that the fd is an eventfd (EINVAL otherwise).
 */
static jint bdev_group_wake_selector(JNIEnv *env, jclass cls, jlong handle, jobject selector)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    if (g->wakes_selector) {
        return -EBUSY;
    }
    int fd = bdev_selector_eventfd(env, selector);
    if (fd < 0) {
        return fd;
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
static jint bdev_group_arm(JNIEnv *env, jclass cls, jlong handle)
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
static jint bdev_group_disarm(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    io_uring_cq_eventfd_toggle(&g->ring, false);
    return 0;
}

/* out: in flight on the ring, completions waiting to be reaped */
static jint bdev_group_pending(JNIEnv *env, jclass cls, jlong handle)
{
    struct bdev_group *g = nvmeof4j_ptr(handle);
    return (jint)(g->uring_inflight + g->pending_count);
}

/* ------------------------------------------------------------------------------------------------ memory */

/*
 * An anonymous mapping for a buffer pool's region: no page is touched (so none is committed) until used.
 * MAP_HUGETLB when asked and the system has hugepages (the length is rounded up to 2 MiB); otherwise normal pages
 * and *fell_back says why. Returns the address or -errno.
 */
static jlong bdev_region_map(JNIEnv *env, jclass cls, jlong length, jboolean hugepages, jintArray fell_back)
{
    if (length <= 0) {
        return -EINVAL;
    }
    jint reason = 0;
    if (hugepages) {
        size_t huge = ((size_t)length + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
        /* No MAP_NORESERVE here: the hugetlb reservation is what makes a shortage fail now (ENOMEM, then normal
         * pages) instead of a SIGBUS at the first touch of a page the pool cannot back. */
        void *p = mmap(NULL, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p != MAP_FAILED) {
            return nvmeof4j_handle(p);
        }
        reason = errno > 0 ? errno : EIO;
    }
    (*env)->SetIntArrayRegion(env, fell_back, 0, 1, &reason);
    void *p = mmap(NULL, (size_t)length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NVMEOF4J_ERR() : nvmeof4j_handle(p);
}

static jobject bdev_region_buffer(JNIEnv *env, jclass cls, jlong address, jlong length)
{
    return (*env)->NewDirectByteBuffer(env, nvmeof4j_ptr(address), length);
}

static jint bdev_region_unmap(JNIEnv *env, jclass cls, jlong address, jlong length, jboolean hugepages)
{
    size_t len = (size_t)length;
    if (hugepages) {
        len = (len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    }
    return munmap(nvmeof4j_ptr(address), len) == 0 ? 0 : NVMEOF4J_ERR();
}

static jlong bdev_address(JNIEnv *env, jclass cls, jobject buffer)
{
    void *p = (*env)->GetDirectBufferAddress(env, buffer);
    return p == NULL ? -EINVAL : nvmeof4j_handle(p);
}

/* Sizes and offsets Java needs, in this order. */
static jint bdev_layout(JNIEnv *env, jclass cls, jintArray out)
{
    jint v[] = {
        (jint)sizeof(struct bdev_sub),
        (jint)offsetof(struct bdev_sub, channel),
        (jint)offsetof(struct bdev_sub, offset),
        (jint)offsetof(struct bdev_sub, addr),
        (jint)offsetof(struct bdev_sub, length),
        (jint)offsetof(struct bdev_sub, op),
        (jint)offsetof(struct bdev_sub, flags),
        (jint)offsetof(struct bdev_sub, tag),
        (jint)sizeof(struct bdev_cpl),
        (jint)offsetof(struct bdev_cpl, tag),
        (jint)offsetof(struct bdev_cpl, result),
        (jint)BDEV_MAX_CAPACITY,
        (jint)BDEV_RESULT_BLOCKING,
        (jint)BDEV_OP_DELAY,
    };
    if ((*env)->GetArrayLength(env, out) < (jsize)NVMEOF4J_ARRAY_LEN(v)) {
        return -EINVAL;
    }
    (*env)->SetIntArrayRegion(env, out, 0, NVMEOF4J_ARRAY_LEN(v), v);
    return (jint)NVMEOF4J_ARRAY_LEN(v);
}

static const JNINativeMethod bdev_methods[] = {
    {"uringOpen0", "(Ljava/lang/String;IIJ)J", (void *)bdev_uring_open},
    {"info0", "(J[J)I", (void *)bdev_info},
    {"resize0", "(JJ)J", (void *)bdev_resize},
    {"closeDevice0", "(J)I", (void *)bdev_close_device},
    {"openDesc0", "(JZ)J", (void *)bdev_open_desc},
    {"closeDesc0", "(J)I", (void *)bdev_close_desc},
    {"groupCreate0", "(ILjava/nio/ByteBuffer;)J", (void *)bdev_group_create},
    {"groupArrays0", "(J[Ljava/nio/ByteBuffer;)I", (void *)bdev_group_arrays},
    {"groupInfo0", "(J[J)I", (void *)bdev_group_info},
    {"groupDestroy0", "(J)I", (void *)bdev_group_destroy},
    {"groupPending0", "(J)I", (void *)bdev_group_pending},
    {"channelCreate0", "(JJ)J", (void *)bdev_channel_create},
    {"channelDestroy0", "(J)I", (void *)bdev_channel_destroy},
    {"submit0", "(JI)I", (void *)bdev_submit},
    {"poll0", "(JI)I", (void *)bdev_poll},
    {"wait0", "(JJ)I", (void *)bdev_wait},
    {"wakeSelector0", "(JLjava/nio/channels/Selector;)I", (void *)bdev_group_wake_selector},
    {"arm0", "(J)I", (void *)bdev_group_arm},
    {"disarm0", "(J)I", (void *)bdev_group_disarm},
    {"regionMap0", "(JZ[I)J", (void *)bdev_region_map},
    {"regionBuffer0", "(JJ)Ljava/nio/ByteBuffer;", (void *)bdev_region_buffer},
    {"regionUnmap0", "(JJZ)I", (void *)bdev_region_unmap},
    {"address0", "(Ljava/nio/ByteBuffer;)J", (void *)bdev_address},
    {"layout0", "([I)I", (void *)bdev_layout},
    {"discardBlocking0", "(JJJ)I", (void *)bdev_discard_blocking},
};

NVMEOF4J_EXPORT jint JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) {
        return JNI_ERR;
    }
    if (nvmeof4j_register(env, "io/nvmeof4j/jni/bdev/BdevNative", bdev_methods, NVMEOF4J_ARRAY_LEN(bdev_methods))
        != JNI_OK) {
        return JNI_ERR;
    }
    return JNI_VERSION_1_8;
}
