package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.MemoryBudget;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.tcp.RawHost.Pdu;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static io.nvmeof4j.tcp.RawHost.C2H_TERM_REQ;
import static io.nvmeof4j.tcp.RawHost.CAPSULE_RESP;
import static io.nvmeof4j.tcp.TargetFixture.eventually;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The queue buffer budget (issue 12 item 5): every connected NVMe/TCP queue charges the memory it holds (receive
 * buffer, command slots, an in-capsule buffer per slot) at Connect, a Connect beyond the budget is answered
 * Controller Busy without DNR, and every way a queue closes gives the charge back. Real sockets on 127.0.0.1.
 */
class TcpQueueBufferBudgetTest {
    private static final int NO_DIGESTS = 0;
    private static final int INLINE = 4096;
    private static final PortOptions PORT = new PortOptions(INLINE, 128, 1 << 20);
    private static final int RECEIVE_BUFFER = TcpTransportOptions.defaults().receiveBufferSize();
    /** An I/O queue of 32 entries: receive buffer, 32 slots of 256 bytes, 32 page-aligned 4 KiB in-capsule buffers. */
    private static final long IO_QUEUE_32 = RECEIVE_BUFFER + 32L * 256 + 32L * INLINE + 4096;
    /** An admin queue (32 entries, 8 KiB in-capsule buffers). */
    private static final long ADMIN_QUEUE = RECEIVE_BUFFER + 32L * 256 + 32L * 8192 + 4096;
    /** An I/O queue of 128 entries. */
    private static final long IO_QUEUE_128 = RECEIVE_BUFFER + 128L * 256 + 128L * INLINE + 4096;

    private TargetFixture target;

    @AfterEach
    void stop() throws Exception {
        if (target != null) {
            target.close();
        }
    }

    private MemoryBudget start(long limit) throws IOException {
        MemoryBudget budget = new MemoryBudget(limit, "test queue buffer budget of " + limit + " bytes");
        target = new TargetFixture(1, 1 << 20, 16L << 20, PORT, TcpTransportOptions.defaults(), budget);
        return budget;
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static void assertResponse(Pdu pdu, int cid, int status) {
        assertThat(pdu.type()).as("PDU type of " + pdu).isEqualTo(CAPSULE_RESP);
        assertThat(pdu.cqeCid()).as("CID").isEqualTo(cid);
        assertThat(pdu.cqeStatus()).as("status " + NvmeStatus.describe(pdu.cqeStatus())).isEqualTo(status);
    }

    /** An in-capsule write of 4 KiB, then a read of it: the slot buffers serve I/O. */
    private static void writeAndReadBack(RawHost host, int cid, long slba, long seed) throws IOException {
        byte[] data = pattern(INLINE, seed);
        host.sendCapsule(RawHost.ioSqe(0x01, cid, slba, INLINE, 0x01), data);
        assertResponse(host.readPdu(), cid, NvmeStatus.SUCCESS);
        host.sendCapsule(RawHost.readSqe(cid + 1, slba, INLINE), null);
        byte[] back = new byte[INLINE];
        host.readData(cid + 1, back, false);
        assertResponse(host.readPdu(), cid + 1, NvmeStatus.SUCCESS);
        assertThat(back).as("data read back at LBA " + slba).isEqualTo(data);
    }

    @Test
    void shouldRefuseTheConnectBeyondTheBudgetWithControllerBusyAndAcceptItOnceAQueueCloses() throws Exception {
        // Room for three I/O queues of 32 entries, one byte short of a fourth.
        MemoryBudget budget = start(4 * IO_QUEUE_32 - 1);
        List<RawHost> hosts = new ArrayList<>();
        try {
            for (int qid = 1; qid <= 3; qid++) {
                RawHost host = target.host();
                hosts.add(host);
                host.initializeAndConnect(NO_DIGESTS, qid, 32, false);
                assertThat(budget.reservedBytes()).as("charged after queue " + qid).isEqualTo(qid * IO_QUEUE_32);
            }
            RawHost fourth = target.host();
            hosts.add(fourth);
            fourth.initialize(0, NO_DIGESTS);
            fourth.sendCapsule(RawHost.connectSqe(0x7004, 4, 32, false), new byte[1024]);
            Pdu refused = fourth.readPdu();
            // Controller Busy, no DNR: the Linux host logs "controller is busy or not available" and may retry.
            assertResponse(refused, 0x7004, NvmeStatus.FABRICS_CONTROLLER_BUSY);
            assertThat(NvmeStatus.isDnr(refused.cqeStatus())).isFalse();
            assertThat(target.handlers.refusals).containsExactly("QUEUE_BUFFER_BUDGET");
            assertThat(target.handlers.connectRefusals).singleElement().satisfies(e -> assertThat(e.getMessage())
                .contains("I/O queue 4 of 32 entries").contains("need " + (IO_QUEUE_32 + 1023) / 1024 + " KiB")
                .contains("left of the test queue buffer budget"));
            assertThat(budget.reservedBytes()).as("a refused Connect keeps nothing").isEqualTo(3 * IO_QUEUE_32);

            hosts.get(1).close();
            eventually("queue 2's buffers given back", () -> budget.reservedBytes() == 2 * IO_QUEUE_32);
            // The refused queue tries again on its connection, as a host does after its delay.
            fourth.sendCapsule(RawHost.connectSqe(0x7005, 4, 32, false), new byte[1024]);
            assertResponse(fourth.readPdu(), 0x7005, NvmeStatus.SUCCESS);
            assertThat(budget.reservedBytes()).isEqualTo(3 * IO_QUEUE_32);
            writeAndReadBack(fourth, 1, 64, 4);
            writeAndReadBack(hosts.get(0), 1, 72, 1);
        } finally {
            for (RawHost host : hosts) {
                host.close();
            }
        }
        eventually("every charge given back", () -> budget.reservedBytes() == 0);
    }

    /**
     * Every way a queue ends gives its charge back: the host closes it, the target disconnects it (keep-alive expiry
     * and controller teardown go through {@link TransportQueue#disconnect}), a protocol error terminates it. The
     * budget holds one round's three queues exactly, so a charge not given back refuses the next round's Connect.
     */
    @Test
    void shouldGiveEveryChargeBackAfterManyConnectsAndDisconnects() throws Exception {
        MemoryBudget budget = start(ADMIN_QUEUE + 2 * IO_QUEUE_128);
        for (int round = 0; round < 25; round++) {
            try (RawHost admin = target.host(); RawHost disconnected = target.host(); RawHost broken = target.host()) {
                admin.initializeAndConnect(NO_DIGESTS, 0, 32, false);
                disconnected.initializeAndConnect(NO_DIGESTS, 1, 128, false);
                TransportQueue disconnectedQueue = target.handlers.opened.get(target.handlers.opened.size() - 1);
                broken.initializeAndConnect(NO_DIGESTS, 2, 128, false);
                assertThat(budget.reservedBytes()).as("round %d", round).isEqualTo(budget.limitBytes());
                writeAndReadBack(disconnected, 1, round * 8L, round);

                disconnectedQueue.disconnect("keep-alive timeout (test)");
                assertThat(disconnected.closedByTarget()).as("disconnected by the target").isTrue();
                // A CapsuleCmd header with HLEN 8: a protocol error, answered with a C2HTermReq, then closed.
                broken.send(new byte[] {0x04, 0, 8, 0, 8, 0, 0, 0});
                assertThat(broken.readPdu().type()).isEqualTo(C2H_TERM_REQ);
            }
            eventually("round's charges given back", () -> budget.reservedBytes() == 0);
        }
    }

    /** The daemon's stop closes the poll groups, which close their connections: their charges go back too. */
    @Test
    void shouldGiveTheChargesBackWhenThePollGroupCloses() throws Exception {
        MemoryBudget budget = start(1L << 30);
        try (RawHost admin = target.host(); RawHost io = target.host()) {
            admin.initializeAndConnect(NO_DIGESTS, 0, 32, false);
            io.initializeAndConnect(NO_DIGESTS, 1, 128, false);
            assertThat(budget.reservedBytes()).isEqualTo(ADMIN_QUEUE + IO_QUEUE_128);
            TargetFixture closing = target;
            target = null;
            closing.close();
            assertThat(budget.reservedBytes()).as("after the poll group closed").isZero();
            assertThat(io.closedByTarget()).isTrue();
        }
    }
}
