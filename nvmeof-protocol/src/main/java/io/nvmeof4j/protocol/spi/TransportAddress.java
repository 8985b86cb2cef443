package io.nvmeof4j.protocol.spi;

import java.net.InetAddress;
import java.net.UnknownHostException;
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

    /**
     * TRADDR as an address, without any name lookup: an IPv4 or IPv6 literal only, like the Linux host's TRADDR,
     * so that no connect step can block on a resolver beyond its timeout.
     *
     * @throws UnknownHostException when TRADDR is not an IP literal
     */
    public InetAddress inetAddress() throws UnknownHostException {
        boolean ipv4 = traddr.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
        if (ipv4) {
            for (String octet : traddr.split("\\.")) {
                if (Integer.parseInt(octet) > 255) {
                    throw new UnknownHostException("not an IP literal: " + traddr);
                }
            }
        }
        boolean ipv6 = traddr.indexOf(':') >= 0 && traddr.matches("[0-9A-Fa-f:.]+(%[0-9A-Za-z]+)?");
        if (!ipv4 && !ipv6) {
            throw new UnknownHostException("not an IP literal: " + traddr);
        }
        return InetAddress.getByName(traddr); // a literal: parsed, never looked up
    }

    public TransportAddress withPort(int port) {
        return new TransportAddress(type, family, traddr, Integer.toString(port));
    }

    @Override
    public String toString() {
        return type.configName() + "://" + (family == AddressFamily.IPV6 ? "[" + traddr + "]" : traddr) + ":" + trsvcid;
    }
}
