/* libnvmeof4j-bdev: devices, descriptors, memory regions and the JNI registration (see bdev_internal.h). */
#include "bdev_internal.h"

/* ------------------------------------------------------------------------------------------------ devices */


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

/* ------------------------------------------------------------------------------------------------ memory */

#define HUGEPAGE_SIZE ((size_t)2 << 20)

/*
 * Normal pages; with `transparent`, transparent hugepages where the kernel allows them: a mapping of 2 MiB or more
 * starts on a 2 MiB boundary (mapped 2 MiB longer, the ends cut off) and is advised MADV_HUGEPAGE, so with THP
 * "always" or "madvise" (Debian's default) each 2 MiB is one TLB entry. A memory copy out of a 512 MiB RAM namespace
 * on 4 KiB pages misses the TLB on every random 4 KiB block and at every 4 KiB of a long one. The advice is a hint: a
 * kernel without THP answers EINVAL and the pages stay normal. Not the default: the first touch of each 2 MiB then
 * faults in all of it at once, which on a VM whose host takes back free guest memory costs milliseconds.
 */
static void *map_normal_pages(size_t length, int transparent)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (!transparent || length < HUGEPAGE_SIZE) {
        return mmap(NULL, length, PROT_READ | PROT_WRITE, flags, -1, 0);
    }
    size_t mapped = length + HUGEPAGE_SIZE;
    char *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) {
        return MAP_FAILED;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *start = (char *)(((uintptr_t)p + HUGEPAGE_SIZE - 1) & ~(uintptr_t)(HUGEPAGE_SIZE - 1));
    char *end = start + ((length + page - 1) & ~(page - 1));
    if (start > p) {
        munmap(p, (size_t)(start - p));
    }
    if (end < p + mapped) {
        munmap(end, (size_t)(p + mapped - end));
    }
    madvise(start, length, MADV_HUGEPAGE);
    return start;
}

/*
 * An anonymous mapping for a buffer pool's region or a RAM namespace's chunk: no page is touched (so none is
 * committed) until used. With `hugetlb`, MAP_HUGETLB when the system has hugepages (the length is rounded up to
 * 2 MiB), else normal pages advised for transparent hugepages, and *fell_back says why; with `transparent` alone,
 * normal pages advised for transparent hugepages (map_normal_pages). Returns the address or -errno.
 */
static jlong bdev_region_map(JNIEnv *env, jclass cls, jlong length, jboolean hugetlb, jboolean transparent,
                             jintArray fell_back)
{
    if (length <= 0) {
        return -EINVAL;
    }
    jint reason = 0;
    if (hugetlb) {
        size_t huge = ((size_t)length + HUGEPAGE_SIZE - 1) & ~(HUGEPAGE_SIZE - 1);
        /* No MAP_NORESERVE here: the hugetlb reservation is what makes a shortage fail now (ENOMEM, then normal
         * pages) instead of a SIGBUS at the first touch of a page the pool cannot back. */
        void *p = mmap(NULL, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p != MAP_FAILED) {
            return nvmeof4j_handle(p);
        }
        reason = errno > 0 ? errno : EIO;
    }
    (*env)->SetIntArrayRegion(env, fell_back, 0, 1, &reason);
    void *p = map_normal_pages((size_t)length, hugetlb || transparent);
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
        len = (len + HUGEPAGE_SIZE - 1) & ~(HUGEPAGE_SIZE - 1);
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
    {"regionMap0", "(JZZ[I)J", (void *)bdev_region_map},
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
