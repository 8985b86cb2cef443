package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of a Get Log Page command (opcode 02h; NVMe Base 2.0, 5.16; wire reference 2.8).
 *
 * <pre>
 *  CDW10 (byte 40)                          CDW11 (byte 44)        CDW12/13 (48)   CDW14 (byte 56)
 *  31         16  15  14      8  7      0    31      16 15      0   63          0   31   24 23  22   7 6    0
 * +-------------+----+---------+--------+  +----------+---------+  +------------+  +-------+--+------+-----+
 * | NUMDL       |RAE | LSP     | LID    |  | LSI      | NUMDU   |  | LPO (bytes)|  | CSI   |OT| rsvd |UUIDX|
 * +-------------+----+---------+--------+  +----------+---------+  +------------+  +-------+--+------+-----+
 * </pre>
 * NUMD = NUMDU:NUMDL is 0-based in dwords: the transfer is (NUMD + 1) × 4 bytes starting at byte LPO of the
 * log page, which must be dword aligned. RAE = 1 asks the controller to keep the asynchronous event that
 * pointed at this log (libnvme sets it on every read of the discovery log but the last).
 */
public final class GetLogPageCommand {
    public static final int LID_OFFSET = 40;
    public static final int LSP_OFFSET = 41;
    public static final int NUMDL_OFFSET = 42;
    public static final int NUMDU_OFFSET = 44;
    public static final int LSI_OFFSET = 46;
    public static final int LPO_OFFSET = 48;
    public static final int UUID_INDEX_OFFSET = 56;
    public static final int CSI_OFFSET = 59;

    public static final int RAE = 0x80;

    private ByteBuffer buffer;
    private int offset;

    public GetLogPageCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public GetLogPageCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /**
     * Zeroes the SQE and writes a Get Log Page for {@code lengthBytes} bytes of log {@code lid} from byte
     * {@code logPageOffset}.
     *
     * @throws IllegalArgumentException when the length or the offset is not a multiple of 4, or the length is 0
     */
    public GetLogPageCommand init(int commandId, int nsid, int lid, long lengthBytes, long logPageOffset) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) AdminOpcode.GET_LOG_PAGE);
        buffer.put(offset + SubmissionQueueEntry.FLAGS_OFFSET, (byte) SubmissionQueueEntry.FLAGS_PSDT_SGL);
        buffer.putShort(offset + SubmissionQueueEntry.CID_OFFSET, (short) commandId);
        buffer.putInt(offset + SubmissionQueueEntry.NSID_OFFSET, nsid);
        buffer.put(offset + LID_OFFSET, (byte) lid);
        lengthBytes(lengthBytes);
        logPageOffset(logPageOffset);
        return this;
    }

    public int logPageId() {
        return buffer.get(offset + LID_OFFSET) & 0xFF;
    }

    public GetLogPageCommand logPageId(int lid) {
        buffer.put(offset + LID_OFFSET, (byte) lid);
        return this;
    }

    /** LSP (log specific field), 7 bits. */
    public int logSpecificField() {
        return buffer.get(offset + LSP_OFFSET) & 0x7F;
    }

    public GetLogPageCommand logSpecificField(int lsp) {
        int b = buffer.get(offset + LSP_OFFSET) & RAE;
        buffer.put(offset + LSP_OFFSET, (byte) (b | (lsp & 0x7F)));
        return this;
    }

    public boolean retainAsyncEvent() {
        return (buffer.get(offset + LSP_OFFSET) & RAE) != 0;
    }

    public GetLogPageCommand retainAsyncEvent(boolean rae) {
        int b = buffer.get(offset + LSP_OFFSET) & 0x7F;
        buffer.put(offset + LSP_OFFSET, (byte) (rae ? b | RAE : b));
        return this;
    }

    public int numberOfDwordsLower() {
        return buffer.getShort(offset + NUMDL_OFFSET) & 0xFFFF;
    }

    public int numberOfDwordsUpper() {
        return buffer.getShort(offset + NUMDU_OFFSET) & 0xFFFF;
    }

    /** NUMD (0-based dwords) as one 32-bit value, unsigned, in a long. */
    public long numberOfDwords() {
        return (long) numberOfDwordsUpper() << 16 | numberOfDwordsLower();
    }

    /** Bytes to transfer: (NUMD + 1) × 4. */
    public long lengthBytes() {
        return (numberOfDwords() + 1) * 4;
    }

    public GetLogPageCommand lengthBytes(long bytes) {
        if (bytes <= 0 || (bytes & 3) != 0 || bytes > (1L << 34)) {
            throw new IllegalArgumentException("log page transfer of " + bytes + " bytes is not a positive multiple of 4");
        }
        long numd = bytes / 4 - 1;
        buffer.putShort(offset + NUMDL_OFFSET, (short) numd);
        buffer.putShort(offset + NUMDU_OFFSET, (short) (numd >>> 16));
        return this;
    }

    public int logSpecificId() {
        return buffer.getShort(offset + LSI_OFFSET) & 0xFFFF;
    }

    public GetLogPageCommand logSpecificId(int lsi) {
        buffer.putShort(offset + LSI_OFFSET, (short) lsi);
        return this;
    }

    /** LPO: byte offset into the log page (64 bit, as on the wire). */
    public long logPageOffset() {
        return buffer.getLong(offset + LPO_OFFSET);
    }

    public GetLogPageCommand logPageOffset(long lpo) {
        if ((lpo & 3) != 0) {
            throw new IllegalArgumentException("log page offset " + lpo + " is not dword aligned");
        }
        buffer.putLong(offset + LPO_OFFSET, lpo);
        return this;
    }

    public int commandSetIdentifier() {
        return buffer.get(offset + CSI_OFFSET) & 0xFF;
    }

    public GetLogPageCommand commandSetIdentifier(int csi) {
        buffer.put(offset + CSI_OFFSET, (byte) csi);
        return this;
    }

    /**
     * Checks what the codec can check on its own: LPO must be dword aligned (NVMe Base 2.0, 5.16).
     *
     * @return {@link NvmeStatus#SUCCESS}, or {@link NvmeStatus#INVALID_FIELD} with DNR
     */
    public int validate() {
        if ((logPageOffset() & 3) != 0) {
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
        }
        return NvmeStatus.SUCCESS;
    }

    @Override
    public String toString() {
        return buffer == null ? "GetLogPage[unwrapped]"
            : String.format("GetLogPage[lid=0x%02x lsp=%d rae=%b numd=%d lpo=%d csi=%d]", logPageId(),
                logSpecificField(), retainAsyncEvent(), numberOfDwords(), logPageOffset(), commandSetIdentifier());
    }
}
