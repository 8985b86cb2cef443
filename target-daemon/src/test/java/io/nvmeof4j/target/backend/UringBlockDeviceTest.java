package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.nvmeof4j.target.backend.BlockIo.Op.DEALLOCATE;
import static io.nvmeof4j.target.backend.BlockIo.Op.FLUSH;
import static io.nvmeof4j.target.backend.BlockIo.Op.READ;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE;
import static io.nvmeof4j.target.backend.BlockIo.Op.WRITE_ZEROES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The io_uring file device as the daemon uses it: submitted on a reactor whose {@link BdevChannels} polls the ring
 * in the same loop as a (stand-in) transport group, from pool buffers registered as fixed buffers.
 */
class UringBlockDeviceTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    private Reactor reactor;
    private OffHeapBufferPool pool;
    private BdevChannels channels;
    private final SleepyGroup transport = new SleepyGroup();

    /** Stands in for the selector group: blocks its whole timeout unless woken, like an idle socket. */
    static final class SleepyGroup implements PollGroup {
        @Override
        public int poll() {
            return 0;
        }

        @Override
        public void await(long timeoutNanos) {
            java.util.concurrent.locks.LockSupport.parkNanos(timeoutNanos);
        }

        @Override
        public void wakeup() {
        }

        @Override
        public void close() {
        }
    }

    @BeforeEach
    void startReactor() throws Exception {
        reactor = new Reactor("test-reactor", IdleMode.ADAPTIVE, TimeUnit.MICROSECONDS.toNanos(50));
        BdevRegion region = BdevRegion.map(16L * MIB, false);
        reactor.own(region);
        pool = new OffHeapBufferPool(MIB, region.buffer());
        channels = new BdevChannels("test block I/O", pool, 256);
        reactor.add(transport);
        reactor.add(channels);
        reactor.start();
    }

    @AfterEach
    void stopReactor() {
        assertThat(reactor.stop(Duration.ofSeconds(10))).isTrue();
    }

    /** One I/O submitted on the reactor thread; completes with its status. */
    final class ReactorIo extends BlockIo {
        final CompletableFuture<Integer> done = new CompletableFuture<>();
        final AtomicInteger completions = new AtomicInteger();
        volatile boolean onReactor;

        @Override
        public void complete(int nvmeStatus) {
            onReactor = reactor.isReactorThread();
            completions.incrementAndGet();
            done.complete(nvmeStatus);
        }
    }

    private int run(BlockDevice device, BlockIo.Op op, long offset, long length, ByteBuffer buffer, boolean fua)
        throws Exception {
        ReactorIo io = new ReactorIo();
        reactor.execute(() -> device.submit(io.prepare(op, offset, length, buffer, fua)));
        int status = io.done.get(10, TimeUnit.SECONDS);
        assertThat(io.completions.get()).isEqualTo(1);
        assertThat(io.onReactor).as("completed on the reactor thread").isTrue();
        return status;
    }

    /** A pool buffer (acquired on the reactor, since the pool is the reactor's), filled with {@code data}. */
    private ByteBuffer poolBuffer(byte[] data, int length) throws Exception {
        CompletableFuture<ByteBuffer> f = new CompletableFuture<>();
        reactor.execute(() -> f.complete(pool.acquire(length)));
        ByteBuffer b = f.get(5, TimeUnit.SECONDS);
        if (data != null) {
            b.put(0, data);
        }
        return b;
    }

    private static byte[] random(long seed, int n) {
        byte[] b = new byte[n];
        new java.util.Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] fileBytes(Path p, long offset, int n) throws Exception {
        byte[] b = new byte[n];
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "r")) {
            f.seek(offset);
            f.readFully(b);
        }
        return b;
    }

    /** A descriptor reused for I/O after I/O, as a queue slot's is. */
    static final class SlotIo extends BlockIo {
        volatile CompletableFuture<Integer> done = new CompletableFuture<>();

        @Override
        public void complete(int nvmeStatus) {
            done.complete(nvmeStatus);
        }
    }

    private int submit(BlockDevice device, SlotIo io, BlockIo.Op op, ByteBuffer buffer) throws Exception {
        io.done = new CompletableFuture<>();
        reactor.execute(() -> device.submit(io.prepare(op, 0, 4096, buffer, false)));
        return io.done.get(10, TimeUnit.SECONDS);
    }

    /**
     * A descriptor no queue bound at Connect (a queue slot's is: IoQueueBackendBindingTest) finds its reactor's ring and
     * the device's channel once, at its first I/O there, and keeps them for the next I/Os; another device gets its own
     * channel; I/O of a detached device is refused, never sent through the closed channel the descriptor still holds.
     */
    @Test
    void shouldBindTheRingAndTheChannelToTheDescriptorAtItsFirstIo() throws Exception {
        try (UringBlockDevice a = UringBlockDevice.open(dir.resolve("a.img"), 4L * MIB, 4096, false);
             UringBlockDevice b = UringBlockDevice.open(dir.resolve("b.img"), 4L * MIB, 4096, false)) {
            byte[] data = random(7, 4096);
            ByteBuffer buffer = poolBuffer(data, 4096);
            SlotIo io = new SlotIo();
            assertThat(submit(a, io, WRITE, buffer)).isZero();
            assertThat(io.boundRing).as("bound to the reactor's ring").isSameAs(channels);
            assertThat(io.boundDevice).isSameAs(a);
            io.nvmeof4j.jni.bdev.BdevIoChannel first = io.boundChannel;
            assertThat(first).isNotNull();

            ByteBuffer back = poolBuffer(null, 4096);
            assertThat(submit(a, io, READ, back)).isZero();
            byte[] read = new byte[4096];
            back.get(0, read);
            assertThat(read).as("the bytes written").isEqualTo(data);
            assertThat(io.boundChannel).as("kept for the next I/O").isSameAs(first);

            assertThat(submit(b, io, READ, back)).isZero();
            assertThat(io.boundDevice).isSameAs(b);
            assertThat(io.boundChannel).as("another device, another channel").isNotSameAs(first);
            assertThat(submit(a, io, READ, back)).isZero();
            assertThat(io.boundChannel).as("the first device's channel again").isSameAs(first);

            assertThat(a.detach(List.of(reactor), Duration.ofSeconds(10))).isTrue();
            assertThat(first.isClosed()).as("detach closed the channel the descriptor holds").isTrue();
            assertThat(submit(a, io, READ, back)).isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
        }
    }

    @Test
    void shouldCreateASparseFileAndReportItsGeometry() throws Exception {
        Path file = dir.resolve("ns1.img");
        try (UringBlockDevice device = UringBlockDevice.open(file, 64L * MIB, 0, false)) {
            assertThat(Files.size(file)).isEqualTo(64L * MIB);
            assertThat(device.blockSize()).as("a file's default block size").isEqualTo(4096);
            assertThat(device.blockCount()).isEqualTo(64L * MIB / 4096);
            assertThat(device.hasVolatileWriteCache()).isTrue();
            assertThat(device.isDirect()).isTrue();
            assertThat(device.description()).isEqualTo("file " + file);
            ByteBuffer back = poolBuffer(random(1, 8192), 8192);
            assertThat(run(device, READ, 32L * MIB, 8192, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 8192)).isTrue();
        }
        try (UringBlockDevice device = UringBlockDevice.open(file, 0, 512, true)) {
            assertThat(device.blockCount()).as("the existing file's size in 512-byte blocks").isEqualTo(64L * MIB / 512);
            assertThat(device.description()).isEqualTo("file " + file + " (buffered)");
        }
    }

    @Test
    void shouldReadBackWritesOfSeveralSizesAndOffsetsThroughTheReactorsRing() throws Exception {
        Path file = dir.resolve("rw.img");
        try (UringBlockDevice device = UringBlockDevice.open(file, 16L * MIB, 512, false)) {
            long[] offsets = {0, 512, 4096 - 512, MIB - 512, 16L * MIB - 128 * 1024};
            int[] lengths = {512, 4096, 12288, 128 * 1024};
            long seed = 0;
            for (long offset : offsets) {
                for (int length : lengths) {
                    if (offset + length > 16L * MIB) {
                        continue;
                    }
                    byte[] data = random(++seed, length);
                    ByteBuffer out = poolBuffer(data, length);
                    assertThat(run(device, WRITE, offset, length, out, seed % 3 == 0)).isZero();
                    assertThat(out.position()).as("write leaves position").isZero();
                    ByteBuffer back = poolBuffer(null, length);
                    assertThat(run(device, READ, offset, length, back, false)).isZero();
                    assertThat(back.position()).isZero();
                    assertThat(back.limit()).isEqualTo(length);
                    byte[] got = new byte[length];
                    back.get(0, got);
                    assertThat(got).as("%d bytes at %d", length, offset).isEqualTo(data);
                    assertThat(fileBytes(file, offset, length)).isEqualTo(data);
                }
            }
        }
    }

    @Test
    void shouldServeIoSubmittedOffTheReactorsSynchronously() throws Exception {
        try (UringBlockDevice device = UringBlockDevice.open(dir.resolve("off.img"), 4L * MIB, 4096, false)) {
            ByteBuffer data = ByteBuffer.allocateDirect(8192 + 4096).alignedSlice(4096);
            data.put(0, random(5, 8192)).limit(8192);
            assertThat(SyncIo.run(device, WRITE, 4096, 8192, data, true)).isZero();
            ByteBuffer back = ByteBuffer.allocateDirect(8192 + 4096).alignedSlice(4096).limit(8192);
            assertThat(SyncIo.run(device, READ, 4096, 8192, back, false)).isZero();
            assertThat(back).isEqualTo(data);
        }
    }

    @Test
    void shouldRunManyIosInFlightAtOnce() throws Exception {
        try (UringBlockDevice device = UringBlockDevice.open(dir.resolve("many.img"), 16L * MIB, 4096, false)) {
            int count = 64;
            List<ReactorIo> ios = new ArrayList<>();
            List<ByteBuffer> buffers = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                buffers.add(poolBuffer(random(100 + i, 16384), 16384));
                ios.add(new ReactorIo());
            }
            reactor.execute(() -> {
                for (int i = 0; i < count; i++) {
                    device.submit(ios.get(i).prepare(WRITE, (long) i * 65536, 16384, buffers.get(i), false));
                }
            });
            for (ReactorIo io : ios) {
                assertThat(io.done.get(10, TimeUnit.SECONDS)).isZero();
            }
            for (int i = 0; i < count; i++) {
                ByteBuffer back = poolBuffer(null, 16384);
                assertThat(run(device, READ, (long) i * 65536, 16384, back, false)).isZero();
                byte[] got = new byte[16384];
                back.get(0, got);
                assertThat(got).isEqualTo(random(100 + i, 16384));
            }
        }
    }

    @Test
    void shouldFlushZeroAndDeallocate() throws Exception {
        Path file = dir.resolve("z.img");
        try (UringBlockDevice device = UringBlockDevice.open(file, 8L * MIB, 4096, false)) {
            byte[] data = random(7, MIB);
            assertThat(run(device, WRITE, 0, MIB, poolBuffer(data, MIB), false)).isZero();
            assertThat(run(device, WRITE, 4L * MIB, MIB, poolBuffer(data, MIB), false)).isZero();
            assertThat(run(device, FLUSH, 0, 0, null, false)).isZero();
            assertThat(run(device, WRITE_ZEROES, 8192, 65536, null, true)).isZero();
            assertThat(run(device, DEALLOCATE, 4L * MIB, MIB, null, false)).isZero();
            byte[] expected = data.clone();
            java.util.Arrays.fill(expected, 8192, 8192 + 65536, (byte) 0);
            assertThat(fileBytes(file, 0, MIB)).isEqualTo(expected);
            assertThat(fileBytes(file, 4L * MIB, MIB)).isEqualTo(new byte[MIB]);
        }
    }

    /**
     * The reactor's first group blocks for its whole timeout (100 ms) when idle; I/O in flight on the ring must not
     * wait for that: the reactor waits on the ring instead.
     */
    @Test
    void shouldNoticeCompletionsWithoutWaitingForTheIdleTransport() throws Exception {
        try (UringBlockDevice device = UringBlockDevice.open(dir.resolve("lat.img"), 8L * MIB, 4096, false)) {
            ByteBuffer b = poolBuffer(random(8, 4096), 4096);
            long[] took = new long[20];
            for (int i = 0; i < took.length; i++) {
                Thread.sleep(5); // let the reactor fall asleep
                long start = System.nanoTime();
                assertThat(run(device, i % 2 == 0 ? WRITE : FLUSH, 0, i % 2 == 0 ? 4096 : 0, i % 2 == 0 ? b : null,
                    true)).isZero();
                took[i] = System.nanoTime() - start;
            }
            // A submission wakes nothing (the stand-in cannot be woken): it starts within one 100 ms wait, and its
            // completion must then be noticed from the ring, not after another 100 ms: a typical I/O takes less than
            // two waits. The median, not the worst: on a loaded machine one flush can take seconds in the disk itself.
            java.util.Arrays.sort(took);
            assertThat(TimeUnit.NANOSECONDS.toMillis(took[took.length / 2])).as("median submit-to-completion")
                .isLessThan(190);
        }
    }

    @Test
    void shouldMapErrnoToTheStatusNvmetAnswers() {
        assertThat(UringBlockDevice.statusFor(WRITE, Errno.ENOSPC)).isEqualTo(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
        assertThat(UringBlockDevice.statusFor(READ, Errno.EIO)).isEqualTo(NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR);
        assertThat(UringBlockDevice.statusFor(READ, Errno.EINVAL)).isEqualTo(NvmeStatus.INTERNAL_ERROR | NvmeStatus.DNR);
        assertThat(UringBlockDevice.statusFor(DEALLOCATE, Errno.EOPNOTSUPP))
            .isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        assertThat(UringBlockDevice.statusFor(READ, Errno.ENODATA)).isEqualTo(NvmeStatus.ACCESS_DENIED);
        assertThat(UringBlockDevice.statusFor(READ, 0)).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldAnswerCapacityExceededWhenTheFileSystemIsFull() throws Exception {
        Path mount = Files.createDirectory(dir.resolve("tmpfs"));
        exec("mount", "-t", "tmpfs", "-o", "size=512k", "nvmeof4j-daemon-test", mount.toString());
        try {
            try (UringBlockDevice device = UringBlockDevice.open(mount.resolve("full.img"), 8L * MIB, 4096, false)) {
                assertThat(run(device, WRITE, 0, MIB, poolBuffer(random(9, MIB), MIB), false))
                    .isEqualTo(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
            }
        } finally {
            exec("umount", "-l", mount.toString());
        }
    }

    @Test
    void shouldRefuseASecondOpenAndIoAfterClose() throws Exception {
        Path file = dir.resolve("lock.img");
        UringBlockDevice device = UringBlockDevice.open(file, 4L * MIB, 4096, false);
        assertThatThrownBy(() -> UringBlockDevice.open(file, 4L * MIB, 4096, false))
            .isInstanceOf(NativeIoException.class).hasMessageContaining("locked by another process");
        device.close();
        device.close();
        assertThat(SyncIo.run(device, READ, 0, 4096, ByteBuffer.allocateDirect(4096), false))
            .isEqualTo(NvmeStatus.NAMESPACE_NOT_READY);
        assertThatThrownBy(() -> UringBlockDevice.open(dir.resolve("missing.img"), 0, 4096, false))
            .isInstanceOf(NativeIoException.class).hasMessageContaining("ENOENT");
    }

    /**
     * What a checked path meets when it is opened (management API namespaces): whatever was swapped in after the
     * check is refused by the open itself, and the file the swap pointed at is left as it was.
     */
    @Test
    void shouldRefuseAConfinedPathThatChangedAfterItsCheck() throws Exception {
        Path allowed = Files.createDirectories(dir.resolve("allowed/sub"));
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Path secret = Files.write(outside.resolve("f.img"), new byte[8192]);
        long secretModified = Files.getLastModifiedTime(secret).toMillis();
        Path checked = allowed.resolve("f.img"); // checked while absent: to be created
        // A directory on the path replaced by a symlink after the check: the open fails rather than follows it.
        Files.delete(allowed);
        Files.createSymbolicLink(allowed, outside);
        assertThatThrownBy(() -> UringBlockDevice.open(checked, 4L * MIB, 4096, false,
            UringOptions.Confinement.REGULAR_FILE, false))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ELOOP))
            .hasMessageContaining("became a symbolic link");
        // The last component replaced by a symlink: the same.
        Files.delete(allowed);
        Files.createDirectories(allowed);
        Files.createSymbolicLink(checked, secret);
        assertThatThrownBy(() -> UringBlockDevice.open(checked, 4L * MIB, 4096, false,
            UringOptions.Confinement.REGULAR_FILE, false))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ELOOP));
        // A hard link to the outside file: refused on the opened descriptor.
        Files.delete(checked);
        Files.createLink(checked, secret);
        assertThatThrownBy(() -> UringBlockDevice.open(checked, 4L * MIB, 4096, false,
            UringOptions.Confinement.REGULAR_FILE, false))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EMLINK));
        // A FIFO where a regular file was checked.
        Files.delete(checked);
        exec("mkfifo", checked.toString());
        assertThatThrownBy(() -> UringBlockDevice.open(checked, 0, 4096, false,
            UringOptions.Confinement.REGULAR_FILE, false))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ENODEV));
        assertThat(Files.size(secret)).isEqualTo(8192);
        assertThat(Files.getLastModifiedTime(secret).toMillis()).isEqualTo(secretModified);
        assertThat(Files.readAllBytes(secret)).containsOnly(0);

        // A regular file with one link opens, and one to create is created (mode 0600) and sized.
        Files.delete(checked);
        try (UringBlockDevice device = UringBlockDevice.open(checked, 4L * MIB, 4096, false,
            UringOptions.Confinement.REGULAR_FILE, false)) {
            assertThat(device.blockCount() * device.blockSize()).isEqualTo(4L * MIB);
        }
        assertThat(Files.size(checked)).isEqualTo(4L * MIB);
        assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(checked)))
            .isEqualTo("rw-------");
        // A regular file is not accepted where a block device was checked.
        assertThatThrownBy(() -> UringBlockDevice.open(checked, 0, 4096, false,
            UringOptions.Confinement.BLOCK_DEVICE, false))
            .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ENODEV));
    }

    private static void exec(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("%s: %s", String.join(" ", command), out).isZero();
    }
}
