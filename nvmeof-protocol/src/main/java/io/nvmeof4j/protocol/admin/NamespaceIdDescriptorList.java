package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.UUID;

/**
 * Flyweight over the 4096-byte Namespace Identification Descriptor list (Identify CNS 03h; NVMe Base 2.0,
 * 5.17.2.3 Figures 283 and 284; wire reference 2.7).
 *
 * <pre>
 *  entry:  0      1      2      4
 *         +------+------+------+----------------------+
 *         | NIDT | NIDL | rsvd | NID (NIDL bytes)     |   next entry follows directly; NIDL 0 ends the list
 *         +------+------+------+----------------------+
 *  NIDT 1 EUI-64 (8)   2 NGUID (16)   3 UUID (16, most significant byte first)   4 CSI (1)
 * </pre>
 * Written front to back with the {@code add*} methods after {@link #clear()}; read by walking entry offsets
 * ({@link #type}, {@link #idLength}, {@link #nextEntry}). Mandatory for controllers reporting VS ≥ 1.3: an error
 * makes the Linux host skip the namespace.
 */
public final class NamespaceIdDescriptorList {
    public static final int LENGTH = 4096;
    public static final int HEADER_LENGTH = 4;

    public static final int NIDT_OFFSET = 0;
    public static final int NIDL_OFFSET = 1;
    public static final int NID_OFFSET = 4;

    public static final int NIDT_EUI64 = 1;
    public static final int NIDT_NGUID = 2;
    public static final int NIDT_UUID = 3;
    public static final int NIDT_CSI = 4;

    public static final int EUI64_LENGTH = 8;
    public static final int NGUID_LENGTH = 16;
    public static final int UUID_LENGTH = 16;
    public static final int CSI_LENGTH = 1;

    private ByteBuffer buffer;
    private int offset;
    private int writeOffset;

    public NamespaceIdDescriptorList wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("descriptor list needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        this.writeOffset = 0;
        return this;
    }

    /** Zeroes the list (an empty list: the first NIDL is 0) and restarts writing at the front. */
    public NamespaceIdDescriptorList clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        writeOffset = 0;
        return this;
    }

    /** Appends a descriptor with {@code length} bytes copied from {@code id}. */
    public NamespaceIdDescriptorList add(int type, byte[] id) {
        if (id.length == 0 || id.length > 255) {
            throw new IllegalArgumentException("NID length " + id.length + " outside 1..255");
        }
        if (writeOffset + HEADER_LENGTH + id.length > LENGTH) {
            throw new IllegalStateException("descriptor list full");
        }
        int at = offset + writeOffset;
        buffer.put(at + NIDT_OFFSET, (byte) type);
        buffer.put(at + NIDL_OFFSET, (byte) id.length);
        buffer.putShort(at + 2, (short) 0);
        for (int i = 0; i < id.length; i++) {
            buffer.put(at + NID_OFFSET + i, id[i]);
        }
        writeOffset += HEADER_LENGTH + id.length;
        return this;
    }

    public NamespaceIdDescriptorList addEui64(byte[] eui64) {
        checkLength(eui64, EUI64_LENGTH);
        return add(NIDT_EUI64, eui64);
    }

    public NamespaceIdDescriptorList addNguid(byte[] nguid) {
        checkLength(nguid, NGUID_LENGTH);
        return add(NIDT_NGUID, nguid);
    }

    public NamespaceIdDescriptorList addUuid(UUID uuid) {
        return add(NIDT_UUID, uuidBytes(uuid));
    }

    public NamespaceIdDescriptorList addCommandSetIdentifier(int csi) {
        return add(NIDT_CSI, new byte[] {(byte) csi});
    }

    /** Bytes written so far (the offset of the terminating zero header). */
    public int writtenLength() {
        return writeOffset;
    }

    public int type(int entryOffset) {
        return buffer.get(offset + entryOffset + NIDT_OFFSET) & 0xFF;
    }

    /** NIDL of the entry at {@code entryOffset}; 0 marks the end of the list. */
    public int idLength(int entryOffset) {
        if (entryOffset + HEADER_LENGTH > LENGTH) {
            return 0;
        }
        return buffer.get(offset + entryOffset + NIDL_OFFSET) & 0xFF;
    }

    public byte[] id(int entryOffset) {
        int length = idLength(entryOffset);
        byte[] out = new byte[length];
        for (int i = 0; i < length; i++) {
            out[i] = buffer.get(offset + entryOffset + NID_OFFSET + i);
        }
        return out;
    }

    public int nextEntry(int entryOffset) {
        return entryOffset + HEADER_LENGTH + idLength(entryOffset);
    }

    /** Offset of the first entry of {@code type}, or -1. */
    public int find(int type) {
        int at = 0;
        while (at + HEADER_LENGTH <= LENGTH && idLength(at) != 0) {
            if (type(at) == type) {
                return at;
            }
            at = nextEntry(at);
        }
        return -1;
    }

    /** The UUID in the byte order NVMe uses (RFC 4122: most significant byte first). */
    public static byte[] uuidBytes(UUID uuid) {
        byte[] out = new byte[UUID_LENGTH];
        long msb = uuid.getMostSignificantBits();
        long lsb = uuid.getLeastSignificantBits();
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (msb >>> (56 - 8 * i));
            out[8 + i] = (byte) (lsb >>> (56 - 8 * i));
        }
        return out;
    }

    public static UUID uuid(byte[] bytes) {
        checkLength(bytes, UUID_LENGTH);
        long msb = 0;
        long lsb = 0;
        for (int i = 0; i < 8; i++) {
            msb = msb << 8 | (bytes[i] & 0xFF);
            lsb = lsb << 8 | (bytes[8 + i] & 0xFF);
        }
        return new UUID(msb, lsb);
    }

    private static void checkLength(byte[] value, int length) {
        if (value.length != length) {
            throw new IllegalArgumentException("identifier needs " + length + " bytes, got " + value.length);
        }
    }
}
