package io.nvmeof4j.rdma.host;

import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.rdma.MemoryKeys;

/**
 * The long-lived registered memory a host poll group's queues move data through, on one device: the
 * {@link RegistrationCache} of application buffers (zero copy), and a pool of registered bounce buffers for data the
 * cache cannot take (heap buffers; every entry busy). Poll-group thread only.
 *
 * @param cache      registrations of application buffers
 * @param bounce     bounce buffers, built over one region registered once
 * @param bounceKeys the registration of {@code bounce.region()}
 */
record HostMemory(RegistrationCache cache, OffHeapBufferPool bounce, MemoryKeys bounceKeys) {
}
