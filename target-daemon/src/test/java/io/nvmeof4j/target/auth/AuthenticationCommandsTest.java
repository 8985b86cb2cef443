package io.nvmeof4j.target.auth;

import io.nvmeof4j.protocol.auth.AuthenticationCommand;
import io.nvmeof4j.protocol.auth.ControllerAuthentication;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.protocol.auth.DhchapFailure;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapMessage;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.target.controller.FakeRequest;
import org.junit.jupiter.api.Test;

import java.security.SecureRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The command-level checks nvmet makes before any message is looked at, and a Failure1 ending the queue. */
class AuthenticationCommandsTest {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final DhchapCredentials credentials = new DhchapCredentials(
        DhchapSecret.parse(DhchapSecret.generate(32, 1, RANDOM)), null, DhchapHash.SHA256, DhchapGroup.NULL);
    private final ControllerAuthentication auth = new ControllerAuthentication(() -> credentials,
        "nqn.2014-08.org.nvmexpress:uuid:0c468c4d-a385-47e0-8299-6e95051277db", "nqn.2024-01.io.nvmeof4j:t", RANDOM,
        TimeUnit.SECONDS.toNanos(120), System.nanoTime());
    private final AuthenticationCommands commands = new AuthenticationCommands();

    private static FakeRequest request(int fctype, int length, int dataLength) {
        FakeRequest r = new FakeRequest(null, dataLength);
        r.command().clear();
        new AuthenticationCommand().wrap(r.command()).initDhchap(fctype, length);
        return r;
    }

    @Test
    void shouldRecogniseOnlyAuthenticationSendAndReceive() {
        assertThat(AuthenticationCommands.isAuthentication(request(FabricsCommandType.AUTHENTICATION_SEND, 8, 8)
            .command())).isTrue();
        FakeRequest connect = request(FabricsCommandType.CONNECT, 8, 8);
        assertThat(AuthenticationCommands.isAuthentication(connect.command())).isFalse();
    }

    @Test
    void shouldRefuseWrongSecpSpspAndLengthsWithInvalidField() {
        FakeRequest secp = request(FabricsCommandType.AUTHENTICATION_SEND, 72, 72);
        secp.command().buffer().put(AuthenticationCommand.SECP_OFFSET, (byte) 0xEA);
        assertThat(commands.execute(secp, auth)).isFalse();
        assertThat(secp.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);

        FakeRequest spsp = request(FabricsCommandType.AUTHENTICATION_RECEIVE, 4096, 4096);
        spsp.command().buffer().put(AuthenticationCommand.SPSP1_OFFSET, (byte) 0);
        commands.execute(spsp, auth);
        assertThat(spsp.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);

        FakeRequest zero = request(FabricsCommandType.AUTHENTICATION_SEND, 0, 0);
        commands.execute(zero, auth);
        assertThat(zero.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);

        FakeRequest huge = request(FabricsCommandType.AUTHENTICATION_RECEIVE, 1 << 20, 1 << 20);
        commands.execute(huge, auth);
        assertThat(huge.status()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);

        FakeRequest mismatch = request(FabricsCommandType.AUTHENTICATION_SEND, 72, 64);
        commands.execute(mismatch, auth);
        assertThat(mismatch.status()).isEqualTo(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
        assertThat(auth.mustDisconnect()).as("command-level faults do not end the protocol").isFalse();
    }

    @Test
    void shouldAnswerFailure1ZeroPaddedAndAskForTheQueueToGo() {
        FakeRequest reply = request(FabricsCommandType.AUTHENTICATION_SEND, 16, 16);
        new DhchapMessage().wrap(reply.data(), 0).init(DhchapMessage.AUTH_TYPE_DHCHAP, DhchapMessage.REPLY, 0, 16);
        assertThat(commands.execute(reply, auth)).isFalse();
        assertThat(reply.status()).isEqualTo(NvmeStatus.SUCCESS);

        FakeRequest receive = request(FabricsCommandType.AUTHENTICATION_RECEIVE, 4096, 4096);
        assertThat(commands.execute(receive, auth)).isTrue();
        assertThat(receive.status()).isEqualTo(NvmeStatus.SUCCESS);
        DhchapMessage m = new DhchapMessage().wrap(receive.data(), 0);
        assertThat(m.is(DhchapMessage.AUTH_TYPE_COMMON, DhchapMessage.FAILURE1)).isTrue();
        assertThat(m.reasonExplanation()).isEqualTo(DhchapFailure.INCORRECT_MESSAGE);
        for (int i = DhchapMessage.FAILURE_LENGTH; i < 4096; i++) {
            assertThat(receive.data().get(i)).as("byte %d", i).isZero();
        }
    }
}
