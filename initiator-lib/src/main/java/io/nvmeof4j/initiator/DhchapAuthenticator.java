package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.auth.AuthenticationCommand;
import io.nvmeof4j.protocol.auth.Dhchap;
import io.nvmeof4j.protocol.auth.DhchapException;
import io.nvmeof4j.protocol.auth.HostAuthentication;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.spi.host.HostQueue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs DH-HMAC-CHAP on one queue right after its Connect answered ATR, as the Linux host does (nvme_auth_negotiate
 * then nvme_auth_wait, per queue): Authentication Send / Receive through {@link Commands}, each bounded by the
 * connect timeout. Failure closes nothing itself: the caller closes the queue and reports the
 * {@link NvmeofException}, which names the peer, the queue, the step and the reason, never a key.
 */
final class DhchapAuthenticator {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Transaction ids per process, as the Linux host counts them per controller: each transaction a new one. */
    private static final AtomicInteger TRANSACTION = new AtomicInteger();

    private DhchapAuthenticator() {
    }

    /**
     * @param secureChannel SC_C: {@link Dhchap#SC_C_NOSC}, or on the admin queue NEWTLSPSK / REPLACETLSPSK (secure
     *                      channel concatenation; the result then carries the generated PSK)
     */
    static HostAuthentication.Result authenticate(HostQueue queue, String peer, int qid, ConnectOptions options,
                                                  String hostNqn, String subsystemNqn, Duration timeout,
                                                  int secureChannel)
        throws NvmeofException {
        String step = "DH-HMAC-CHAP (queue " + qid + (secureChannel == Dhchap.SC_C_NOSC ? ""
            : secureChannel == Dhchap.SC_C_NEWTLSPSK ? ", secure channel concatenation NEWTLSPSK"
            : ", secure channel concatenation REPLACETLSPSK") + ")";
        if (options.dhchapSecret() == null) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS,
                "the controller requires in-band authentication (ATR) but no host secret (--dhchap-secret) is set",
                null);
        }
        HostAuthentication auth = new HostAuthentication(options.dhchapSecret(), options.dhchapControllerSecret(),
            hostNqn, subsystemNqn, RANDOM, secureChannel);
        HostAuthentication.Exchange exchange = new HostAuthentication.Exchange() {
            @Override
            public int send(ByteBuffer message, int length) throws IOException {
                return Commands.call(queue, peer, step + " AUTH_Send", sqe -> new AuthenticationCommand().wrap(sqe)
                    .initDhchap(FabricsCommandType.AUTHENTICATION_SEND, length), message, length, timeout).status();
            }

            @Override
            public int receive(ByteBuffer buffer, int allocationLength) throws IOException {
                return Commands.call(queue, peer, step + " AUTH_Receive", sqe -> new AuthenticationCommand().wrap(sqe)
                        .initDhchap(FabricsCommandType.AUTHENTICATION_RECEIVE, allocationLength), buffer,
                    allocationLength, timeout).status();
            }
        };
        try {
            return auth.authenticate(exchange, TRANSACTION.getAndIncrement());
        } catch (DhchapException e) {
            throw new NvmeofException(peer, step, e.nvmeStatus() != 0 ? e.nvmeStatus() : NvmeofException.NO_STATUS,
                e.getMessage(), e);
        } catch (NvmeofException e) {
            throw e;
        } catch (IOException e) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, e.getMessage(), e);
        }
    }
}
