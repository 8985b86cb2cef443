package io.nvmeof4j.protocol.spi.idle;

import java.util.Locale;

/**
 * Which {@link IdleStrategy} a reactor uses: the target's (configuration {@code idle_strategy}) and the initiator's
 * (system property {@code nvmeof4j.host.idle_strategy}) alike.
 */
public enum IdleMode {
    /** {@link BusySpinIdleStrategy}: lowest latency, one full core per reactor even when idle. */
    BUSY(BusySpinIdleStrategy.ALIAS),
    /**
     * {@link AdaptiveIdleStrategy}: spin {@code idle_spin_us} after the last work, yield, then block in the poll
     * group with a bounded backoff; block at once while the reactor's CPU is measured as shared.
     */
    ADAPTIVE(AdaptiveIdleStrategy.ALIAS);

    private final String configName;

    IdleMode(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    /**
     * A strategy for the calling reactor thread: call it on that thread (the adaptive strategy measures the
     * contention of the thread that creates it).
     */
    public IdleStrategy newStrategy(String reactorName, IdleWait wait, long spinNanos, long maxParkNanos) {
        return this == BUSY ? new BusySpinIdleStrategy()
            : AdaptiveIdleStrategy.forCurrentThread(reactorName, wait, spinNanos, maxParkNanos);
    }

    public static IdleMode fromConfigName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (IdleMode s : values()) {
            if (s.configName.equals(lower)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown idle strategy '" + name + "' (expected busy or adaptive)");
    }
}
