/**
 * Data buffer pools behind {@link io.nvmeof4j.protocol.spi.BufferPool}: {@link
 * io.nvmeof4j.protocol.buffer.OffHeapBufferPool}, direct-memory slices in power-of-two classes, one per reactor, shared
 * by its NVMe/TCP and NVMe-oF/RDMA poll groups (RDMA registers the pool's region once).
 */
package io.nvmeof4j.protocol.buffer;
