package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte Commands Supported and Effects log (log 05h; NVMe Base 2.0, 5.16.1.6
 * Figures 210 and 211): one dword per opcode, admin commands first, then I/O commands of the command set given
 * by the Get Log Page CSI.
 *
 * <pre>
 *  0                    1024                 2048             4096
 * +--------------------+--------------------+----------------+
 * | ACS0..ACS255 (4 B) | IOCS0..IOCS255 (4B)| reserved       |
 * +--------------------+--------------------+----------------+
 *  entry: bit 0 CSUPP, 1 LBCC (may change logical block content), 2 NCC, 3 NIC, 4 CCC, 18:16 CSE, 19 UUID sel.
 * </pre>
 * The Linux host reads it when LPA bit 1 is set and uses LBCC/NCC/NIC/CCC to decide what to rescan after a
 * passthrough command.
 */
public final class CommandsSupportedAndEffects {
    public static final int LENGTH = 4096;
    public static final int ADMIN_OFFSET = 0;
    public static final int IO_OFFSET = 1024;
    public static final int ENTRIES = 256;

    public static final int CSUPP = 1;
    public static final int LBCC = 1 << 1;
    public static final int NCC = 1 << 2;
    public static final int NIC = 1 << 3;
    public static final int CCC = 1 << 4;

    private ByteBuffer buffer;
    private int offset;

    public CommandsSupportedAndEffects wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public CommandsSupportedAndEffects clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int admin(int opcode) {
        return buffer.getInt(offset + ADMIN_OFFSET + index(opcode) * 4);
    }

    public CommandsSupportedAndEffects admin(int opcode, int effects) {
        buffer.putInt(offset + ADMIN_OFFSET + index(opcode) * 4, effects);
        return this;
    }

    public int io(int opcode) {
        return buffer.getInt(offset + IO_OFFSET + index(opcode) * 4);
    }

    public CommandsSupportedAndEffects io(int opcode, int effects) {
        buffer.putInt(offset + IO_OFFSET + index(opcode) * 4, effects);
        return this;
    }

    private static int index(int opcode) {
        if (opcode < 0 || opcode >= ENTRIES) {
            throw new IndexOutOfBoundsException("opcode " + opcode + " outside 0..255");
        }
        return opcode;
    }
}
