package io.nvmeof4j.protocol.spi.idle;

/**
 * Never blocks ({@link Thread#onSpinWait()} after an empty round): lowest latency, one full CPU per reactor even
 * when idle. For dedicated cores (docs/datapath.md, pinning).
 */
public final class BusySpinIdleStrategy implements IdleStrategy {
    public static final String ALIAS = "busy";

    @Override
    public void idle(int workCount) {
        if (workCount == 0) {
            Thread.onSpinWait();
        }
    }

    @Override
    public void reset() {
    }

    @Override
    public String alias() {
        return ALIAS;
    }
}
