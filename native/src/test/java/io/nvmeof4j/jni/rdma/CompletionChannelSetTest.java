package io.nvmeof4j.jni.rdma;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The native wait of {@link CompletionChannelSet} over real fds on the build host, which has no RDMA device: named
 * pipes (opened read-write, so they never block or hang up) stand in for channel fds and wake-up eventfds. Members
 * without a channel only report readiness; taking and mapping events, and a channel closed during a wait, are
 * checked on Soft-RoCE in the guest ({@code RdmaDeviceChecks}).
 */
class CompletionChannelSetTest {
    private static final long LONG_WAIT = TimeUnit.SECONDS.toNanos(10);
    /** "At once", loosely: a shared 2-core machine may deschedule the waiter for a while. */
    private static final long PROMPT = TimeUnit.MILLISECONDS.toNanos(500);

    @TempDir
    Path dir;
    private final List<RandomAccessFile> open = new ArrayList<>();

    @AfterEach
    void closeFifos() throws IOException {
        for (RandomAccessFile f : open) {
            f.close();
        }
    }

    /** A named pipe opened read-write, and its fd number (from /proc/self/fd). */
    record Fifo(RandomAccessFile file, int fd) {
        void write(int bytes) throws IOException {
            file.write(new byte[bytes]);
        }

        /** Reads what a test wrote (blocking: call only when something was written). */
        int drain(int bytes) throws IOException {
            return file.read(new byte[bytes]);
        }
    }

    private Fifo fifo(String name) throws Exception {
        return fifo(dir, name, open);
    }

    /** A named pipe made in {@code dir}, opened read-write; its file is added to {@code open} for closing. */
    static Fifo fifo(Path dir, String name, List<RandomAccessFile> open) throws Exception {
        Path path = dir.resolve(name);
        Process p = new ProcessBuilder("mkfifo", path.toString()).redirectErrorStream(true).start();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).as("mkfifo %s ran", path).isTrue();
        assertThat(p.exitValue()).as("mkfifo %s", path).isZero();
        RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw");
        open.add(file);
        Path real = path.toRealPath();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                try {
                    if (Files.readSymbolicLink(fd).equals(real)) {
                        return new Fifo(file, Integer.parseInt(fd.getFileName().toString()));
                    }
                } catch (IOException gone) {
                    // the directory stream's own fd, closed by now
                }
            }
        }
        throw new AssertionError("no fd of " + path + " in /proc/self/fd");
    }

    /** Three members, each a pipe as its channel fd and one as its wake-up fd. */
    private Fifo[][] threeMembers(CompletionChannelSet set) throws Exception {
        Fifo[][] members = new Fifo[3][];
        for (int i = 0; i < 3; i++) {
            members[i] = new Fifo[] {fifo("fd" + i), fifo("wake" + i)};
            set.addFd(members[i][0].fd(), members[i][1].fd());
        }
        return members;
    }

    /**
     * Runs {@code set.await(LONG_WAIT)} on a thread; returns the thread, its result and when it returned (also used by
     * {@link RdmaDeviceChecks} on real channels).
     */
    static Thread waitOn(CompletionChannelSet set, AtomicReference<Object> result, AtomicLong returnedAt) {
        Thread t = new Thread(() -> {
            try {
                result.set(set.await(LONG_WAIT));
            } catch (Throwable e) {
                result.set(e);
            }
            returnedAt.set(System.nanoTime());
        }, "set-waiter");
        t.start();
        return t;
    }

    @Test
    void shouldWakeAtOnceWhenTheSecondOfThreeFdsBecomesReadableAndReportIt() throws Exception {
        CompletionChannelSet set = new CompletionChannelSet(8);
        Fifo[][] m = threeMembers(set);
        AtomicReference<Object> result = new AtomicReference<>("not returned");
        AtomicLong returnedAt = new AtomicLong();
        Thread waiter = waitOn(set, result, returnedAt);
        Thread.sleep(200); // the waiter is in ppoll by now
        assertThat(waiter.isAlive()).as("waiting with nothing readable").isTrue();
        long writtenAt = System.nanoTime();
        m[1][0].write(1);
        waiter.join(5000);

        assertThat(waiter.isAlive()).isFalse();
        assertThat(result.get()).as("no channel behind a bare fd: no events taken").isEqualTo(0);
        assertThat(returnedAt.get() - writtenAt).as("wait ended after the write, within %d ns", PROMPT)
            .isBetween(0L, PROMPT);
        assertThat(set.readiness(0)).isZero();
        assertThat(set.readiness(1)).isEqualTo(CompletionChannelSet.READABLE);
        assertThat(set.readiness(2)).isZero();
        assertThat(m[1][0].drain(1)).isEqualTo(1);
    }

    @Test
    void shouldEndTheWaitOnWakeupAndDrainTheWakeFd() throws Exception {
        CompletionChannelSet set = new CompletionChannelSet(8);
        threeMembers(set);
        AtomicReference<Object> result = new AtomicReference<>("not returned");
        AtomicLong returnedAt = new AtomicLong();
        Thread waiter = waitOn(set, result, returnedAt);
        Thread.sleep(200);
        assertThat(waiter.isAlive()).isTrue();
        long wokenAt = System.nanoTime();
        set.wakeup();
        waiter.join(5000);

        assertThat(waiter.isAlive()).isFalse();
        assertThat(result.get()).isEqualTo(0);
        assertThat(returnedAt.get() - wokenAt).as("wait ended by wakeup() within %d ns", PROMPT)
            .isBetween(0L, PROMPT);
        assertThat(set.readiness(0)).as("the first member's wake fd carries the wake-up")
            .isEqualTo(CompletionChannelSet.WOKEN);
        assertThat(set.readiness(1)).isZero();
        assertThat(set.readiness(2)).isZero();

        // The wait read the wake-up: the next wait sleeps its full timeout.
        long t0 = System.nanoTime();
        assertThat(set.await(TimeUnit.MILLISECONDS.toNanos(150))).isZero();
        assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(140));
        assertThat(set.readiness(0)).isZero();
    }

    @Test
    void shouldHonourTheTimeout() throws Exception {
        CompletionChannelSet set = new CompletionChannelSet(8);
        Fifo[][] m = threeMembers(set);
        long t0 = System.nanoTime();
        assertThat(set.await(TimeUnit.MILLISECONDS.toNanos(200))).isZero();
        long waited = System.nanoTime() - t0;
        assertThat(waited).as("waited %d ns for a 200 ms timeout", waited)
            .isBetween(TimeUnit.MILLISECONDS.toNanos(190), TimeUnit.SECONDS.toNanos(2));

        t0 = System.nanoTime();
        assertThat(set.await(0)).as("0: just look").isZero();
        assertThat(System.nanoTime() - t0).isLessThan(PROMPT);

        // A member readable before the wait: reported without waiting, with a long timeout.
        m[2][0].write(1);
        m[0][1].write(8);
        t0 = System.nanoTime();
        assertThat(set.await(LONG_WAIT)).isZero();
        assertThat(System.nanoTime() - t0).isLessThan(PROMPT);
        assertThat(set.readiness(0)).isEqualTo(CompletionChannelSet.WOKEN);
        assertThat(set.readiness(1)).isZero();
        assertThat(set.readiness(2)).isEqualTo(CompletionChannelSet.READABLE);
    }

    @Test
    void shouldNotAllocatePerWaitOrWakeUp() throws Exception {
        CompletionChannelSet set = new CompletionChannelSet(8);
        threeMembers(set);
        com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        int woken = 0;
        for (int round = 0; round < 2; round++) { // the first round warms up (JIT, class loading)
            long before = threads.getThreadAllocatedBytes(tid);
            for (int i = 0; i < 20_000; i++) {
                set.wakeup();
                set.await(0);
                woken += set.readiness(0) == CompletionChannelSet.WOKEN ? 1 : 0;
            }
            long allocated = threads.getThreadAllocatedBytes(tid) - before;
            if (round == 1) {
                assertThat(allocated).as("bytes allocated by 20,000 wake-ups and waits").isLessThan(1024);
            }
        }
        assertThat(woken).as("waits that saw their wake-up").isEqualTo(40_000);
    }

    @Test
    void shouldRefuseWaitsThatCannotEnd() {
        CompletionChannelSet set = new CompletionChannelSet(4);
        assertThatThrownBy(() -> set.await(1)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("no completion channel");
        assertThatThrownBy(() -> set.await(-1)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("timeout");
        assertThatThrownBy(() -> set.queue(0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> new CompletionChannelSet(0)).isInstanceOf(IllegalArgumentException.class);
        set.wakeup(); // nothing to wake: a no-op
    }
}
