package io.nvmeof4j.target.reactor;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Test helper: runs a task on a reactor's thread, as a transport runs a queue's commands, and waits for its result. */
public final class OnReactor {
    private OnReactor() {
    }

    /** {@code task}'s result (or what it threw) within 10 s. */
    public static <T> T call(Reactor reactor, Callable<T> task) throws Exception {
        CompletableFuture<T> result = new CompletableFuture<>();
        reactor.execute(() -> {
            try {
                result.complete(task.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        return result.get(10, TimeUnit.SECONDS);
    }
}
