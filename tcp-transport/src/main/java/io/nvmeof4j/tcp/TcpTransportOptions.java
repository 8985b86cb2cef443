package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.tcp.ICRespPdu;

import java.util.function.IntFunction;

/**
 * NVMe/TCP settings of a {@link TcpControllerTransport}, on top of the transport-independent
 * {@link io.nvmeof4j.protocol.spi.PortOptions}. Defaults can be overridden with the {@code *_PROP_NAME} system
 * properties.
 *
 * @param maxH2CDataSize    MAXH2CDATA sent in ICResp: the largest H2CData PDU a host may send (at least 4096, a
 *                          multiple of 4). nvmet sends 4 MiB; we default to 256 KiB, which bounds how much of one
 *                          PDU a slow host can make us wait for.
 * @param c2hDataPduSize    largest DATAL of one C2HData PDU; a read bigger than this goes out as several PDUs
 * @param receiveBufferSize bytes of the per-connection receive buffer that PDU headers and small payloads are read
 *                          into (larger payloads are read straight into the command's data buffer)
 * @param socketBufferSize  SO_SNDBUF and SO_RCVBUF of every accepted socket (the kernel doubles it and caps it at
 *                          net.core.wmem_max/rmem_max), or 0 (the default) to leave both to the kernel's
 *                          autotuning, as the Linux kernel target does. SPDK's posix sock layer sets 2 MiB; measured
 *                          side by side on 128 KiB reads and 4 KiB writes it made no difference here
 *                          (docs/benchmarks.md), and a fixed size turns autotuning off for every connection, so it is
 *                          an option, not the default
 */
public record TcpTransportOptions(int maxH2CDataSize, int c2hDataPduSize, int receiveBufferSize,
                                  int socketBufferSize) {
    public static final String MAX_H2C_DATA_SIZE_PROP_NAME = "nvmeof4j.tcp.max.h2c.data.size";
    public static final int MAX_H2C_DATA_SIZE_DEFAULT = 0x40000;
    public static final String C2H_DATA_PDU_SIZE_PROP_NAME = "nvmeof4j.tcp.c2h.data.pdu.size";
    public static final int C2H_DATA_PDU_SIZE_DEFAULT = 128 * 1024;
    public static final String RECEIVE_BUFFER_SIZE_PROP_NAME = "nvmeof4j.tcp.receive.buffer.size";
    public static final int RECEIVE_BUFFER_SIZE_DEFAULT = 64 * 1024;
    public static final String SOCKET_BUFFER_SIZE_PROP_NAME = "nvmeof4j.tcp.socket.buffer.size";
    public static final int SOCKET_BUFFER_SIZE_DEFAULT = 0;

    public static final int MIN_C2H_DATA_PDU_SIZE = 4096;
    /** Smallest receive buffer: it must hold the largest PDU header with padding and digest, with room to spare. */
    public static final int MIN_RECEIVE_BUFFER_SIZE = 4096;

    public TcpTransportOptions {
        if (maxH2CDataSize < ICRespPdu.MIN_MAX_H2C_DATA || (maxH2CDataSize & 3) != 0) {
            throw new IllegalArgumentException("MAXH2CDATA " + maxH2CDataSize
                + " must be at least 4096 and a multiple of 4 (the Linux host rejects anything else)");
        }
        if (c2hDataPduSize < MIN_C2H_DATA_PDU_SIZE) {
            throw new IllegalArgumentException("C2HData PDU size " + c2hDataPduSize + " must be at least "
                + MIN_C2H_DATA_PDU_SIZE);
        }
        if (receiveBufferSize < MIN_RECEIVE_BUFFER_SIZE) {
            throw new IllegalArgumentException("receive buffer size " + receiveBufferSize + " must be at least "
                + MIN_RECEIVE_BUFFER_SIZE);
        }
        if (socketBufferSize < 0) {
            throw new IllegalArgumentException("socket buffer size " + socketBufferSize
                + " must be 0 (kernel autotuning) or more");
        }
    }

    /**
     * The defaults, each overridable by its system property; a malformed value, or one this record refuses, is
     * refused naming the property ({@link JvmOptions}).
     */
    public static TcpTransportOptions defaults() {
        TcpTransportOptions options = new TcpTransportOptions(MAX_H2C_DATA_SIZE_DEFAULT, C2H_DATA_PDU_SIZE_DEFAULT,
            RECEIVE_BUFFER_SIZE_DEFAULT, SOCKET_BUFFER_SIZE_DEFAULT);
        options = fromProperty(MAX_H2C_DATA_SIZE_PROP_NAME, options.maxH2CDataSize, ICRespPdu.MIN_MAX_H2C_DATA,
            options::withMaxH2CDataSize);
        options = fromProperty(C2H_DATA_PDU_SIZE_PROP_NAME, options.c2hDataPduSize, MIN_C2H_DATA_PDU_SIZE,
            options::withC2HDataPduSize);
        options = fromProperty(RECEIVE_BUFFER_SIZE_PROP_NAME, options.receiveBufferSize, MIN_RECEIVE_BUFFER_SIZE,
            options::withReceiveBufferSize);
        return fromProperty(SOCKET_BUFFER_SIZE_PROP_NAME, options.socketBufferSize, 0, options::withSocketBufferSize);
    }

    /**
     * {@code min} is the constructor's bound, so a refusal says the range; the constructor's other rules (MAXH2CDATA
     * a multiple of 4) are refused by it, named here.
     */
    private static TcpTransportOptions fromProperty(String name, int defaultValue, int min,
                                                    IntFunction<TcpTransportOptions> with) {
        int value = JvmOptions.intOption(name, defaultValue, min, Integer.MAX_VALUE);
        try {
            return with.apply(value);
        } catch (IllegalArgumentException e) {
            throw JvmOptions.refused(name, Integer.toString(value), e.getMessage());
        }
    }

    public TcpTransportOptions withMaxH2CDataSize(int bytes) {
        return new TcpTransportOptions(bytes, c2hDataPduSize, receiveBufferSize, socketBufferSize);
    }

    public TcpTransportOptions withC2HDataPduSize(int bytes) {
        return new TcpTransportOptions(maxH2CDataSize, bytes, receiveBufferSize, socketBufferSize);
    }

    public TcpTransportOptions withReceiveBufferSize(int bytes) {
        return new TcpTransportOptions(maxH2CDataSize, c2hDataPduSize, bytes, socketBufferSize);
    }

    public TcpTransportOptions withSocketBufferSize(int bytes) {
        return new TcpTransportOptions(maxH2CDataSize, c2hDataPduSize, receiveBufferSize, bytes);
    }
}
