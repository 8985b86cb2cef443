package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte I/O Command Set Independent Identify Namespace data structure (CNS 08h;
 * NVMe Base 2.0, 5.17.2.10 Figure 288; wire reference 2.7).
 *
 * <pre>
 *  0 NSFEAT   1 NMIC   2 RESCAP   3 FPI   4 ANAGRPID(4)   8 NSATTR   9 rsvd   10 NVMSETID(2)   12 ENDGID(2)
 * 14 NSTAT (bit 0: namespace ready)   15.. reserved
 * </pre>
 * The Linux host skips a namespace whose NSTAT bit 0 is clear. Little-endian.
 */
public final class IoCommandSetIndependentNamespace {
    public static final int LENGTH = 4096;

    public static final int NSFEAT_OFFSET = 0;
    public static final int NMIC_OFFSET = 1;
    public static final int RESCAP_OFFSET = 2;
    public static final int FPI_OFFSET = 3;
    public static final int ANAGRPID_OFFSET = 4;
    public static final int NSATTR_OFFSET = 8;
    public static final int NVMSETID_OFFSET = 10;
    public static final int ENDGID_OFFSET = 12;
    public static final int NSTAT_OFFSET = 14;

    public static final int NSTAT_READY = 1;
    /** NSFEAT bit 4 here: the namespace is on rotational media. */
    public static final int NSFEAT_ROTATIONAL = 1 << 4;

    private ByteBuffer buffer;
    private int offset;

    public IoCommandSetIndependentNamespace wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("CNS 08h data needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public IoCommandSetIndependentNamespace clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int features() { return buffer.get(offset + NSFEAT_OFFSET) & 0xFF; }
    public IoCommandSetIndependentNamespace features(int v) { buffer.put(offset + NSFEAT_OFFSET, (byte) v); return this; }

    public int multiPathCapabilities() { return buffer.get(offset + NMIC_OFFSET) & 0xFF; }
    public IoCommandSetIndependentNamespace multiPathCapabilities(int v) {
        buffer.put(offset + NMIC_OFFSET, (byte) v);
        return this;
    }

    public int anaGroupId() { return buffer.getInt(offset + ANAGRPID_OFFSET); }
    public IoCommandSetIndependentNamespace anaGroupId(int v) { buffer.putInt(offset + ANAGRPID_OFFSET, v); return this; }

    public int attributes() { return buffer.get(offset + NSATTR_OFFSET) & 0xFF; }
    public IoCommandSetIndependentNamespace attributes(int v) { buffer.put(offset + NSATTR_OFFSET, (byte) v); return this; }

    public int enduranceGroupId() { return buffer.getShort(offset + ENDGID_OFFSET) & 0xFFFF; }
    public IoCommandSetIndependentNamespace enduranceGroupId(int v) {
        buffer.putShort(offset + ENDGID_OFFSET, (short) v);
        return this;
    }

    public int status() { return buffer.get(offset + NSTAT_OFFSET) & 0xFF; }
    public IoCommandSetIndependentNamespace status(int v) { buffer.put(offset + NSTAT_OFFSET, (byte) v); return this; }

    public boolean isReady() {
        return (status() & NSTAT_READY) != 0;
    }
}
