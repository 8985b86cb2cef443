package io.nvmeof4j.jni.bdev;

/**
 * How {@link Bdev#openUring} opens a file or block device.
 *
 * @param buffered  false: O_DIRECT (the default; the page cache is bypassed, FUA and flush reach the device);
 *                  true: through the page cache. A file system without O_DIRECT (tmpfs before Linux 6.6) is opened
 *                  buffered either way: {@link Bdev#isDirect()} tells
 * @param blockSize 512 or 4096; 0 for the device's logical block size (4096 for a regular file)
 * @param sizeBytes 0 for the whole file or device; otherwise the size used (a shorter file is extended, sparse)
 * @param create    create a missing file
 * @param readOnly  open read-only (a shared lock)
 * @param confinement what the caller checked the path to be; anything but {@link Confinement#NONE} opens it with
 *                  openat2(RESOLVE_NO_SYMLINKS), so a symlink swapped in after the check fails with ELOOP instead of
 *                  being followed; creates a file only if it is still absent (EEXIST otherwise); and refuses with
 *                  ENODEV a file of another type than checked, with EMLINK a regular file with more than one link
 * @param discardCommand use io_uring's block discard command (Linux 6.12+; where the kernel refuses it the device
 *                  learns that and completes discards with {@link Bdev#RESULT_BLOCKING}); false: act as on an
 *                  older kernel from the start (tests of the worker path, or a kernel whose command misbehaves)
 * @param shared    open read-write under the shared lock: other shared openers (a second daemon serving the same
 *                  subsystem) may write too, an exclusive opener is still refused
 */
public record UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly,
                           Confinement confinement, boolean discardCommand, boolean shared) {
    /** What a path was checked to be before it is opened (see {@link #confinement()}). */
    public enum Confinement {
        /** A trusted path (the configuration file): followed as {@code open(2)} follows it. */
        NONE,
        /** A regular file (or one to create) whose every path component was checked not to be a symlink. */
        REGULAR_FILE,
        /** A block device named by its real path. */
        BLOCK_DEVICE
    }

    public UringOptions {
        java.util.Objects.requireNonNull(confinement, "confinement");
    }

    /** An unconfined, exclusive (or read-only) open using the discard command. */
    public UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly) {
        this(buffered, blockSize, sizeBytes, create, readOnly, Confinement.NONE, true, false);
    }

    public static UringOptions defaults() {
        return new UringOptions(false, 0, 0, false, false);
    }

    public UringOptions withDiscardCommand(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, create, readOnly, confinement, value, shared);
    }

    public UringOptions withConfinement(Confinement value) {
        return new UringOptions(buffered, blockSize, sizeBytes, create, readOnly, value, discardCommand, shared);
    }

    public UringOptions withBuffered(boolean value) {
        return new UringOptions(value, blockSize, sizeBytes, create, readOnly, confinement, discardCommand, shared);
    }

    public UringOptions withBlockSize(int value) {
        return new UringOptions(buffered, value, sizeBytes, create, readOnly, confinement, discardCommand, shared);
    }

    public UringOptions withSize(long value) {
        return new UringOptions(buffered, blockSize, value, create, readOnly, confinement, discardCommand, shared);
    }

    public UringOptions withCreate(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, value, readOnly, confinement, discardCommand, shared);
    }

    public UringOptions withShared(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, create, readOnly, confinement, discardCommand, value);
    }
}
