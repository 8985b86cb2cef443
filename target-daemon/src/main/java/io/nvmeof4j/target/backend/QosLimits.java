package io.nvmeof4j.target.backend;

/**
 * A bdev's (namespace's) QoS rate limits, as SPDK's {@code bdev_set_qos_limit} takes them; 0 means "no limit" for
 * each. Only Read and Write are limited (SPDK's {@code bdev_qos_io_to_limit}): Flush, Write Zeroes and Deallocate
 * pass freely. Compare, Verify and Copy are limited by the reads and writes they make of the device.
 *
 * @param rwIosPerSec    reads and writes per second together; a multiple of {@value #MIN_IOS_PER_SEC}
 *                       ({@link #of} rounds up, as SPDK does, logging the rounding)
 * @param rwMbytesPerSec read and written MiB per second together (SPDK's "megabytes" are MiB)
 * @param rMbytesPerSec  read MiB per second
 * @param wMbytesPerSec  written MiB per second
 */
public record QosLimits(long rwIosPerSec, long rwMbytesPerSec, long rMbytesPerSec, long wMbytesPerSec) {
    /** No limit at all. */
    public static final QosLimits NONE = new QosLimits(0, 0, 0, 0);
    /** SPDK_BDEV_QOS_MIN_IOS_PER_SEC: an IOPS limit is a whole number of I/Os per 1 ms timeslice. */
    public static final long MIN_IOS_PER_SEC = 1000;
    /** SPDK_BDEV_QOS_MAX_MBYTES_PER_SEC: the largest MiB/s whose byte count fits 64 bits. */
    public static final long MAX_MBYTES_PER_SEC = Long.MAX_VALUE / (1024 * 1024);
    /** The largest IOPS limit: the largest multiple of {@value #MIN_IOS_PER_SEC} in 64 signed bits. */
    public static final long MAX_IOS_PER_SEC = Long.MAX_VALUE - Long.MAX_VALUE % MIN_IOS_PER_SEC;
    /** The parameter (and configuration key) names, SPDK's. */
    public static final String RW_IOS_PER_SEC = "rw_ios_per_sec";
    public static final String RW_MBYTES_PER_SEC = "rw_mbytes_per_sec";
    public static final String R_MBYTES_PER_SEC = "r_mbytes_per_sec";
    public static final String W_MBYTES_PER_SEC = "w_mbytes_per_sec";

    public QosLimits {
        check(RW_IOS_PER_SEC, rwIosPerSec, MAX_IOS_PER_SEC);
        if (rwIosPerSec % MIN_IOS_PER_SEC != 0) {
            throw new IllegalArgumentException(RW_IOS_PER_SEC + " " + rwIosPerSec + " is not a multiple of "
                + MIN_IOS_PER_SEC);
        }
        check(RW_MBYTES_PER_SEC, rwMbytesPerSec, MAX_MBYTES_PER_SEC);
        check(R_MBYTES_PER_SEC, rMbytesPerSec, MAX_MBYTES_PER_SEC);
        check(W_MBYTES_PER_SEC, wMbytesPerSec, MAX_MBYTES_PER_SEC);
    }

    private static void check(String name, long value, long max) {
        if (value < 0 || value > max) {
            throw new IllegalArgumentException(name + " " + value + " is outside 0.." + max);
        }
    }

    /**
     * The limits SPDK would set from these values: an IOPS limit that is not a multiple of {@value #MIN_IOS_PER_SEC}
     * is rounded up to the next one, a bandwidth over {@link #MAX_MBYTES_PER_SEC} is lowered to it (SPDK's
     * {@code spdk_bdev_set_qos_rate_limits}). Negative values are refused.
     */
    public static QosLimits of(long rwIosPerSec, long rwMbytesPerSec, long rMbytesPerSec, long wMbytesPerSec) {
        check(RW_IOS_PER_SEC, rwIosPerSec, Long.MAX_VALUE);
        long iops = rwIosPerSec % MIN_IOS_PER_SEC == 0 ? rwIosPerSec
            : rwIosPerSec > MAX_IOS_PER_SEC ? MAX_IOS_PER_SEC
            : rwIosPerSec + MIN_IOS_PER_SEC - rwIosPerSec % MIN_IOS_PER_SEC;
        return new QosLimits(iops, capped(RW_MBYTES_PER_SEC, rwMbytesPerSec), capped(R_MBYTES_PER_SEC, rMbytesPerSec),
            capped(W_MBYTES_PER_SEC, wMbytesPerSec));
    }

    private static long capped(String name, long mbytes) {
        check(name, mbytes, Long.MAX_VALUE);
        return Math.min(mbytes, MAX_MBYTES_PER_SEC);
    }

    /** True when nothing is limited. */
    public boolean none() {
        return rwIosPerSec == 0 && rwMbytesPerSec == 0 && rMbytesPerSec == 0 && wMbytesPerSec == 0;
    }

    @Override
    public String toString() {
        if (none()) {
            return "no QoS limit";
        }
        StringBuilder sb = new StringBuilder();
        append(sb, rwIosPerSec, " IOPS");
        append(sb, rwMbytesPerSec, " MiB/s read+write");
        append(sb, rMbytesPerSec, " MiB/s read");
        append(sb, wMbytesPerSec, " MiB/s write");
        return sb.toString();
    }

    private static void append(StringBuilder sb, long value, String unit) {
        if (value > 0) {
            sb.append(sb.length() == 0 ? "" : ", ").append(value).append(unit);
        }
    }
}
