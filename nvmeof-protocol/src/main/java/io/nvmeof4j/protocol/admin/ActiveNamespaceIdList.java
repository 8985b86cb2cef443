package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte Active Namespace ID list (Identify CNS 02h and 07h; NVMe Base 2.0, 5.17.2.2;
 * wire reference 2.7): up to 1024 NSIDs, little-endian dwords in increasing order, all greater than the
 * command's NSID; unused entries are zero, so the first 0 ends the list.
 *
 * <pre>
 *  0        4        8              4092     4096
 * +--------+--------+----- ... ----+--------+
 * | NSID 0 | NSID 1 |              |NSID1023|
 * +--------+--------+----- ... ----+--------+
 * </pre>
 */
public final class ActiveNamespaceIdList {
    public static final int LENGTH = 4096;
    public static final int MAX_ENTRIES = LENGTH / 4;

    private ByteBuffer buffer;
    private int offset;

    public ActiveNamespaceIdList wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("namespace list needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ActiveNamespaceIdList clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int nsid(int index) {
        checkIndex(index);
        return buffer.getInt(offset + index * 4);
    }

    public ActiveNamespaceIdList nsid(int index, int nsid) {
        checkIndex(index);
        buffer.putInt(offset + index * 4, nsid);
        return this;
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
