package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup;
import io.nvmeof4j.protocol.spi.idle.IdleMode;
import io.nvmeof4j.target.reactor.Reactor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Selector;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 17 item 3, one wait primitive per reactor: a reactor serving a selector and an io_uring blocks on the
 * selector alone, with the idle strategy's full bound, and a ring completion wakes it when it lands. Before, it
 * blocked in the ring for at most 200 us at a time while I/O was in flight: ~250 wake-ups over a 50 ms I/O.
 */
class RingWakesReactorTest {
    private static final long DUE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    @TempDir
    Path dir;

    private Reactor reactor;
    private BdevChannels channels;
    private UringBlockDevice device;
    private final SelectorGroup transport = new SelectorGroup();

    /** Stands in for the NVMe/TCP group: a real selector with no sockets, blocked in until woken. */
    static final class SelectorGroup implements SelectorPollGroup {
        private final Selector selector;

        SelectorGroup() {
            try {
                selector = Selector.open();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public Selector selector() {
            return selector;
        }

        @Override
        public int poll() {
            try {
                return selector.selectNow();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void await(long timeoutNanos) {
            try {
                selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(timeoutNanos)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void wakeup() {
            selector.wakeup();
        }

        @Override
        public void close() {
            try {
                selector.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @BeforeEach
    void startReactor() throws Exception {
        device = UringBlockDevice.open(dir.resolve("ns.img"), 1 << 20, 4096, false);
        // No spinning: every empty round blocks, so the rounds below count wake-ups.
        reactor = new Reactor("wake-test-reactor", IdleMode.ADAPTIVE, 0);
        channels = new BdevChannels("wake-test block I/O", null, 16);
        reactor.add(transport);
        reactor.add(channels);
        reactor.start();
    }

    @AfterEach
    void stopReactor() {
        assertThat(reactor.stop(Duration.ofSeconds(10))).isTrue();
        device.close();
    }

    /** Completion time and the reactor's rounds at submission and at completion. */
    private static final class TimedIo extends BlockIo {
        final CompletableFuture<Long> done = new CompletableFuture<>();
        final Reactor reactor;
        volatile long submittedNanos;
        volatile long roundsAtSubmission;
        volatile long roundsAtCompletion;

        TimedIo(Reactor reactor) {
            this.reactor = reactor;
        }

        @Override
        public void complete(int nvmeStatus) {
            roundsAtCompletion = reactor.rounds();
            done.complete(nvmeStatus == 0 ? System.nanoTime() : -1L);
        }
    }

    @Test
    void shouldSleepOnTheSelectorAndBeWokenByTheRingWhenTheCompletionLands() throws Exception {
        assertThat(reactor.pollGroup(BdevChannels.class).wakes(transport.selector()))
            .as("the ring joined the selector when both were added").isTrue();
        Thread.sleep(200); // idle: the adaptive strategy has backed off to its longest block
        TimedIo io = new TimedIo(reactor);
        reactor.execute(() -> {
            io.roundsAtSubmission = reactor.rounds();
            io.submittedNanos = System.nanoTime();
            try {
                assertThat(channels.channel(device).delay(DUE_NANOS, io)).isZero();
            } catch (Exception e) {
                io.done.completeExceptionally(e);
            }
        });
        long completed = io.done.get(10, TimeUnit.SECONDS);
        assertThat(completed).as("completed with success").isPositive();
        long late = completed - io.submittedNanos - DUE_NANOS;
        // A few ms on a quiet machine; the bound leaves room for a loaded CI machine. The rounds are the point.
        assertThat(late).as("ns between the completion's due time and the reactor handling it")
            .isBetween(-TimeUnit.MILLISECONDS.toNanos(1), TimeUnit.SECONDS.toNanos(1));
        long rounds = io.roundsAtCompletion - io.roundsAtSubmission;
        System.out.printf("ring completion due 50 ms after submission: handled %d us after its due time, %d reactor "
            + "rounds meanwhile%n", TimeUnit.NANOSECONDS.toMicros(late), rounds);
        assertThat(rounds).as("rounds while the 50 ms I/O was in flight (a 200 us ring bound would make ~250)")
            .isLessThan(40);
    }
}
