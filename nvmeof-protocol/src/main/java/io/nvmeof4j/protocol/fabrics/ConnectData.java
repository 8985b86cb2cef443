package io.nvmeof4j.protocol.fabrics;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.Nqn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 1024-byte data of a Fabrics Connect command (NVMe-oF 1.1, 3.3 Figure 20; wire reference 2.2).
 *
 * <pre>
 *  0            16       18          256                 512                 768          1024
 * +------------+--------+-----------+-------------------+-------------------+------------+
 * | HOSTID (16)| CNTLID | reserved  | SUBNQN (256, NUL) | HOSTNQN (256, NUL)| reserved   |
 * +------------+--------+-----------+-------------------+-------------------+------------+
 * </pre>
 * CNTLID is 0xFFFF on an admin-queue Connect (dynamic controller model) and the controller's id on I/O queues.
 * The NQN fields must hold a NUL within their 256 bytes: {@link #firstUnterminatedField()} finds one that does not,
 * so the controller can answer Connect Invalid Parameters with that field's offset (IPO) instead of guessing.
 */
public final class ConnectData {
    public static final int LENGTH = 1024;

    public static final int HOSTID_OFFSET = 0;
    public static final int CNTLID_OFFSET = 16;
    public static final int SUBNQN_OFFSET = 256;
    public static final int HOSTNQN_OFFSET = 512;

    /** CNTLID asking for any controller (dynamic controller model). */
    public static final int CNTLID_DYNAMIC = 0xFFFF;

    private ByteBuffer buffer;
    private int offset;

    public ConnectData wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.limit() - offset < LENGTH) {
            throw new IllegalArgumentException("Connect data needs " + LENGTH + " bytes, buffer has "
                + (buffer.limit() - offset) + " from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ConnectData clear() {
        for (int i = 0; i < LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        return this;
    }

    public HostId hostId() {
        return HostId.read(buffer, offset + HOSTID_OFFSET);
    }

    public ConnectData hostId(HostId hostId) {
        hostId.write(buffer, offset + HOSTID_OFFSET);
        return this;
    }

    public int controllerId() {
        return buffer.getShort(offset + CNTLID_OFFSET) & 0xFFFF;
    }

    public ConnectData controllerId(int cntlid) {
        buffer.putShort(offset + CNTLID_OFFSET, (short) cntlid);
        return this;
    }

    /** The SUBNQN text up to its NUL (or all 256 bytes when unterminated: check {@link #firstUnterminatedField()}). */
    public String subsystemNqn() {
        return Nqn.readField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH);
    }

    public ConnectData subsystemNqn(String nqn) {
        Nqn.writeField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH, nqn);
        return this;
    }

    public String hostNqn() {
        return Nqn.readField(buffer, offset + HOSTNQN_OFFSET, Nqn.FIELD_LENGTH);
    }

    public ConnectData hostNqn(String nqn) {
        Nqn.writeField(buffer, offset + HOSTNQN_OFFSET, Nqn.FIELD_LENGTH, nqn);
        return this;
    }

    /** True when the 256-byte NQN field at {@code fieldOffset} (relative to the data) holds a NUL. */
    public boolean isTerminated(int fieldOffset) {
        int start = offset + fieldOffset;
        for (int i = 0; i < Nqn.FIELD_LENGTH; i++) {
            if (buffer.get(start + i) == 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * The offset ({@link #SUBNQN_OFFSET} or {@link #HOSTNQN_OFFSET}) of the first NQN field without a terminating
     * NUL, or -1 when both are well formed.
     */
    public int firstUnterminatedField() {
        if (!isTerminated(SUBNQN_OFFSET)) {
            return SUBNQN_OFFSET;
        }
        if (!isTerminated(HOSTNQN_OFFSET)) {
            return HOSTNQN_OFFSET;
        }
        return -1;
    }

    @Override
    public String toString() {
        return buffer == null ? "ConnectData[unwrapped]"
            : "ConnectData[hostid=" + hostId() + " cntlid=" + String.format("0x%04x", controllerId())
                + " subnqn=" + subsystemNqn() + " hostnqn=" + hostNqn() + "]";
    }
}
