package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte Changed Namespace List log (log 04h; NVMe Base 2.0, 5.16.1.5): up to 1024 NSIDs
 * whose attributes changed since the log was last read, zero-terminated. When more than 1024 changed, the first
 * entry is 0xFFFFFFFF and the rest are zero ({@link #markOverflow()}).
 */
public final class ChangedNamespaceList {
    public static final int LENGTH = 4096;
    public static final int MAX_ENTRIES = LENGTH / 4;
    /** First entry when more namespaces changed than the list can hold. */
    public static final int OVERFLOW = 0xFFFF_FFFF;

    private ByteBuffer buffer;
    private int offset;

    public ChangedNamespaceList wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ChangedNamespaceList clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int nsid(int index) {
        checkIndex(index);
        return buffer.getInt(offset + index * 4);
    }

    public ChangedNamespaceList nsid(int index, int nsid) {
        checkIndex(index);
        buffer.putInt(offset + index * 4, nsid);
        return this;
    }

    /** Clears the list and marks it as overflowed. */
    public ChangedNamespaceList markOverflow() {
        clear();
        buffer.putInt(offset, OVERFLOW);
        return this;
    }

    public boolean isOverflow() {
        return buffer.getInt(offset) == OVERFLOW;
    }

    /** Entries before the first zero. */
    public int count() {
        int n = 0;
        while (n < MAX_ENTRIES && buffer.getInt(offset + n * 4) != 0) {
            n++;
        }
        return n;
    }

    private static void checkIndex(int index) {
        if (index < 0 || index >= MAX_ENTRIES) {
            throw new IndexOutOfBoundsException("entry " + index + " outside 0.." + (MAX_ENTRIES - 1));
        }
    }
}
