package io.nvmeof4j.initiator;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Keep Alive of one {@link NvmeofController}: a command every KATO/2 on the host's timer over the current admin
 * connection ({@link KeepAliveSender}); a failure starts the controller's recovery.
 */
final class KeepAlive {
    private final NvmeofController controller;
    private final NvmeofHost host;
    private ScheduledFuture<?> task;
    /** The current admin connection's, or null (no KATO, or not yet live). */
    private volatile KeepAliveSender sender;

    KeepAlive(NvmeofController controller, NvmeofHost host) {
        this.controller = controller;
        this.host = host;
    }

    /** Starts sending on {@code a} (nothing without KATO), replacing the previous connection's task. */
    void start(AdminConnection a) {
        long kato = controller.options().keepAliveTimeout().toMillis();
        if (kato == 0) {
            return;
        }
        long period = Math.max(1, kato / 2);
        KeepAliveSender next = new KeepAliveSender(a.queue, kato);
        synchronized (controller.lock()) {
            cancel();
            sender = next;
            task = host.timer().scheduleAtFixedRate(() -> send(a, next), period, period, TimeUnit.MILLISECONDS);
        }
    }

    /** Under the controller's lock. */
    void cancel() {
        ScheduledFuture<?> t = task;
        if (t != null) {
            t.cancel(false);
            task = null;
        }
    }

    /** Keep Alives completed with success on the current admin connection (tests). */
    long completed() {
        KeepAliveSender s = sender;
        return s == null ? 0 : s.completedOk();
    }

    /** Timer thread: nothing here or in the sender allocates on the reactor (KeepAliveSender). */
    private void send(AdminConnection a, KeepAliveSender s) {
        if (controller.state() != ControllerState.LIVE || a != controller.admin()) {
            return;
        }
        String failure = s.tick();
        if (failure != null && a == controller.admin()) {
            controller.startRecovery(failure);
        }
    }
}
