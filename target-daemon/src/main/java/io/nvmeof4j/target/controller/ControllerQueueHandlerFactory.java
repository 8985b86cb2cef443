package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.PendingConnections;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.io.NvmCommandExecutor;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.TargetModel;

import java.util.Objects;

/**
 * The controller side of the target for one port: gives every queue a transport accepts its
 * {@link ControllerQueueHandler}, whose {@link ControllerQueueHandler#onCommand} is the command entry, and holds what
 * the port's queues share: the {@link FabricsCommands} (Connect and the other fabrics commands), the NVM executor,
 * the controller registry and the metrics.
 */
public final class ControllerQueueHandlerFactory implements QueueHandlerFactory {
    private final NvmCommandExecutor nvm;
    private final ControllerRegistry registry;
    private final TargetMetrics metrics;
    private final FabricsCommands fabrics;

    public ControllerQueueHandlerFactory(TargetModel model, Port port, NvmCommandExecutor nvm, ControllerRegistry registry) {
        this(model, port, nvm, registry, null);
    }

    /** @param metrics where commands are metered, or null for no metrics */
    public ControllerQueueHandlerFactory(TargetModel model, Port port, NvmCommandExecutor nvm, ControllerRegistry registry,
                                         TargetMetrics metrics) {
        this.nvm = Objects.requireNonNull(nvm, "nvm");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.metrics = metrics;
        this.fabrics = new FabricsCommands(Objects.requireNonNull(model, "model"), Objects.requireNonNull(port, "port"),
            registry, metrics);
    }

    @Override
    public QueueHandler open(TransportQueue queue) {
        return new ControllerQueueHandler(fabrics, registry, queue, nvm, metrics);
    }

    @Override
    public void onConnectionRefused(TransportType transport, String peer, PendingConnections.Refusal reason) {
        if (metrics != null) {
            metrics.connectionRefused(transport, reason);
        }
    }
}
