package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 512-byte Firmware Slot Information log (log 03h; NVMe Base 2.0, 5.16.1.4 Figure 209).
 *
 * <pre>
 *  0 AFI   1..7 rsvd   8 FRS1(8)   16 FRS2(8)  ...  56 FRS7(8)   64.. reserved
 * </pre>
 * AFI bits 2:0: the active slot; bits 6:4: the slot activated at the next reset (0 = none).
 * Revisions are ASCII, space padded.
 */
public final class FirmwareSlotLog {
    public static final int LENGTH = 512;

    public static final int AFI_OFFSET = 0;
    public static final int FRS1_OFFSET = 8;
    public static final int FRS_LENGTH = 8;
    public static final int SLOTS = 7;

    private ByteBuffer buffer;
    private int offset;

    public FirmwareSlotLog wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public FirmwareSlotLog clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int activeFirmwareInfo() { return buffer.get(offset + AFI_OFFSET) & 0xFF; }
    public FirmwareSlotLog activeFirmwareInfo(int v) { buffer.put(offset + AFI_OFFSET, (byte) v); return this; }

    /** AFI bits 2:0. */
    public int activeSlot() {
        return activeFirmwareInfo() & 0x7;
    }

    /** Revision in slot 1..7. */
    public String revision(int slot) {
        return AsciiFields.read(buffer, offset + slotOffset(slot), FRS_LENGTH);
    }

    public FirmwareSlotLog revision(int slot, String revision) {
        AsciiFields.writeSpacePadded(buffer, offset + slotOffset(slot), FRS_LENGTH, revision);
        return this;
    }

    private static int slotOffset(int slot) {
        if (slot < 1 || slot > SLOTS) {
            throw new IndexOutOfBoundsException("firmware slot " + slot + " outside 1.." + SLOTS);
        }
        return FRS1_OFFSET + (slot - 1) * FRS_LENGTH;
    }
}
