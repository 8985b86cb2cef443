package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.tcp.RamQueueHandlerFactory.Stamps;
import io.nvmeof4j.tcp.RawHost.Pdu;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static io.nvmeof4j.tcp.RawHost.CAPSULE_RESP;
import static io.nvmeof4j.tcp.TargetFixture.eventually;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The NVMe/TCP poll group's clock reads, counted on a stepped clock: one for the capsules a round takes, one for the
 * responses a gathering write sends, whatever the number of commands; latencies are what the stepped clock says.
 */
class TcpRoundClockTest {
    private static final long STEP = 1_000;
    private static final int COMMANDS = 16;

    private final AtomicLong reads = new AtomicLong();

    @Test
    void shouldReadTheClockOnceForTheArrivalsOfARoundAndOnceForTheirResponses() throws Exception {
        try (TargetFixture target = new TargetFixture(() -> STEP * reads.incrementAndGet());
             RawHost host = target.host()) {
            host.initializeAndConnect(0, 1, 128, false);
            eventually("Connect's response reported sent", () -> target.handlers.sentStamps.size() == 1);
            Stamps connect = target.handlers.sentStamps.get(0);
            assertThat(connect.sentNanos() - connect.receivedNanos()).as("Connect: received, then sent one step later")
                .isEqualTo(STEP);
            target.handlers.sentStamps.clear();
            long before = reads.get();

            // 16 Flush commands in one segment: the reactor takes them in one round and answers them in one write.
            ByteArrayOutputStream capsules = new ByteArrayOutputStream();
            for (int cid = 1; cid <= COMMANDS; cid++) {
                capsules.write(host.capsule(RawHost.sqe(0x00, cid, 1, 0x5A, 0), null));
            }
            host.send(capsules.toByteArray());
            for (int cid = 1; cid <= COMMANDS; cid++) {
                Pdu response = host.readPdu();
                assertThat(response.type()).isEqualTo(CAPSULE_RESP);
                assertThat(response.cqeCid()).isEqualTo(cid);
                assertThat(response.cqeStatus()).isEqualTo(NvmeStatus.SUCCESS);
            }
            eventually("16 responses reported sent", () -> target.handlers.sentStamps.size() == COMMANDS);

            List<Stamps> stamps = target.handlers.sentStamps;
            assertThat(reads.get() - before).as("clock reads for 16 commands received and answered in one round")
                .isEqualTo(2);
            assertThat(stamps).extracting(Stamps::receivedNanos).as("one arrival stamp").containsOnly((before + 1) * STEP);
            assertThat(stamps).extracting(s -> s.sentNanos() - s.receivedNanos())
                .as("latency: the stepped clock's next read, after the write (never 0)").containsOnly(STEP);
        }
    }
}
