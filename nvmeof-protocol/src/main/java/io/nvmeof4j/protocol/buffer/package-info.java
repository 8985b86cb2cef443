/**
 * Data buffer pools behind {@link io.nvmeof4j.protocol.spi.BufferPool}: {@link
 * io.nvmeof4j.protocol.buffer.OffHeapBufferPool}, direct-memory slices in power-of-two classes, for transports that
 * move data through {@link java.nio.ByteBuffer}s (NVMe/TCP).
 */
package io.nvmeof4j.protocol.buffer;
