package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.UUID;

/**
 * A small target for controller tests: subsystem {@link #SUBNQN} (allow any host) with namespaces 1 (512 B blocks)
 * and 2 (4 KiB blocks), subsystem {@link #RESTRICTED_NQN} allowing only {@link #OTHER_HOST_NQN}, both exported on
 * port 1 (TCP 10.0.0.1:4420); port 2 (TCP 10.0.0.2:4421) exports {@link #SECOND_PORT_NQN}.
 */
public final class TestTarget implements AutoCloseable {
    public static final String SUBNQN = "nqn.2024-01.io.nvmeof4j:test";
    public static final String RESTRICTED_NQN = "nqn.2024-01.io.nvmeof4j:restricted";
    public static final String SECOND_PORT_NQN = "nqn.2024-01.io.nvmeof4j:second-port";
    public static final String UNEXPORTED_NQN = "nqn.2024-01.io.nvmeof4j:unexported";
    public static final String OTHER_HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    public static final UUID NS1_UUID = UUID.fromString("6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
    public static final byte[] NS1_NGUID = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    public static final TransportAddress PORT1_ADDRESS = TransportAddress.tcp("10.0.0.1", 4420);
    public static final TransportAddress PORT2_ADDRESS = TransportAddress.tcp("10.0.0.2", 4421);

    public final TargetModel model = new TargetModel();
    public final Subsystem subsystem = new Subsystem(SUBNQN, "SN0123456789", "nvmeof4j test model", "1.2.3", true);
    public final Subsystem restricted = new Subsystem(RESTRICTED_NQN, "SN-R", "restricted", "1.0", false);
    public final Subsystem secondPort = new Subsystem(SECOND_PORT_NQN, "SN-2", "second", "1.0", true);
    public final Subsystem unexported = new Subsystem(UNEXPORTED_NQN, "SN-U", "unexported", "1.0", true);
    public final RamDevice ns1Device = new RamDevice(512, 2048, true);
    public final RamDevice ns2Device = new RamDevice(4096, 256, false);
    public final Port port1;
    public final Port port2;
    public final RecordingNvmExecutor nvm = new RecordingNvmExecutor();
    public final ControllerRegistry registry;
    public final ControllerQueueHandlerFactory factory;

    public TestTarget() {
        this(PortOptions.defaults(), ControllerRegistry.MAX_IO_QUEUES_DEFAULT);
    }

    public TestTarget(PortOptions options, int maxIoQueues) {
        subsystem.addNamespace(new Namespace(1, ns1Device, NS1_UUID, NS1_NGUID));
        subsystem.addNamespace(new Namespace(2, ns2Device, UUID.fromString("00000000-0000-4000-8000-000000000002"),
            new byte[16]));
        restricted.addAllowedHost(OTHER_HOST_NQN);
        model.addSubsystem(subsystem);
        model.addSubsystem(restricted);
        model.addSubsystem(secondPort);
        model.addSubsystem(unexported);
        port1 = new Port(1, PORT1_ADDRESS, options, new LinkedHashSet<>(List.of(SUBNQN, RESTRICTED_NQN)));
        port2 = new Port(2, PORT2_ADDRESS, options, new LinkedHashSet<>(List.of(SECOND_PORT_NQN)));
        model.addPort(port1);
        model.addPort(port2);
        registry = new ControllerRegistry(maxIoQueues);
        factory = new ControllerQueueHandlerFactory(model, port1, nvm, registry);
    }

    public TestHost host() {
        return new TestHost(factory, PORT1_ADDRESS);
    }

    @Override
    public void close() {
        registry.shutdown(java.time.Duration.ofMillis(200));
    }
}
