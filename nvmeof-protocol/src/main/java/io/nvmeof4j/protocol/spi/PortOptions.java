package io.nvmeof4j.protocol.spi;

/**
 * Transport-independent settings of one port.
 *
 * @param inlineDataSize in-capsule data bytes accepted on I/O queues (nvmetcli {@code param.inline_data_size})
 * @param maxQueueSize   largest submission queue a host may create, in entries (MQES + 1)
 * @param maxDataTransferSize largest data transfer of one command, in bytes (MDTS); the pool's largest buffer
 * @param secureChannel  TREQ bits 1:0 as the discovery log reports them (nvmetcli {@code addr.treq}):
 *                       {@link #SECURE_CHANNEL_NOT_SPECIFIED}, {@link #SECURE_CHANNEL_REQUIRED} or
 *                       {@link #SECURE_CHANNEL_NOT_REQUIRED}
 * @param tcpSecurityType NVMe/TCP TSAS SECTYPE (nvmetcli {@code addr.tsas}): {@link #SECTYPE_NONE} or
 *                       {@link #SECTYPE_TLS13}; with TLS 1.3 a host may (not required) or must (required) start
 *                       the connection with a TLS handshake
 */
public record PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize, int secureChannel,
                          int tcpSecurityType) {
    public static final int ADMIN_IN_CAPSULE_DATA_SIZE = 8192;
    public static final int INLINE_DATA_SIZE_DEFAULT = 16384;
    public static final int MAX_QUEUE_SIZE_DEFAULT = 128;
    public static final int MAX_DATA_TRANSFER_SIZE_DEFAULT = 1 << 20;

    public static final int SECURE_CHANNEL_NOT_SPECIFIED = 0;
    public static final int SECURE_CHANNEL_REQUIRED = 1;
    public static final int SECURE_CHANNEL_NOT_REQUIRED = 2;
    /** NVMe/TCP SECTYPE values (libnvme NVMF_TCP_SECTYPE_*): 1 is TLS 1.2, which NVMe/TCP never adopted. */
    public static final int SECTYPE_NONE = 0;
    public static final int SECTYPE_TLS13 = 2;

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

    /** A port without a secure channel. */
    public PortOptions(int inlineDataSize, int maxQueueSize, int maxDataTransferSize) {
        this(inlineDataSize, maxQueueSize, maxDataTransferSize, SECURE_CHANNEL_NOT_SPECIFIED, SECTYPE_NONE);
    }

    public static PortOptions defaults() {
        return new PortOptions(INLINE_DATA_SIZE_DEFAULT, MAX_QUEUE_SIZE_DEFAULT, MAX_DATA_TRANSFER_SIZE_DEFAULT);
    }

    public PortOptions withInlineDataSize(int bytes) {
        return new PortOptions(bytes, maxQueueSize, maxDataTransferSize, secureChannel, tcpSecurityType);
    }

    /** TLS 1.3 on this port: {@code required} refuses plain connections, otherwise both are served. */
    public PortOptions withTls(boolean required) {
        return new PortOptions(inlineDataSize, maxQueueSize, maxDataTransferSize,
            required ? SECURE_CHANNEL_REQUIRED : SECURE_CHANNEL_NOT_REQUIRED, SECTYPE_TLS13);
    }

    public boolean tls() {
        return tcpSecurityType == SECTYPE_TLS13;
    }

    public boolean tlsRequired() {
        return secureChannel == SECURE_CHANNEL_REQUIRED;
    }
}
