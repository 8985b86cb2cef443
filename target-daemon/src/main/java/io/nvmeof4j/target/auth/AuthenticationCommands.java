package io.nvmeof4j.target.auth;

import io.nvmeof4j.protocol.auth.AuthenticationCommand;
import io.nvmeof4j.protocol.auth.ControllerAuthentication;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.spi.Request;

import java.nio.ByteBuffer;

/**
 * Executes Authentication Send / Receive on one queue for its {@link ControllerAuthentication} (NVMe-oF 1.1, 3.2
 * and 3.3). The checks nvmet makes come first, each Invalid Field + DNR: SECP E9h, SPSP0/SPSP1 01h, TL/AL not 0;
 * then the SGL must carry exactly TL/AL bytes (SGL Data Length Invalid), and at most {@link #MAX_LENGTH}. Protocol
 * faults are not NVMe statuses: they travel as Failure1 in the data. One instance per queue (it keeps a
 * flyweight); reactor thread.
 */
public final class AuthenticationCommands {
    /** Largest TL/AL accepted: an ffdhe8192 Reply with SHA-512 is 16 + 128 + 1024 bytes; the Linux host uses 4096. */
    public static final int MAX_LENGTH = 8192;

    private final AuthenticationCommand command = new AuthenticationCommand();

    public static boolean isAuthentication(SubmissionQueueEntry sqe) {
        if (!sqe.isFabrics()) {
            return false;
        }
        int fctype = sqe.fabricsCommandType();
        return fctype == FabricsCommandType.AUTHENTICATION_SEND || fctype == FabricsCommandType.AUTHENTICATION_RECEIVE;
    }

    /**
     * Runs the command and completes it.
     *
     * @return true when the protocol has ended in failure (Failure1 sent or Failure2 received): the caller tears
     *     the controller down once this response has left
     */
    public boolean execute(Request request, ControllerAuthentication auth) {
        SubmissionQueueEntry sqe = request.command();
        AuthenticationCommand c = command.wrap(sqe);
        if (c.invalidFieldOffset() >= 0) {
            request.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return false;
        }
        int length = c.length();
        ByteBuffer data = request.data();
        if (data == null || request.dataLength() != length) {
            request.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return false;
        }
        if (length > MAX_LENGTH) {
            request.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
            return false;
        }
        long now = System.nanoTime();
        if (sqe.fabricsCommandType() == FabricsCommandType.AUTHENTICATION_SEND) {
            auth.onSend(data, 0, length, now);
        } else {
            for (int i = 0; i < length; i++) {
                data.put(i, (byte) 0);
            }
            if (auth.onReceive(data, 0, length, now) < 0) {
                request.complete(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                return false;
            }
        }
        request.complete(NvmeStatus.SUCCESS);
        return auth.mustDisconnect();
    }
}
