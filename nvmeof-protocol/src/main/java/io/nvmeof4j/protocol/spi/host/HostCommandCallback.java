package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;

/**
 * Receives the completion of one command submitted with {@link HostQueue#submit}. Called exactly once per
 * command, on the queue's poll-group thread; must not block. Implementations are meant to be long-lived objects
 * reused for many commands (the per-command state travels in {@code context}), so that completing allocates nothing.
 */
@FunctionalInterface
public interface HostCommandCallback {
    /**
     * @param cqe     the completion: as received, or synthesized by the transport (C2HData SUCCESS flag: status 0;
     *                queue failure: {@link HostStatus#HOST_PATH_ERROR}). A flyweight valid only during this call.
     * @param context the object given to {@link HostQueue#submit}
     */
    void onCompletion(CompletionQueueEntry cqe, Object context);
}
