package io.nvmeof4j.tcp.tls;

/**
 * The controller's PSK store: the TLS PSK for an identity a host offers, or null when this controller has no
 * configured PSK for that host (or does not serve that subsystem). Called on the reactor thread during the
 * handshake: must not block.
 */
@FunctionalInterface
public interface PskResolver {
    DerivedPsk resolve(PskIdentity identity);
}
