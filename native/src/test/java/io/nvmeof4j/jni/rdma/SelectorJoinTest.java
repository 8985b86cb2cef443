package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An fd joined to a JDK selector's epoll set ({@link CompletionChannel#joinSelector}, common/selector.c) on the
 * build host, which has no RDMA device: a named pipe stands in for a completion channel's fd. The join ends a long
 * select at once, the JDK ignores its event (no key, sockets' keys unaffected), it reports once until re-armed, and
 * it is silent after leaving. The channel's own join, re-armed by its drains, is checked on Soft-RoCE in the guest.
 */
class SelectorJoinTest {
    private static final long LONG_SELECT_MILLIS = 10_000;
    /** "At once", loosely: a shared 2-core machine may deschedule the selecting thread for a while. */
    private static final long PROMPT = TimeUnit.MILLISECONDS.toNanos(500);

    @TempDir
    Path dir;
    private final List<RandomAccessFile> open = new ArrayList<>();
    private final List<AutoCloseable> closeLater = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : closeLater) {
            c.close();
        }
        for (RandomAccessFile f : open) {
            f.close();
        }
    }

    private Selector selector() throws IOException {
        Selector s = Selector.open();
        closeLater.add(s);
        return s;
    }

    /** Runs {@code selector.select(LONG_SELECT_MILLIS)} on a thread; its result and when it returned. */
    private static Thread selectOn(Selector selector, AtomicReference<Object> result, AtomicLong returnedAt) {
        Thread t = new Thread(() -> {
            try {
                result.set(selector.select(LONG_SELECT_MILLIS));
            } catch (Throwable e) {
                result.set(e);
            }
            returnedAt.set(System.nanoTime());
        }, "selecting");
        t.start();
        return t;
    }

    /** How long a select with {@code millis} took, in ms (it returned {@code 0} keys: asserted). */
    private static long timedSelect(Selector selector, long millis) throws IOException {
        long t0 = System.nanoTime();
        assertThat(selector.select(millis)).as("keys selected").isZero();
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    }

    @Test
    void shouldEndALongSelectAtOnceWhenAJoinedFdBecomesReadableAndSelectNoKeyForIt() throws Exception {
        Selector selector = selector();
        CompletionChannelSetTest.Fifo fifo = CompletionChannelSetTest.fifo(dir, "channel", open);
        assertThat(CompletionChannel.joinable(selector)).as("the JDK's epoll selector can be joined").isZero();
        int epfd = CompletionChannel.joinFd(selector, fifo.fd());
        assertThat(epfd).as("join (our duplicate of the selector's epoll fd, or -errno)").isNotNegative();
        try {
            AtomicReference<Object> result = new AtomicReference<>("not returned");
            AtomicLong returnedAt = new AtomicLong();
            Thread selecting = selectOn(selector, result, returnedAt);
            Thread.sleep(200); // in epoll_wait by now
            assertThat(selecting.isAlive()).as("selecting while nothing is readable").isTrue();
            long writtenAt = System.nanoTime();
            fifo.write(1);
            selecting.join(5000);

            assertThat(selecting.isAlive()).isFalse();
            assertThat(result.get()).as("keys selected: the JDK has no key for the joined fd").isEqualTo(0);
            long tookNanos = returnedAt.get() - writtenAt;
            System.out.printf("joined fd readable -> select returned after %d us%n", tookNanos / 1000);
            assertThat(tookNanos).as("select ended after the write, within %d ns", PROMPT).isBetween(0L, PROMPT);
            assertThat(selector.selectedKeys()).isEmpty();
            assertThat(selector.keys()).as("the join registers nothing with the JDK").isEmpty();
        } finally {
            assertThat(CompletionChannel.leaveFd(epfd, fifo.fd())).isZero();
        }
    }

    @Test
    void shouldLeaveTheSelectorsOwnKeysAsTheyAreWhileAJoinedFdIsReadable() throws Exception {
        Selector selector = selector();
        CompletionChannelSetTest.Fifo fifo = CompletionChannelSetTest.fifo(dir, "channel", open);
        int epfd = CompletionChannel.joinFd(selector, fifo.fd());
        assertThat(epfd).isNotNegative();
        Pipe pipe = Pipe.open();
        closeLater.add(pipe.sink());
        closeLater.add(pipe.source());
        pipe.source().configureBlocking(false);
        SelectionKey key = pipe.source().register(selector, SelectionKey.OP_READ, "socket-like");
        try {
            fifo.write(1);
            pipe.sink().write(ByteBuffer.wrap(new byte[] {7}));
            List<Object> ready = new ArrayList<>();
            int n = selector.select(k -> ready.add(k.attachment()), LONG_SELECT_MILLIS);
            assertThat(n).as("keys selected").isEqualTo(1);
            assertThat(ready).containsExactly("socket-like");
            assertThat(key.isValid()).isTrue();
            ByteBuffer got = ByteBuffer.allocate(4);
            assertThat(pipe.source().read(got)).isEqualTo(1);
            assertThat(got.get(0)).isEqualTo((byte) 7);
        } finally {
            assertThat(CompletionChannel.leaveFd(epfd, fifo.fd())).isZero();
        }
    }

    @Test
    void shouldReportAJoinedFdOnceUntilRearmedAndNeverAfterLeaving() throws Exception {
        Selector selector = selector();
        CompletionChannelSetTest.Fifo fifo = CompletionChannelSetTest.fifo(dir, "channel", open);
        int epfd = CompletionChannel.joinFd(selector, fifo.fd());
        assertThat(epfd).isNotNegative();
        fifo.write(1);
        assertThat(timedSelect(selector, LONG_SELECT_MILLIS)).as("ms: reported at once").isLessThan(500);
        // Still readable (nobody drained it), but reported once: a select now runs its whole timeout, where a
        // level-triggered join would end every select at once.
        assertThat(timedSelect(selector, 300)).as("ms: silent after one report").isGreaterThanOrEqualTo(250);
        assertThat(selector.selectNow()).isZero();

        assertThat(CompletionChannel.rearmFd(epfd, fifo.fd())).isZero();
        assertThat(timedSelect(selector, LONG_SELECT_MILLIS)).as("ms: re-armed while readable, reported at once")
            .isLessThan(500);
        assertThat(fifo.drain(1)).isEqualTo(1);
        assertThat(CompletionChannel.rearmFd(epfd, fifo.fd())).isZero();
        assertThat(timedSelect(selector, 300)).as("ms: drained and re-armed, nothing to report")
            .isGreaterThanOrEqualTo(250);

        assertThat(CompletionChannel.leaveFd(epfd, fifo.fd())).isZero();
        fifo.write(1);
        assertThat(timedSelect(selector, 300)).as("ms: left the set, a readable fd wakes nothing")
            .isGreaterThanOrEqualTo(250);
        assertThat(CompletionChannel.rearmFd(epfd, fifo.fd())).as("re-arm through a closed duplicate")
            .isEqualTo(-Errno.EBADF);
    }

    @Test
    void shouldRefuseASelectorThatIsNotTheJdksEpollSelector() throws Exception {
        CompletionChannelSetTest.Fifo fifo = CompletionChannelSetTest.fifo(dir, "channel", open);
        try (Selector other = new OtherSelector()) {
            assertThat(CompletionChannel.joinable(other)).isEqualTo(-Errno.EOPNOTSUPP);
            assertThat(CompletionChannel.joinFd(other, fifo.fd())).isEqualTo(-Errno.EOPNOTSUPP);
        }
        Selector closed = Selector.open();
        closed.close();
        assertThat(CompletionChannel.joinable(closed)).isEqualTo(-Errno.EBADF);
    }

    /** A selector of another provider (no epfd field): what a JDK without the epoll selector would hand us. */
    private static final class OtherSelector extends AbstractSelector {
        OtherSelector() {
            super(SelectorProvider.provider());
        }

        @Override
        protected void implCloseSelector() {
        }

        @Override
        protected SelectionKey register(AbstractSelectableChannel ch, int ops, Object att) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Set<SelectionKey> keys() {
            return Set.of();
        }

        @Override
        public Set<SelectionKey> selectedKeys() {
            return Set.of();
        }

        @Override
        public int selectNow() {
            return 0;
        }

        @Override
        public int select(long timeout) {
            return 0;
        }

        @Override
        public int select() {
            return 0;
        }

        @Override
        public Selector wakeup() {
            return this;
        }
    }
}
