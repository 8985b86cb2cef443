package io.nvmeof4j.protocol.spi.reactor;

import io.nvmeof4j.protocol.spi.PollGroup;

import java.nio.channels.Selector;

/**
 * A poll group whose {@link #await(long)} blocks in a {@link Selector} (NVMe/TCP): the reactor's one wait
 * primitive. Other completion sources of the same reactor (an io_uring) join it, so that the reactor blocks on this
 * selector alone and is still woken by them (docs/datapath.md, "One wait primitive per reactor").
 */
public interface SelectorPollGroup extends PollGroup {
    /** The selector {@link #await(long)} blocks in. Not to be selected on by anyone but the reactor. */
    Selector selector();
}
