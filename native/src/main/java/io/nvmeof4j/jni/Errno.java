package io.nvmeof4j.jni;

/**
 * Linux errno values the native layer reports, with their symbolic names for messages. The values are the
 * x86-64/generic Linux ones (asm-generic/errno-base.h, errno.h); unknown numbers print as numbers.
 */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int E2BIG = 7;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int ENODEV = 19;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int EMLINK = 31;
    public static final int ERANGE = 34;
    public static final int ENOSYS = 38;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    public static final int ETIME = 62;
    public static final int EPROTO = 71;
    public static final int EOVERFLOW = 75;
    public static final int EOPNOTSUPP = 95;
    public static final int EADDRINUSE = 98;
    public static final int EADDRNOTAVAIL = 99;
    public static final int ENETUNREACH = 101;
    public static final int ECONNABORTED = 103;
    public static final int ECONNRESET = 104;
    public static final int ENOBUFS = 105;
    public static final int ENOTCONN = 107;
    public static final int ETIMEDOUT = 110;
    public static final int ECONNREFUSED = 111;
    public static final int EHOSTUNREACH = 113;
    public static final int EALREADY = 114;
    public static final int ECANCELED = 125;

    private Errno() {
    }

    /** The symbolic name, for example {@code "ENOSPC"}, or {@code "errno 200"} for a value not listed here. */
    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case ESRCH -> "ESRCH";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case ENXIO -> "ENXIO";
            case E2BIG -> "E2BIG";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EFAULT -> "EFAULT";
            case EBUSY -> "EBUSY";
            case EEXIST -> "EEXIST";
            case ENODEV -> "ENODEV";
            case EISDIR -> "EISDIR";
            case EINVAL -> "EINVAL";
            case EFBIG -> "EFBIG";
            case ENOSPC -> "ENOSPC";
            case EROFS -> "EROFS";
            case EMLINK -> "EMLINK";
            case ERANGE -> "ERANGE";
            case ENOSYS -> "ENOSYS";
            case ELOOP -> "ELOOP";
            case ENODATA -> "ENODATA";
            case ETIME -> "ETIME";
            case EPROTO -> "EPROTO";
            case EOVERFLOW -> "EOVERFLOW";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            case EADDRINUSE -> "EADDRINUSE";
            case EADDRNOTAVAIL -> "EADDRNOTAVAIL";
            case ENETUNREACH -> "ENETUNREACH";
            case ECONNABORTED -> "ECONNABORTED";
            case ECONNRESET -> "ECONNRESET";
            case ENOBUFS -> "ENOBUFS";
            case ENOTCONN -> "ENOTCONN";
            case ETIMEDOUT -> "ETIMEDOUT";
            case ECONNREFUSED -> "ECONNREFUSED";
            case EHOSTUNREACH -> "EHOSTUNREACH";
            case EALREADY -> "EALREADY";
            case ECANCELED -> "ECANCELED";
            default -> "errno " + errno;
        };
    }

    /** {@code "ENOSPC (errno 28)"}: the name and the number, for messages. */
    public static String describe(int errno) {
        String name = name(errno);
        return name.startsWith("errno ") ? name : name + " (errno " + errno + ")";
    }
}
