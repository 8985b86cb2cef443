/*
 * libnvmeof4j-bdev (bdev.c: devices, descriptors, memory, registration; bdev_io.c: poll groups, channels, I/O):
 * a block-device layer shaped like SPDK's bdev (docs: architecture.md, "The native layer").
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
#ifndef NVMEOF4J_BDEV_INTERNAL_H
#define NVMEOF4J_BDEV_INTERNAL_H

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

static inline uint64_t bdev_round_down(uint64_t v, uint32_t align) { return v - v % align; }

/* bdev_io.c: poll groups, channels and I/O, registered by bdev.c. */
jlong bdev_group_create(JNIEnv *env, jclass cls, jint capacity, jobject region);
jint bdev_group_arrays(JNIEnv *env, jclass cls, jlong handle, jobjectArray out);
jint bdev_group_info(JNIEnv *env, jclass cls, jlong handle, jlongArray out);
jint bdev_group_destroy(JNIEnv *env, jclass cls, jlong handle);
jlong bdev_channel_create(JNIEnv *env, jclass cls, jlong desc_handle, jlong group_handle);
jint bdev_channel_destroy(JNIEnv *env, jclass cls, jlong handle);
jint bdev_submit(JNIEnv *env, jclass cls, jlong handle, jint count);
jint bdev_poll(JNIEnv *env, jclass cls, jlong handle, jint max);
jint bdev_wait(JNIEnv *env, jclass cls, jlong handle, jlong timeout_nanos);
jint bdev_group_wake_selector(JNIEnv *env, jclass cls, jlong handle, jobject selector);
jint bdev_group_arm(JNIEnv *env, jclass cls, jlong handle);
jint bdev_group_disarm(JNIEnv *env, jclass cls, jlong handle);
jint bdev_group_pending(JNIEnv *env, jclass cls, jlong handle);

#endif
