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
 */
public record UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly,
                           Confinement confinement) {
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

    public UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly) {
        this(buffered, blockSize, sizeBytes, create, readOnly, Confinement.NONE);
    }

    public static UringOptions defaults() {
        return new UringOptions(false, 0, 0, false, false);
    }

    public UringOptions withConfinement(Confinement value) {
        return new UringOptions(buffered, blockSize, sizeBytes, create, readOnly, value);
    }

    public UringOptions withBuffered(boolean value) {
        return new UringOptions(value, blockSize, sizeBytes, create, readOnly, confinement);
    }

    public UringOptions withBlockSize(int value) {
        return new UringOptions(buffered, value, sizeBytes, create, readOnly, confinement);
    }

    public UringOptions withSize(long value) {
        return new UringOptions(buffered, blockSize, value, create, readOnly, confinement);
    }

    public UringOptions withCreate(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, value, readOnly, confinement);
    }
}
