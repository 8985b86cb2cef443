package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link ControllerRegistry#shutdown}: drain in-flight commands (bounded), then disconnect every queue. */
class ShutdownTest {
    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();

    @AfterEach
    void tearDown() {
        target.nvm.release();
        target.close();
    }

    private FakeQueue[] connected() {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF).dw0();
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        return new FakeQueue[] {admin, io};
    }

    @Test
    void shouldWaitForInFlightCommandsThenDisconnect() throws Exception {
        FakeQueue[] q = connected();
        FakeRequest aer = host.asyncEventRequest(q[0]);
        target.nvm.hold(true);
        FakeRequest read = host.submit(q[1], 512, e -> e.opcode(0x02).nsid(1));
        assertThat(read.isCompleted()).isFalse();

        CompletableFuture<Boolean> shutdown = CompletableFuture.supplyAsync(() -> target.registry.shutdown(Duration.ofSeconds(5)));
        assertThat(aer.await(5, TimeUnit.SECONDS)).as("parked AER ended while the read is held").isTrue();
        assertThat(aer.status()).as("parked AER ended first").isEqualTo(NvmeStatus.ABORTED_SQ_DELETION);
        assertThat(shutdown).isNotDone();
        assertThat(q[1].isDisconnected()).as("waits for the read").isFalse();
        FakeRequest lateAer = host.asyncEventRequest(q[0]);
        assertThat(lateAer.status()).as("not parked while draining").isEqualTo(NvmeStatus.ABORTED_SQ_DELETION);

        target.nvm.release();
        assertThat(shutdown.get(3, TimeUnit.SECONDS)).as("drained").isTrue();
        assertThat(read.status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(q[0].isDisconnected()).isTrue();
        assertThat(q[1].isDisconnected()).isTrue();
        assertThat(target.registry.controllers()).isEmpty();
        assertThat(target.registry.isAcceptingConnects()).isFalse();
    }

    @Test
    void shouldGiveUpWaitingAfterTheTimeout() {
        FakeQueue[] q = connected();
        target.nvm.hold(true);
        host.submit(q[1], 512, e -> e.opcode(0x02).nsid(1));
        long start = System.nanoTime();
        assertThat(target.registry.shutdown(Duration.ofMillis(300))).isFalse();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(250L, 3000L);
        assertThat(q[0].isDisconnected()).isTrue();
        assertThat(q[1].isDisconnected()).isTrue();
    }

    @Test
    void shouldReturnAtOnceWhenIdle() {
        FakeQueue[] q = connected();
        long start = System.nanoTime();
        assertThat(target.registry.shutdown(Duration.ofSeconds(5))).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
        assertThat(q[0].disconnectReason()).contains("shutting down");
    }
}
