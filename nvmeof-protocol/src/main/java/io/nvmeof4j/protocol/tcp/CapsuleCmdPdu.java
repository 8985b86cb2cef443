package io.nvmeof4j.protocol.tcp;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

/**
 * Command capsule: a submission queue entry, optionally followed by in-capsule data
 * (NVMe/TCP Transport Specification 1.0, 3.6.2.5; wire reference 5).
 *
 * <pre>
 *  0            8                                72      (76)    PDO                 PLEN
 * +------------+--------------------------------+-------+-------+---------+---------+-------+
 * | CH (8)     | SQE (64)                       | HDGST | pad   | data    | DDGST   |
 * +------------+--------------------------------+-------+-------+---------+---------+-------+
 * </pre>
 * CH: type 0x04, HLEN 72. HDGST when header digests were negotiated (flag HDGSTF). Data only with an in-capsule
 * SGL (0x01): PDO is where it starts (72, or 76 with a header digest, as the Linux host sends), DDGST after it
 * when data digests were negotiated. Without data PDO is 0 and PLEN = 72 (+4).
 */
public final class CapsuleCmdPdu extends PduFlyweight<CapsuleCmdPdu> {
    public static final int HEADER_LENGTH = 72;
    public static final int SQE_OFFSET = 8;

    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry();

    /** Writes a fresh CapsuleCmd header with the given PLEN; SQE zeroed. */
    public CapsuleCmdPdu init(long plen) {
        return initHeader(PduType.CAPSULE_CMD, HEADER_LENGTH, plen);
    }

    /** The capsule's SQE, a flyweight sharing this PDU's buffer. */
    public SubmissionQueueEntry sqe() {
        return sqe.wrap(buffer, offset + SQE_OFFSET);
    }
}
