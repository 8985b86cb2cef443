package io.nvmeof4j.tcp.tls;

import java.util.Arrays;

/**
 * A PSK identity with its TLS PSK (the key TLS 1.3 uses as the external PSK). The key stays out of
 * {@link #toString()}; {@link #clear()} wipes it once the handshake no longer needs it.
 */
public final class DerivedPsk {
    private final PskIdentity identity;
    private final byte[] tlsPsk;

    DerivedPsk(PskIdentity identity, byte[] tlsPsk) {
        this.identity = identity;
        this.tlsPsk = tlsPsk;
    }

    public PskIdentity identity() {
        return identity;
    }

    /** A copy of the TLS PSK (tests compare it with the Linux host's; the handshake takes it from here). */
    public byte[] tlsPsk() {
        return tlsPsk.clone();
    }

    /** An independent copy: a handshake clears the one it is given. */
    DerivedPsk copy() {
        return new DerivedPsk(identity, tlsPsk.clone());
    }

    byte[] tlsPskUnsafe() {
        return tlsPsk;
    }

    public void clear() {
        Arrays.fill(tlsPsk, (byte) 0);
    }

    @Override
    public String toString() {
        return "DerivedPsk[" + identity + "]";
    }
}
