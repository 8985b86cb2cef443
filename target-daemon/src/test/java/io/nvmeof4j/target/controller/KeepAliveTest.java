package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.target.model.Port;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The keep-alive timer: expiry tears the controller down; Keep Alive or any command keeps it. */
class KeepAliveTest {
    private final TestTarget target = new TestTarget();
    private final TestHost host = target.host();

    @AfterEach
    void tearDown() {
        target.close();
    }

    @Test
    void shouldTearDownControllerWhenKeepAliveExpires() throws Exception {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 300, TestTarget.SUBNQN, 0xFFFF).dw0();
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        FakeQueue io = host.openQueue();
        assertThat(host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid).status()).isEqualTo(NvmeStatus.SUCCESS);
        FakeRequest aer = host.asyncEventRequest(admin);
        Controller controller = target.registry.controller(cntlid);
        long start = System.nanoTime();

        assertThat(admin.awaitDisconnect(3, TimeUnit.SECONDS)).as("admin queue disconnected").isTrue();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(elapsedMs).as("not before KATO").isGreaterThanOrEqualTo(250);
        assertThat(io.awaitDisconnect(1, TimeUnit.SECONDS)).as("I/O queue disconnected").isTrue();
        assertThat(admin.disconnectReason()).contains("keep-alive");
        assertThat(target.registry.controller(cntlid)).isNull();
        assertThat(controller.isDestroyed()).isTrue();
        assertThat(controller.controllerStatus() & ControllerRegisters.CSTS_CFS).as("CSTS.CFS").isNotZero();
        assertThat(aer.status()).isEqualTo(NvmeStatus.ABORTED_SQ_DELETION);
    }

    @Test
    void shouldStayAliveWhileTheHostSendsKeepAlives() throws Exception {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 1000, TestTarget.SUBNQN, 0xFFFF).dw0();
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
        while (System.nanoTime() < end) {
            assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.SUCCESS);
            Thread.sleep(100);
        }
        assertThat(admin.isDisconnected()).isFalse();
        assertThat(target.registry.controller(cntlid)).isNotNull();
    }

    @Test
    void shouldCountIoTrafficAsKeepAlive() throws Exception {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 1000, TestTarget.SUBNQN, 0xFFFF).dw0();
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        FakeQueue io = host.openQueue();
        host.connect(io, 1, 31, 0, TestTarget.SUBNQN, cntlid);
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
        while (System.nanoTime() < end) {
            assertThat(host.submit(io, 512, e -> e.opcode(0x02).nsid(1)).status()).isEqualTo(NvmeStatus.SUCCESS);
            Thread.sleep(100);
        }
        assertThat(admin.isDisconnected()).as("traffic-based keep-alive (CTRATT bit 6)").isFalse();
    }

    @Test
    void shouldNotExpireWithKatoZeroOrAfterSetFeaturesKatoZero() throws Exception {
        FakeQueue none = host.openQueue();
        host.connect(none, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        FakeQueue admin = host.openQueue();
        host.connect(admin, 0, 31, 300, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
        Thread.sleep(900);
        assertThat(none.isDisconnected()).isFalse();
        assertThat(admin.isDisconnected()).isFalse();
    }

    @Test
    void shouldArmTheTimerWithAKatoSetByFeature() throws Exception {
        FakeQueue admin = host.openQueue();
        host.connect(admin, 0, 31, 0, TestTarget.SUBNQN, 0xFFFF);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.KEEP_ALIVE_INVALID);
        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 10_000).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.keepAlive(admin).status()).isEqualTo(NvmeStatus.SUCCESS);
        // Re-armed repeatedly while traffic flows, then shortened: the old chain must not expire it early.
        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 300).status()).isEqualTo(NvmeStatus.SUCCESS);
        Thread.sleep(150);
        assertThat(admin.isDisconnected()).isFalse();
        assertThat(admin.awaitDisconnect(3, TimeUnit.SECONDS)).isTrue();
    }

    /**
     * A KATO under a second is raised to one: nvmet rounds KATO up to whole seconds and SPDK to its min_kato, so a
     * host that works with either is never reaped sooner. KATO 0 stays 0.
     */
    @Test
    void shouldRaiseASubSecondKatoToOneSecond() throws Exception {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 1, TestTarget.SUBNQN, 0xFFFF).dw0();
        assertThat(target.registry.controller(cntlid).keepAliveTimeoutMillis()).isEqualTo(1000);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).dw0()).isEqualTo(1000);
        assertThat(host.setFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 50).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).dw0()).isEqualTo(1000);
        long start = System.nanoTime();
        Thread.sleep(600);
        assertThat(admin.isDisconnected()).as("alive 600 ms after a 50 ms KATO").isFalse();
        assertThat(admin.awaitDisconnect(3, TimeUnit.SECONDS)).as("reaped after the raised KATO").isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isGreaterThanOrEqualTo(950);
        assertThat(host.setFeatures(host.openQueue(), FeatureIdentifier.KEEP_ALIVE_TIMER, 0).status())
            .as("no controller on a fresh queue").isNotEqualTo(NvmeStatus.SUCCESS);
        assertThat(Controller.effectiveKeepAliveTimeout(0)).isZero();
        assertThat(Controller.effectiveKeepAliveTimeout(0xFFFF_FFFFL)).isEqualTo(0xFFFF_FFFFL);
    }

    @Test
    void shouldReapControllersThatNeverEnable() throws Exception {
        FakeQueue admin = host.openQueue();
        host.connect(admin, 0, 31, 200, TestTarget.SUBNQN, 0xFFFF);
        assertThat(admin.awaitDisconnect(3, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void shouldGiveIdleDiscoveryControllersTwoMinutes() {
        FakeQueue admin = host.openQueue();
        int cntlid = host.connect(admin, 0, 31, 0, Port.DISCOVERY_NQN, 0xFFFF).dw0();
        assertThat(target.registry.controller(cntlid).keepAliveTimeoutMillis())
            .isEqualTo(Controller.DISCOVERY_IDLE_TIMEOUT_MILLIS).isEqualTo(120_000);
        host.propertySet(admin, ControllerRegisters.CC, 0x00460001);
        assertThat(host.getFeatures(admin, FeatureIdentifier.KEEP_ALIVE_TIMER, 0).dw0()).isEqualTo(120_000);
    }
}
