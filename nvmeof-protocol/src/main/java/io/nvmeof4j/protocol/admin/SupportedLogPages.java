package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 1024-byte Supported Log Pages log (log 00h; NVMe Base 2.0, 5.16.1.1): one dword per log
 * page identifier, bit 0 LSUPP (supported), bit 1 IOS (index offset supported).
 */
public final class SupportedLogPages {
    public static final int LENGTH = 1024;
    public static final int LSUPP = 1;
    public static final int IOS = 1 << 1;

    private ByteBuffer buffer;
    private int offset;

    public SupportedLogPages wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public SupportedLogPages clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int descriptor(int lid) {
        return buffer.getInt(offset + (lid & 0xFF) * 4);
    }

    public SupportedLogPages descriptor(int lid, int value) {
        buffer.putInt(offset + (lid & 0xFF) * 4, value);
        return this;
    }
}
