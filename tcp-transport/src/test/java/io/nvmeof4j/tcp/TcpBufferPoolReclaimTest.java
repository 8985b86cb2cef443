package io.nvmeof4j.tcp;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.tcp.RawHost.Pdu;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static io.nvmeof4j.tcp.RawHost.CAPSULE_RESP;
import static io.nvmeof4j.tcp.RawHost.R2T;
import static io.nvmeof4j.tcp.TargetFixture.eventually;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Memory moves between the pool's size classes, through the NVMe/TCP target on 127.0.0.1: one reactor whose pool
 * holds 1 MiB, with buffers up to 128 KiB. Eight queues issue 256 writes of 4 KiB by R2T, so the 4 KiB class takes
 * the whole capacity while the target waits for their H2CData; once they are done, 128 KiB writes and reads must get
 * buffers (the 4 KiB slab is carved again), then 4 KiB reads (and back). With memory fixed per class, the first
 * 128 KiB write waited for ever in the poll group's buffer queue: no R2T came, and the host's read timed out.
 */
class TcpBufferPoolReclaimTest {
    private static final int QUEUES = 8;
    private static final int SMALL = 4096;
    private static final int LARGE = 128 << 10;
    private static final int SMALL_PER_QUEUE = 32; // 8 x 32 x 4 KiB = the pool's 1 MiB
    private static final int LARGE_PER_QUEUE = 2; // 16 x 128 KiB: twice the pool, in two rounds
    private static final long LARGE_LBA = (2 << 20) / RamQueueHandlerFactory.LBA_SIZE;
    private static final int MAX_H2C_DATA = TcpTransportOptions.MAX_H2C_DATA_SIZE_DEFAULT;

    @Test
    void shouldServeLargeCommandsAfterSmallWritesFilledThePool() throws Exception {
        // In-capsule data up to 0 bytes: every write takes a pool buffer and an R2T.
        try (TargetFixture target = new TargetFixture(1, LARGE, 1 << 20, new PortOptions(0, 128, LARGE),
            TcpTransportOptions.defaults())) {
            OffHeapBufferPool pool = target.pools.get(0);
            List<RawHost> hosts = new ArrayList<>();
            try {
                for (int q = 0; q < QUEUES; q++) {
                    RawHost host = target.host();
                    hosts.add(host);
                    host.initializeAndConnect(0, q + 1, 64, false);
                }
                // Phase 1: every 4 KiB write is sent before any data, so all 256 hold a buffer at once.
                List<Pdu> r2ts = new ArrayList<>();
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < SMALL_PER_QUEUE; i++) {
                        hosts.get(q).sendCapsule(RawHost.ioSqe(0x01, i + 1, smallLba(q, i), SMALL, 0x5A), null);
                    }
                }
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < SMALL_PER_QUEUE; i++) {
                        Pdu r2t = hosts.get(q).readPdu();
                        assertThat(r2t.type()).as("PDU " + r2t).isEqualTo(R2T);
                        r2ts.add(r2t);
                    }
                }
                assertThat(pool.buffersInUse()).as("4 KiB buffers held by the R2T writes").isEqualTo(256);
                assertThat(pool.bytesAllocated()).as("the whole capacity").isEqualTo(1 << 20);
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < SMALL_PER_QUEUE; i++) {
                        Pdu r2t = r2ts.get(q * SMALL_PER_QUEUE + i);
                        hosts.get(q).answerR2T(r2t, pattern(SMALL, smallSeed(q, r2t.u16(8) - 1)), MAX_H2C_DATA);
                    }
                }
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < SMALL_PER_QUEUE; i++) {
                        assertSuccess(hosts.get(q).readPdu());
                    }
                }
                eventually("the 4 KiB buffers back", () -> pool.buffersInUse() == 0);

                // Phase 2: 128 KiB writes, two rounds of one per queue (eight fill the pool), then read back.
                for (int round = 0; round < LARGE_PER_QUEUE; round++) {
                    for (int q = 0; q < QUEUES; q++) {
                        hosts.get(q).sendCapsule(RawHost.ioSqe(0x01, 100 + round, largeLba(q, round), LARGE, 0x5A),
                            null);
                    }
                    for (int q = 0; q < QUEUES; q++) {
                        Pdu r2t = hosts.get(q).readPdu(); // on a pool without re-carving: a read timeout here
                        assertThat(r2t.type()).as("PDU " + r2t).isEqualTo(R2T);
                        hosts.get(q).answerR2T(r2t, pattern(LARGE, largeSeed(q, round)), MAX_H2C_DATA);
                    }
                    for (int q = 0; q < QUEUES; q++) {
                        assertSuccess(hosts.get(q).readPdu());
                    }
                }
                for (int round = 0; round < LARGE_PER_QUEUE; round++) {
                    for (int q = 0; q < QUEUES; q++) {
                        assertThat(read(hosts.get(q), 200 + round, largeLba(q, round), LARGE))
                            .as("queue %d 128 KiB write %d", q, round).isEqualTo(pattern(LARGE, largeSeed(q, round)));
                    }
                }
                // Phase 3: back to 4 KiB: the 128 KiB slab is carved again.
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < SMALL_PER_QUEUE; i++) {
                        assertThat(read(hosts.get(q), 300 + i, smallLba(q, i), SMALL))
                            .as("queue %d 4 KiB write %d", q, i).isEqualTo(pattern(SMALL, smallSeed(q, i)));
                    }
                }
            } finally {
                for (RawHost host : hosts) {
                    host.close();
                }
            }
            eventually("all buffers back", () -> pool.buffersInUse() == 0);
            assertThat(pool.bytesAllocated()).as("no more than the capacity, ever").isEqualTo(1 << 20);
        }
    }

    private static long smallLba(int queue, int i) {
        return (long) (queue * SMALL_PER_QUEUE + i) * SMALL / RamQueueHandlerFactory.LBA_SIZE;
    }

    private static long largeLba(int queue, int round) {
        return LARGE_LBA + (long) (round * QUEUES + queue) * LARGE / RamQueueHandlerFactory.LBA_SIZE;
    }

    private static long smallSeed(int queue, int i) {
        return queue * 1000L + i;
    }

    private static long largeSeed(int queue, int round) {
        return -1 - queue * 1000L - round;
    }

    private static byte[] read(RawHost host, int cid, long slba, int length) throws Exception {
        host.sendCapsule(RawHost.readSqe(cid, slba, length), null);
        byte[] data = new byte[length];
        host.readData(cid, data, false);
        Pdu response = host.readPdu();
        assertSuccess(response);
        assertThat(response.cqeCid()).isEqualTo(cid);
        return data;
    }

    private static void assertSuccess(Pdu pdu) {
        assertThat(pdu.type()).as("PDU type of " + pdu).isEqualTo(CAPSULE_RESP);
        assertThat(pdu.cqeStatus()).as("status " + NvmeStatus.describe(pdu.cqeStatus())).isEqualTo(NvmeStatus.SUCCESS);
    }

    private static byte[] pattern(int length, long seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }
}
