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
 * @param shared    open read-write under the shared lock: other shared openers (a second daemon serving the same
 *                  subsystem) may write too, an exclusive opener is still refused
 */
public record UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly,
                           boolean shared) {
    /** Without {@code shared}: an exclusive open (or a read-only one). */
    public UringOptions(boolean buffered, int blockSize, long sizeBytes, boolean create, boolean readOnly) {
        this(buffered, blockSize, sizeBytes, create, readOnly, false);
    }

    public static UringOptions defaults() {
        return new UringOptions(false, 0, 0, false, false, false);
    }

    public UringOptions withBuffered(boolean value) {
        return new UringOptions(value, blockSize, sizeBytes, create, readOnly, shared);
    }

    public UringOptions withBlockSize(int value) {
        return new UringOptions(buffered, value, sizeBytes, create, readOnly, shared);
    }

    public UringOptions withSize(long value) {
        return new UringOptions(buffered, blockSize, value, create, readOnly, shared);
    }

    public UringOptions withCreate(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, value, readOnly, shared);
    }

    public UringOptions withShared(boolean value) {
        return new UringOptions(buffered, blockSize, sizeBytes, create, readOnly, value);
    }
}
