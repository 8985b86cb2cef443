package io.nvmeof4j.protocol.auth;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the SQE of Authentication Send (FCTYPE 05h) and Authentication Receive (FCTYPE 06h)
 * (NVMe-oF 1.1, 3.2 and 3.3; wire reference 2.4).
 *
 * <pre>
 *  0      1      2      4        5        24        40     41      42      43     44        48
 * +------+------+------+--------+--------+---------+------+-------+-------+------+---------+------+
 * | 0x7F | 0x40 | CID  | FCTYPE | rsvd   | SGL1    | rsvd | SPSP0 | SPSP1 | SECP | TL / AL | rsvd |
 * +------+------+------+--------+--------+---------+------+-------+-------+------+---------+------+
 * </pre>
 * TL is the byte count the host sends (Send), AL the buffer the host offers (Receive). DH-HMAC-CHAP uses SECP E9h
 * and SPSP0 = SPSP1 = 01h; nvmet refuses anything else with Invalid Field.
 */
public final class AuthenticationCommand {
    public static final int SPSP0_OFFSET = 41;
    public static final int SPSP1_OFFSET = 42;
    public static final int SECP_OFFSET = 43;
    public static final int LENGTH_OFFSET = 44;

    private ByteBuffer buffer;
    private int offset;

    public AuthenticationCommand wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public AuthenticationCommand wrap(SubmissionQueueEntry sqe) {
        return wrap(sqe.buffer(), sqe.offset());
    }

    /** Fills FCTYPE (Send or Receive), SECP E9h, SPSP0/1 01h and the length; the caller sets CID and SGL. */
    public AuthenticationCommand initDhchap(int fctype, int length) {
        buffer.put(offset + SubmissionQueueEntry.OPCODE_OFFSET, (byte) SubmissionQueueEntry.OPCODE_FABRICS);
        buffer.put(offset + SubmissionQueueEntry.FCTYPE_OFFSET, (byte) fctype);
        buffer.put(offset + SPSP0_OFFSET, (byte) Dhchap.SPSP);
        buffer.put(offset + SPSP1_OFFSET, (byte) Dhchap.SPSP);
        buffer.put(offset + SECP_OFFSET, (byte) Dhchap.SECP_DHCHAP);
        buffer.putInt(offset + LENGTH_OFFSET, length);
        return this;
    }

    public int spsp0() {
        return buffer.get(offset + SPSP0_OFFSET) & 0xFF;
    }

    public int spsp1() {
        return buffer.get(offset + SPSP1_OFFSET) & 0xFF;
    }

    public int securityProtocol() {
        return buffer.get(offset + SECP_OFFSET) & 0xFF;
    }

    /** TL (Send) or AL (Receive), unsigned; a value above 2^31-1 comes back negative and must be refused. */
    public int length() {
        return buffer.getInt(offset + LENGTH_OFFSET);
    }

    /** The SQE byte offset of the first field that is not what DH-HMAC-CHAP needs, or -1 when all are. */
    public int invalidFieldOffset() {
        if (securityProtocol() != Dhchap.SECP_DHCHAP) {
            return SECP_OFFSET;
        }
        if (spsp0() != Dhchap.SPSP) {
            return SPSP0_OFFSET;
        }
        if (spsp1() != Dhchap.SPSP) {
            return SPSP1_OFFSET;
        }
        if (length() <= 0) {
            return LENGTH_OFFSET;
        }
        return -1;
    }
}
