/**
 * The machinery every controller-role transport binding shares (SPDK's {@code lib/nvmf/transport.c} part): what
 * NVMe/TCP and NVMe-oF/RDMA do alike is written once here, and each binding keeps only its wire work (PDUs,
 * R2T/H2C/C2H and digests; RDMA READ/WRITE, SEND_WITH_INV and the CM).
 * <ul>
 *   <li>{@link io.nvmeof4j.protocol.spi.transport.DataMapping}: the SGL rules that decide how a command's data moves
 *       (none, in the capsule, pulled from the host, pushed to it) and the NVMe status for every descriptor a
 *       binding refuses.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.transport.BufferWaitQueue}: commands that found the reactor's buffer pool
 *       dry wait in arrival order and are resumed in that order as buffers come back.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.transport.CompletionInbox}: completions made on other threads (backend
 *       workers, timers) handed to the reactor with one CAS each, finished there in the order they happened.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.transport.PollGroupCore}: the part of a poll group every binding and role
 *       has: the reactor thread it is bound to, control tasks from other threads, the sleeping flag the wake-up
 *       protocol reads; {@link io.nvmeof4j.protocol.spi.transport.FlushList}: queues with sends staged this round.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.transport.AbstractTransportListener}: what a listening port does alike:
 *       refusals counted and logged, its thread stopped within a bound; {@link
 *       io.nvmeof4j.protocol.spi.transport.AbstractTransportQueue}: a queue's outstanding count and its disconnect
 *       from any thread.</li>
 * </ul>
 * A command's states are the binding's own: one enum per transport ({@code TcpRequest.State},
 * {@code RdmaRequest.State}), moved by the binding's queue class; these classes only hold requests between states.
 * Everything here runs on the reactor thread except where a method says otherwise, and allocates nothing per command.
 */
package io.nvmeof4j.protocol.spi.transport;
