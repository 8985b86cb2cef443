package io.nvmeof4j.protocol.tcp;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;

/**
 * Response capsule: one completion queue entry (NVMe/TCP Transport Specification 1.0, 3.6.2.6; wire reference 5).
 *
 * <pre>
 *  0            8                  24      28
 * +------------+------------------+-------+
 * | CH (8)     | CQE (16)         | HDGST |
 * +------------+------------------+-------+
 * </pre>
 * CH: type 0x05, HLEN 24, PDO 0, PLEN 24 (28 with a header digest). No data.
 */
public final class CapsuleRespPdu extends PduFlyweight<CapsuleRespPdu> {
    public static final int HEADER_LENGTH = 24;
    public static final int CQE_OFFSET = 8;

    private final CompletionQueueEntry cqe = new CompletionQueueEntry();

    /** Writes a fresh CapsuleResp header (PLEN = 24 + {@code headerDigestLength}); CQE zeroed. */
    public CapsuleRespPdu init(int headerDigestLength) {
        return initHeader(PduType.CAPSULE_RESP, HEADER_LENGTH, HEADER_LENGTH + headerDigestLength);
    }

    /** The capsule's CQE, a flyweight sharing this PDU's buffer. */
    public CompletionQueueEntry cqe() {
        return cqe.wrap(buffer, offset + CQE_OFFSET);
    }
}
