package io.nvmeof4j.protocol;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.UUID;

/**
 * A 128-bit host identifier (Connect data HOSTID, bytes 0-15). The Linux host pairs it 1:1 with its host NQN
 * and sends the UUID's bytes in order (most significant byte first), as nvme-cli prints it.
 */
public record HostId(UUID uuid) {
    public static final int LENGTH = 16;

    public HostId {
        Objects.requireNonNull(uuid, "uuid");
    }

    public static HostId random() {
        return new HostId(UUID.randomUUID());
    }

    public static HostId parse(String text) {
        return new HostId(UUID.fromString(text));
    }

    /** Reads 16 bytes at {@code offset} (absolute), first byte = most significant byte of the UUID. */
    public static HostId read(ByteBuffer buffer, int offset) {
        long msb = 0;
        long lsb = 0;
        for (int i = 0; i < 8; i++) {
            msb = msb << 8 | (buffer.get(offset + i) & 0xFF);
            lsb = lsb << 8 | (buffer.get(offset + 8 + i) & 0xFF);
        }
        return new HostId(new UUID(msb, lsb));
    }

    public void write(ByteBuffer buffer, int offset) {
        long msb = uuid.getMostSignificantBits();
        long lsb = uuid.getLeastSignificantBits();
        for (int i = 0; i < 8; i++) {
            buffer.put(offset + i, (byte) (msb >>> (56 - 8 * i)));
            buffer.put(offset + 8 + i, (byte) (lsb >>> (56 - 8 * i)));
        }
    }

    public boolean isZero() {
        return uuid.getMostSignificantBits() == 0 && uuid.getLeastSignificantBits() == 0;
    }

    @Override
    public String toString() {
        return uuid.toString();
    }
}
