package io.nvmeof4j.protocol.spi;

import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;

import java.util.Objects;

/**
 * Transport-independent settings of one port.
 *
 * @param inlineDataSize in-capsule data bytes accepted on I/O queues (nvmetcli {@code param.inline_data_size})
 * @param maxQueueSize   largest submission queue a host may create, in entries (MQES + 1)
 * @param maxDataTransferSize largest data transfer of one command, in bytes (MDTS); the pool's largest buffer
 * @param connectionLimits limits on queues that have not completed their Connect yet
 * @param secureChannel  TREQ bits 1:0 as the discovery log reports them (nvmetcli {@code addr.treq}): 0 not
 *                       specified, 1 required, 2 not required ({@code DiscoveryLogEntry.TREQ_SECURE_CHANNEL_*})
 * @param tcpSecurityType NVMe/TCP TSAS SECTYPE (nvmetcli {@code addr.tsas}): 0 none or 2 TLS 1.3
 *                       ({@code DiscoveryLogEntry.TCP_SECTYPE_*}); with TLS 1.3 a host may (not required) or must
 *                       (required) start the connection with a TLS handshake
 */
public record PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize,
                          ConnectionLimits connectionLimits, int secureChannel, int tcpSecurityType) {
    public static final int ADMIN_IN_CAPSULE_DATA_SIZE = 8192;
    public static final int INLINE_DATA_SIZE_DEFAULT = 16384;
    public static final int MAX_QUEUE_SIZE_DEFAULT = 128;
    public static final int MAX_DATA_TRANSFER_SIZE_DEFAULT = 1 << 20;

    private static final int SECURE_CHANNEL_NOT_SPECIFIED = DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_SPECIFIED;
    private static final int SECURE_CHANNEL_REQUIRED = DiscoveryLogEntry.TREQ_SECURE_CHANNEL_REQUIRED;
    private static final int SECURE_CHANNEL_NOT_REQUIRED = DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_REQUIRED;
    private static final int SECTYPE_NONE = DiscoveryLogEntry.TCP_SECTYPE_NONE;
    /** TLS 1.2 (SECTYPE 1) was never adopted by NVMe/TCP; only TLS 1.3 is served. */
    private static final int SECTYPE_TLS13 = DiscoveryLogEntry.TCP_SECTYPE_TLS13;

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
        if (secureChannel < SECURE_CHANNEL_NOT_SPECIFIED || secureChannel > SECURE_CHANNEL_NOT_REQUIRED) {
            throw new IllegalArgumentException("secure channel requirement " + secureChannel + " outside 0..2");
        }
        if (tcpSecurityType != SECTYPE_NONE && tcpSecurityType != SECTYPE_TLS13) {
            throw new IllegalArgumentException("TCP security type " + tcpSecurityType + " is not 0 (none) or 2 (TLS 1.3)");
        }
        if (secureChannel == SECURE_CHANNEL_REQUIRED && tcpSecurityType != SECTYPE_TLS13) {
            throw new IllegalArgumentException("a required secure channel needs TLS 1.3 (SECTYPE 2)");
        }
    }

    /** With the default {@link ConnectionLimits}, without a secure channel. */
    public PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize) {
        this(inlineDataSize, maxQueueSize, maxDataTransferSize, ConnectionLimits.defaults());
    }

    /** Without a secure channel. */
    public PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize,
                       ConnectionLimits connectionLimits) {
        this(inlineDataSize, maxQueueSize, maxDataTransferSize, connectionLimits, SECURE_CHANNEL_NOT_SPECIFIED,
            SECTYPE_NONE);
    }

    public static PortOptions defaults() {
        return new PortOptions(INLINE_DATA_SIZE_DEFAULT, MAX_QUEUE_SIZE_DEFAULT, MAX_DATA_TRANSFER_SIZE_DEFAULT);
    }

    public PortOptions withInlineDataSize(int bytes) {
        return new PortOptions(bytes, maxQueueSize, maxDataTransferSize, connectionLimits, secureChannel,
            tcpSecurityType);
    }

    public PortOptions withConnectionLimits(ConnectionLimits limits) {
        return new PortOptions(inlineDataSize, maxQueueSize, maxDataTransferSize, limits, secureChannel,
            tcpSecurityType);
    }

    /** TLS 1.3 on this port: {@code required} refuses plain connections, otherwise both are served. */
    public PortOptions withTls(boolean required) {
        return new PortOptions(inlineDataSize, maxQueueSize, maxDataTransferSize, connectionLimits,
            required ? SECURE_CHANNEL_REQUIRED : SECURE_CHANNEL_NOT_REQUIRED, SECTYPE_TLS13);
    }

    public boolean tls() {
        return tcpSecurityType == SECTYPE_TLS13;
    }

    public boolean tlsRequired() {
        return secureChannel == SECURE_CHANNEL_REQUIRED;
    }
}
