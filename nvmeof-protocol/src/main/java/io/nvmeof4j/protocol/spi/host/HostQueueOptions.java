package io.nvmeof4j.protocol.spi.host;

import java.time.Duration;
import java.util.Objects;

/**
 * How to open one host queue.
 *
 * @param depth             command slots (CIDs) of the queue: the most commands outstanding at once, 1..4096
 *                          (the Linux host: 32 on the admin queue, SQSIZE + 1 on I/O queues)
 * @param headerDigest      ask for CRC32C header digests (NVMe/TCP)
 * @param dataDigest        ask for CRC32C data digests (NVMe/TCP)
 * @param inCapsuleDataSize largest write sent as in-capsule data: {@link #ADMIN_IN_CAPSULE_DATA_SIZE} on the admin
 *                          queue, IOCCSZ × 16 − 64 on I/O queues. Fabrics commands always go in-capsule up to
 *                          {@link #ADMIN_IN_CAPSULE_DATA_SIZE}, as the Linux host sends them.
 * @param connectTimeout    bound on the whole transport-level connect (TCP connect, TLS handshake, ICReq/ICResp)
 * @param tls               TLS 1.3 with this PSK before ICReq (NVMe/TCP only), or null for a plain connection
 */
public record HostQueueOptions(int depth, boolean headerDigest, boolean dataDigest, int inCapsuleDataSize,
                               Duration connectTimeout, HostTlsPsk tls) {
    /** In-capsule data of the admin queue and of every Fabrics command (the Linux host's NVME_TCP_ADMIN_CCSZ). */
    public static final int ADMIN_IN_CAPSULE_DATA_SIZE = 8192;
    /** Largest depth: CIDs carry a 4-bit generation in bits 15:12, as the Linux host's do. */
    public static final int MAX_DEPTH = 4096;
    /** The Linux host's wait for ICResp. */
    public static final Duration CONNECT_TIMEOUT_DEFAULT = Duration.ofSeconds(10);

    public HostQueueOptions {
        if (depth < 1 || depth > MAX_DEPTH) {
            throw new IllegalArgumentException("queue depth " + depth + " outside 1.." + MAX_DEPTH);
        }
        if (inCapsuleDataSize < 0) {
            throw new IllegalArgumentException("in-capsule data size " + inCapsuleDataSize + " is negative");
        }
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        if (connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("connect timeout " + connectTimeout + " must be positive");
        }
    }

    /** A plain (no TLS) queue. */
    public HostQueueOptions(int depth, boolean headerDigest, boolean dataDigest, int inCapsuleDataSize,
                            Duration connectTimeout) {
        this(depth, headerDigest, dataDigest, inCapsuleDataSize, connectTimeout, null);
    }

    public HostQueueOptions withTls(HostTlsPsk psk) {
        return new HostQueueOptions(depth, headerDigest, dataDigest, inCapsuleDataSize, connectTimeout, psk);
    }

    /** An admin queue as the Linux host opens it: 32 slots, 8 KiB in-capsule. */
    public static HostQueueOptions admin(boolean headerDigest, boolean dataDigest, Duration connectTimeout) {
        return new HostQueueOptions(32, headerDigest, dataDigest, ADMIN_IN_CAPSULE_DATA_SIZE, connectTimeout);
    }
}
