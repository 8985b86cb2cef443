package io.nvmeof4j.rdma.host;

import io.nvmeof4j.rdma.MemoryKeys;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Registers memory with one protection domain (ibv_reg_mr with local write, remote read and remote write: the
 * controller RDMA READs write data from it and RDMA WRITEs read data into it). The seam between the host queues'
 * registration cache and the JNI layer; unit tests use a fake.
 */
public interface MemoryRegistrar {
    /** Registers the whole of the direct buffer {@code buffer} (index 0 to its capacity). */
    MemoryKeys register(ByteBuffer buffer) throws IOException;

    /** Deregisters what {@link #register} returned. */
    void deregister(MemoryKeys keys);
}
