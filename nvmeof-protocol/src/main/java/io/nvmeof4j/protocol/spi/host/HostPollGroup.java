package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.protocol.spi.transport.RoundClock;

/**
 * A host transport's share of one host reactor thread: the queues opened on it are read, parsed, sent and
 * completed in {@link #poll()}, and every {@link HostCommandCallback} runs inside it. The reactor drives it exactly
 * like a controller-role {@link PollGroup}: poll in a loop, {@link #await} when idle, {@link #wakeup} from other
 * threads.
 */
public interface HostPollGroup extends PollGroup {
    /**
     * Any thread: runs {@code task} on the poll-group thread during a coming {@link #poll()}. For control work
     * (connect, close, timers); it may allocate, so not for the per-I/O path.
     */
    void execute(Runnable task);

    /**
     * The group's round clock (poll-group thread): {@link #poll()} begins a round with it before it reads anything,
     * so the first completion a round handles reads the time once and the round's later completions, the
     * submissions their callbacks make and the reactor's deadlines share it.
     */
    RoundClock clock();

    /** Whether the calling thread is the one polling this group. */
    boolean inPollGroupThread();
}
