package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

/**
 * Keep Alive (opcode 18h; NVMe Base 2.0, 5.26; wire reference 2.9): no data, no command-specific fields. It
 * restarts the controller's keep-alive timer; the timeout is the KATO of the admin Connect or of Set Features
 * 0Fh, and KAS in Identify Controller gives its granularity in 100 ms units. A controller whose KATO is 0
 * answers Keep Alive Timeout Invalid (0x01A).
 */
public final class KeepAlive {
    private KeepAlive() {
    }

    public static final int OPCODE = AdminOpcode.KEEP_ALIVE;
    /** KAS unit in milliseconds. */
    public static final int KAS_UNIT_MILLIS = 100;

    /** Writes a Keep Alive into {@code sqe} (zeroed first). */
    public static SubmissionQueueEntry init(SubmissionQueueEntry sqe, int commandId) {
        return sqe.clear().opcode(OPCODE).flags(SubmissionQueueEntry.FLAGS_PSDT_SGL).commandId(commandId);
    }
}
