package io.nvmeof4j.protocol.spi;

import java.util.Objects;

/**
 * Where a port listens or a host connects: the TRTYPE/ADRFAM/TRADDR/TRSVCID quadruple of a discovery log entry.
 * {@code trsvcid} is the service id as text (the TCP/RDMA-CM port number); "0" asks the transport for any free port.
 */
public record TransportAddress(TransportType type, AddressFamily family, String traddr, String trsvcid) {
    public TransportAddress {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(family, "family");
        Objects.requireNonNull(traddr, "traddr");
        Objects.requireNonNull(trsvcid, "trsvcid");
    }

    public static TransportAddress tcp(String traddr, int port) {
        return new TransportAddress(TransportType.TCP, traddr.contains(":") ? AddressFamily.IPV6 : AddressFamily.IPV4,
            traddr, Integer.toString(port));
    }

    /** The service id as a port number. */
    public int port() {
        try {
            return Integer.parseInt(trsvcid);
        } catch (NumberFormatException e) {
            throw new IllegalStateException("trsvcid '" + trsvcid + "' is not a port number", e);
        }
    }

    public TransportAddress withPort(int port) {
        return new TransportAddress(type, family, traddr, Integer.toString(port));
    }

    @Override
    public String toString() {
        return type.configName() + "://" + (family == AddressFamily.IPV6 ? "[" + traddr + "]" : traddr) + ":" + trsvcid;
    }
}
