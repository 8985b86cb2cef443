package io.nvmeof4j.initiator;

import java.util.List;

/**
 * {@link CallbackAllocationIT} over a {@link MultipathNamespace} of two paths (two controllers on the target's
 * port) with the round-robin policy: path selection, the multipath request pool and the failover bookkeeping add
 * no allocation per I/O on the reactor thread or on the submitting thread.
 */
class MultipathAllocationIT extends CallbackAllocationIT {
    @Override
    BlockNamespace connectNamespace(NvmeofHost host, InJvmTarget target, ConnectOptions options) throws Exception {
        return host.connectMultipath(List.of(target.ioAddress(), target.ioAddress()), InJvmTarget.NQN_A, options,
            IoPolicy.ROUND_ROBIN).namespace(1);
    }
}
