package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationType;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportListener;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.backend.BlockDevice;
import io.nvmeof4j.target.backend.BlockIo;
import io.nvmeof4j.target.backend.QosLimits;
import io.nvmeof4j.target.backend.QosWaits;
import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.controller.ControllerQueueHandlerFactory;
import io.nvmeof4j.target.controller.ControllerRegistry;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.Reactor;
import io.nvmeof4j.tcp.TcpControllerTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reservation Acquire "Preempt and Abort" end to end over NVMe/TCP on 127.0.0.1: two hosts, each with its own
 * controller, on a target of two reactors whose namespace is a RAM device behind a gate that holds writes the way a
 * slow disk does, with a QoS limit so that later writes wait inside the target. Host B holds Write Exclusive and has
 * one write in the backend and two waiting for the QoS budget; host A preempts and aborts B. The Acquire completes
 * only after B's write in the backend completed; B's waiting writes come back Command Aborted due to Preempt and
 * Abort and never reach the device; B's next write conflicts; the data read back holds B's completed write and nothing
 * of the rest.
 */
class PreemptAndAbortIT {
    private static final String NQN = "nqn.2014-08.io.nvmeof4j:preempt-abort";
    private static final HostIdentity HOST_A = HostIdentity.ofUuid(UUID.fromString("aaaaaaaa-5555-4555-8555-000000000001"));
    private static final HostIdentity HOST_B = HostIdentity.ofUuid(UUID.fromString("bbbbbbbb-5555-4555-8555-000000000002"));
    private static final long KEY_A = 0xA5A5L;
    private static final long KEY_B = 0xB5B5L;
    private static final int BS = 512;
    private static final int MIB = 1 << 20;
    private static final int CONFLICT = NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR;

    /** A real RAM device behind a gate: while closed, writes are held (in the backend, not completed). */
    static final class GatedDevice implements BlockDevice {
        private final RamBlockDevice ram = new RamBlockDevice("ns1", 64L * MIB, BS);
        private final List<BlockIo> held = new ArrayList<>();
        private boolean closed = true;
        /** How many writes reached the RAM device, and when the held ones were let go. */
        private int writesDone;
        private long releasedNanos;

        @Override
        public String description() {
            return "gated " + ram.description();
        }

        @Override
        public int blockSize() {
            return ram.blockSize();
        }

        @Override
        public long blockCount() {
            return ram.blockCount();
        }

        @Override
        public boolean hasVolatileWriteCache() {
            return false;
        }

        @Override
        public void submit(BlockIo io) {
            synchronized (this) {
                if (closed && io.op() == BlockIo.Op.WRITE) {
                    held.add(io);
                    return;
                }
            }
            ram.submit(io);
            if (io.op() == BlockIo.Op.WRITE) {
                wrote();
            }
        }

        private synchronized void wrote() {
            writesDone++;
        }

        synchronized int held() {
            return held.size();
        }

        synchronized int writesDone() {
            return writesDone;
        }

        synchronized long releasedNanos() {
            return releasedNanos;
        }

        /** Opens the gate: the held writes go to the RAM device (which completes them inline) in order. */
        void open() {
            List<BlockIo> go;
            synchronized (this) {
                closed = false;
                go = new ArrayList<>(held);
                held.clear();
                releasedNanos = System.nanoTime();
            }
            for (BlockIo io : go) {
                ram.submit(io);
                wrote();
            }
        }

        @Override
        public void close() {
            open();
            ram.close();
        }
    }

    private final List<Reactor> reactors = new ArrayList<>();
    private final GatedDevice device = new GatedDevice();
    private Namespace namespace;
    private TargetMetrics metrics;
    private ControllerRegistry registry;
    private TcpControllerTransport transport;
    private TransportListener listener;
    private InetSocketAddress address;

    @BeforeEach
    void startTarget() throws IOException {
        transport = new TcpControllerTransport();
        List<PollGroup> groups = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Reactor reactor = new Reactor("preempt-abort-reactor-" + i, IdleMode.ADAPTIVE, Reactor.SPIN_NANOS_DEFAULT);
            PollGroup group = transport.createPollGroup(new OffHeapBufferPool(MIB, ByteBuffer.allocateDirect(32 * MIB)));
            reactor.add(group);
            reactor.add(new QosWaits(reactor.name() + " QoS"));
            reactor.start();
            reactors.add(reactor);
            groups.add(group);
        }
        TargetModel model = new TargetModel();
        Subsystem subsystem = new Subsystem(NQN, "PA0001", "preempt-abort", "1.0", true);
        namespace = new Namespace(1, device, UUID.fromString("5a5a5a5a-0000-4000-8000-000000000001"), new byte[] {
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
        subsystem.addNamespace(namespace);
        model.addSubsystem(subsystem);
        Port port = new Port(1, TransportAddress.tcp("127.0.0.1", 0),
            PortOptions.defaults().withInlineDataSize(TestTarget.INLINE_DATA_SIZE), new LinkedHashSet<>(List.of(NQN)));
        model.addPort(port);
        // Metered, as the daemon runs by default: the in-flight count and the metering wrap the same requests.
        metrics = TargetMetrics.prometheus(EnumSet.of(TransportType.TCP));
        metrics.bindNamespace(subsystem, namespace);
        registry = new ControllerRegistry();
        listener = transport.listen(port.address(), port.options(), groups,
            new ControllerQueueHandlerFactory(model, port, new NvmCommands(), registry, metrics));
        address = new InetSocketAddress(listener.address().traddr(), listener.address().port());
    }

    @AfterEach
    void stopTarget() {
        System.clearProperty("nvmeof4j.reservation.preempt_abort_timeout_ms");
        if (listener != null) {
            listener.close();
        }
        device.open(); // nothing stays held past the test
        if (registry != null) {
            registry.shutdown(Duration.ofSeconds(2));
            registry.close();
        }
        for (Reactor r : reactors) {
            assertThat(r.stop(Duration.ofSeconds(10))).as("%s stopped", r.name()).isTrue();
        }
        if (transport != null) {
            transport.close();
        }
        device.close();
    }

    /** One host's admin queue and one I/O queue. */
    private final class Host implements AutoCloseable {
        final RawNvmeTcpHost admin;
        final RawNvmeTcpHost io;

        Host(HostIdentity id) throws IOException {
            admin = Sessions.enabledAdmin(address, NQN, id, Sessions.KATO_MS);
            Sessions.requestIoQueues(admin, 1);
            io = Sessions.ioQueue(address, NQN, id, 1, admin.cntlid());
        }

        RawNvmeTcpHost.Command keys(int opcode, int cdw10, long k1, long k2) {
            byte[] data = new byte[16];
            ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(0, k1).putLong(8, k2);
            return RawNvmeTcpHost.Command.of(opcode).nsid(1).cdw(10, cdw10).dataOut(data);
        }

        int register(long key) throws IOException {
            return io.execute(keys(ReservationCommand.OPC_REGISTER,
                ReservationCommand.cdw10(ReservationCommand.REGISTER, false, 0, 0), 0, key)).status();
        }

        RawNvmeTcpHost.Command acquire(int action, int type, long crkey, long prkey) {
            return keys(ReservationCommand.OPC_ACQUIRE, ReservationCommand.cdw10(action, false, type, 0), crkey, prkey);
        }

        @Override
        public void close() {
            io.close();
            admin.close();
        }
    }

    private static byte[] pattern(int seed, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (seed * 31 + i * 7 + 1);
        }
        return b;
    }

    private static void waitFor(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 10 s: " + what);
            }
            Thread.sleep(2);
        }
    }

    @Test
    void shouldCompleteTheAcquireAfterTheBackendWritesAndAbortTheWaitingOnes() throws Exception {
        try (Host a = new Host(HOST_A); Host b = new Host(HOST_B)) {
            assertThat(a.register(KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.register(KEY_B)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.io.execute(b.acquire(ReservationCommand.ACQUIRE, ReservationType.WRITE_EXCLUSIVE, KEY_B, 0))
                .status()).isEqualTo(NvmeStatus.SUCCESS);
            // 1 MiB/s of writes: the first 1 MiB write goes (overrunning the budget), each next waits about a second.
            namespace.qos().limits(new QosLimits(0, 0, 0, 1));
            int blocks = MIB / BS;
            byte[] w1 = pattern(1, MIB);
            List<Integer> cids = List.of(
                b.io.submit(RawNvmeTcpHost.writeCommand(1, 0, blocks, w1, false)),
                b.io.submit(RawNvmeTcpHost.writeCommand(1, blocks, blocks, pattern(2, MIB), false)),
                b.io.submit(RawNvmeTcpHost.writeCommand(1, 2L * blocks, blocks, pattern(3, MIB), false)));
            // B's host answers the R2Ts and collects the completions on its own thread (one thread per host).
            CompletableFuture<List<Completion>> bWrites = CompletableFuture.supplyAsync(() -> {
                try {
                    return b.io.awaitAll(cids);
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            waitFor("B's first write in the backend, two waiting for the QoS budget",
                () -> device.held() == 1 && namespace.qos().waits() >= 2);

            long sent = System.nanoTime();
            CompletableFuture<Long> acquired = CompletableFuture.supplyAsync(() -> {
                try {
                    Completion c = a.io.execute(a.acquire(ReservationCommand.PREEMPT_AND_ABORT,
                        ReservationType.WRITE_EXCLUSIVE, KEY_A, KEY_B));
                    assertThat(c.status()).as("Acquire %s", c).isEqualTo(NvmeStatus.SUCCESS);
                    return System.nanoTime();
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(300);
            assertThat(acquired).as("the Acquire waits while B's write is in the backend").isNotDone();
            assertThat(device.writesDone()).isZero();

            device.open();
            long acquiredAt = acquired.get(10, TimeUnit.SECONDS);
            assertThat(device.writesDone()).as("only B's write that was in the backend reached the device")
                .isEqualTo(1);
            assertThat(acquiredAt - device.releasedNanos()).as("Acquire answered after B's write was let go")
                .isPositive();
            System.out.printf("preempt and abort: Acquire answered %d ms after it was sent%n",
                TimeUnit.NANOSECONDS.toMillis(acquiredAt - sent));

            List<Completion> done = bWrites.get(10, TimeUnit.SECONDS);
            assertThat(done.get(0).status()).as("B's write in the backend: %s", done.get(0))
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(done.get(1).status()).as("B's waiting write: %s", done.get(1))
                .isEqualTo(NvmeStatus.ABORTED_PREEMPT_AND_ABORT);
            assertThat(done.get(2).status()).as("B's waiting write: %s", done.get(2))
                .isEqualTo(NvmeStatus.ABORTED_PREEMPT_AND_ABORT);

            namespace.qos().limits(QosLimits.NONE);
            Completion next = b.io.write(1, 3L * blocks, 1, pattern(4, BS), false);
            assertThat(next.status()).as("B's next write %s", next).isEqualTo(CONFLICT);

            assertThat(a.io.read(1, 0, blocks, BS).data()).as("B's completed write").isEqualTo(w1);
            byte[] zeroes = new byte[MIB];
            assertThat(a.io.read(1, blocks, blocks, BS).data()).as("B's aborted write never landed").isEqualTo(zeroes);
            assertThat(a.io.read(1, 2L * blocks, blocks, BS).data()).as("B's aborted write never landed")
                .isEqualTo(zeroes);
            assertThat(a.io.read(1, 3L * blocks, 1, BS).data()).as("B's refused write").isEqualTo(new byte[BS]);
            assertThat(a.io.write(1, 0, 1, pattern(5, BS), false).status()).as("A now holds the reservation")
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(failedWrites(metrics.scrape(), "0x01b")).as("writes counted as aborted by the preemption")
                .isEqualTo(2.0);
            assertThat(failedWrites(metrics.scrape(), "0x083")).as("B's write refused after it").isEqualTo(1.0);
        }
    }

    /** {@code nvmeof_target_commands_failed_total} for writes with {@code status}, 0 when absent. */
    private static double failedWrites(String prometheusText, String status) {
        for (String line : prometheusText.split("\n")) {
            if (line.startsWith("nvmeof_target_commands_failed_total{") && line.contains("op=\"write\"")
                && line.contains("status=\"" + status + "\"")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return 0;
    }

    @Test
    void shouldAnswerCommandInterruptedPastTheBoundAndKeepThePreemption() throws Exception {
        System.setProperty("nvmeof4j.reservation.preempt_abort_timeout_ms", "500");
        try (Host a = new Host(HOST_A); Host b = new Host(HOST_B)) {
            assertThat(a.register(KEY_A)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.register(KEY_B)).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(b.io.execute(b.acquire(ReservationCommand.ACQUIRE, ReservationType.EXCLUSIVE_ACCESS, KEY_B, 0))
                .status()).isEqualTo(NvmeStatus.SUCCESS);
            int stuck = b.io.submit(RawNvmeTcpHost.writeCommand(1, 0, 8, pattern(6, 8 * BS), false));
            waitFor("B's write in the backend", () -> device.held() == 1);

            long sent = System.nanoTime();
            Completion c = a.io.execute(a.acquire(ReservationCommand.PREEMPT_AND_ABORT,
                ReservationType.EXCLUSIVE_ACCESS, KEY_A, KEY_B));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
            assertThat(c.status()).as("past the bound: %s", c).isEqualTo(NvmeStatus.COMMAND_INTERRUPTED);
            assertThat(c.dnr()).as("the host may retry").isFalse();
            assertThat(waited).isBetween(500L, 9_000L);
            assertThat(b.io.read(1, 8, 1, BS).status()).as("the preemption stands").isEqualTo(CONFLICT);

            device.open();
            assertThat(b.io.await(stuck).status()).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(a.io.read(1, 0, 8, BS).data()).isEqualTo(pattern(6, 8 * BS));
        }
    }
}
