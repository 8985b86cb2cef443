package io.nvmeof4j.target.reactor;

import java.util.Locale;

/** What a {@link Reactor} does when a round of polling found no work (configuration {@code idle_strategy}). */
public enum IdleStrategy {
    /**
     * Spin forever ({@link Thread#onSpinWait()}): lowest latency, one full core per reactor even when idle.
     */
    BUSY("busy"),
    /**
     * Spin for a bounded time after the last work (default 50 µs), then block in the poll group until woken.
     * Waking a sleeping thread costs ~70 µs on the reference machine (docs/performance.md), so spinning first
     * keeps queue-depth-1 latency low while an idle daemon uses no CPU. A reactor that measures its CPU as shared
     * (its thread runnable without running for more than 10 % of the time) blocks without spinning until the
     * contention goes: see {@link Reactor}, "A shared CPU".
     */
    ADAPTIVE("adaptive");

    private final String configName;

    IdleStrategy(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    public static IdleStrategy fromConfigName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (IdleStrategy s : values()) {
            if (s.configName.equals(lower)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown idle strategy '" + name + "' (expected busy or adaptive)");
    }
}
