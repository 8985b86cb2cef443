package io.nvmeof4j.protocol.spi.transport;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Completions handed over from other threads are all finished on the draining thread, each in its order. */
class CompletionInboxTest {
    private static final class Completed implements CompletionInbox.Node<Completed> {
        final int producer;
        final int sequence;
        final List<Completed> finished;
        Completed next;

        Completed(int producer, int sequence, List<Completed> finished) {
            this.producer = producer;
            this.sequence = sequence;
            this.finished = finished;
        }

        @Override
        public Completed nextCompleted() {
            return next;
        }

        @Override
        public void nextCompleted(Completed next) {
            this.next = next;
        }

        @Override
        public void finishCompletion() {
            finished.add(this);
        }
    }

    @Test
    void shouldFinishEveryHandedOverCompletionInTheOrderEachThreadMadeThem() throws Exception {
        CompletionInbox<Completed> inbox = new CompletionInbox<>();
        List<Completed> finished = new ArrayList<>();
        int producers = 4;
        int each = 10_000;
        Thread[] threads = new Thread[producers];
        for (int p = 0; p < producers; p++) {
            int producer = p;
            threads[p] = new Thread(() -> {
                for (int i = 0; i < each; i++) {
                    inbox.push(new Completed(producer, i, finished));
                }
            });
            threads[p].start();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (finished.size() < producers * each && System.nanoTime() - deadline < 0) {
            inbox.drain();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(5));
        }
        inbox.drain();
        assertThat(finished).hasSize(producers * each);
        assertThat(inbox.isEmpty()).isTrue();
        int[] last = new int[producers];
        java.util.Arrays.fill(last, -1);
        for (Completed c : finished) {
            assertThat(c.sequence).as("producer %d", c.producer).isEqualTo(last[c.producer] + 1);
            last[c.producer] = c.sequence;
            assertThat(c.next).isNull();
        }
    }
}
