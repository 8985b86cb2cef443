package io.nvmeof4j.protocol.spi;

import java.util.Objects;

/**
 * Transport-independent settings of one port.
 *
 * @param inlineDataSize in-capsule data bytes accepted on I/O queues (nvmetcli {@code param.inline_data_size})
 * @param maxQueueSize   largest submission queue a host may create, in entries (MQES + 1)
 * @param maxDataTransferSize largest data transfer of one command, in bytes (MDTS); the pool's largest buffer
 * @param connectionLimits limits on queues that have not completed their Connect yet
 */
public record PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize,
                          ConnectionLimits connectionLimits) {
    public static final int ADMIN_IN_CAPSULE_DATA_SIZE = 8192;
    public static final int INLINE_DATA_SIZE_DEFAULT = 16384;
    public static final int MAX_QUEUE_SIZE_DEFAULT = 128;
    public static final int MAX_DATA_TRANSFER_SIZE_DEFAULT = 1 << 20;

    public PortOptions {
        if (inlineDataSize < 0 || inlineDataSize > (1 << 20)) {
            throw new IllegalArgumentException("inline_data_size " + inlineDataSize + " outside 0..1048576");
        }
        if (maxQueueSize < 2 || maxQueueSize > 65536) {
            throw new IllegalArgumentException("max queue size " + maxQueueSize + " outside 2..65536");
        }
        if (maxDataTransferSize < 4096 || Integer.bitCount(maxDataTransferSize) != 1) {
            throw new IllegalArgumentException("max data transfer size " + maxDataTransferSize
                + " must be a power of two of at least 4096");
        }
        Objects.requireNonNull(connectionLimits, "connectionLimits");
    }

    /** With the default {@link ConnectionLimits}. */
    public PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize) {
        this(inlineDataSize, maxQueueSize, maxDataTransferSize, ConnectionLimits.defaults());
    }

    public static PortOptions defaults() {
        return new PortOptions(INLINE_DATA_SIZE_DEFAULT, MAX_QUEUE_SIZE_DEFAULT, MAX_DATA_TRANSFER_SIZE_DEFAULT);
    }

    public PortOptions withInlineDataSize(int bytes) {
        return new PortOptions(bytes, maxQueueSize, maxDataTransferSize, connectionLimits);
    }

    public PortOptions withConnectionLimits(ConnectionLimits limits) {
        return new PortOptions(inlineDataSize, maxQueueSize, maxDataTransferSize, limits);
    }
}
