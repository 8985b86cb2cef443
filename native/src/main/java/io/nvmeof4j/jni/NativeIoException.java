package io.nvmeof4j.jni;

import java.io.IOException;

/**
 * A native call failed. Every native of nvmeof4j returns {@code -errno}; the Java wrapper turns a negative result
 * into this exception, keeping the operation and the errno as a number (so callers can branch on it) as well as
 * in the message.
 */
public final class NativeIoException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String operation;
    private final int errno;

    public NativeIoException(String operation, int errno) {
        super(operation + " failed: " + Errno.describe(errno));
        this.operation = operation;
        this.errno = errno;
    }

    public NativeIoException(String operation, int errno, String detail) {
        super(operation + " failed: " + Errno.describe(errno) + " (" + detail + ")");
        this.operation = operation;
        this.errno = errno;
    }

    /** What was attempted, for example {@code "rdma_resolve_addr 10.0.2.15:4420"}. */
    public String operation() {
        return operation;
    }

    /** The positive errno value. */
    public int errno() {
        return errno;
    }

    /**
     * Returns {@code result} when it is not negative, otherwise throws for {@code -result}.
     */
    public static int check(String operation, int result) throws NativeIoException {
        if (result < 0) {
            throw new NativeIoException(operation, -result);
        }
        return result;
    }

    /** The {@code long} flavour of {@link #check(String, int)}, for natives returning handles. */
    public static long check(String operation, long result) throws NativeIoException {
        if (result < 0) {
            throw new NativeIoException(operation, (int) -result);
        }
        return result;
    }
}
