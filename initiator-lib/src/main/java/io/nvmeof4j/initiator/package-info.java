/**
 * The NVMe-over-Fabrics initiator library: discover subsystems, connect to controllers, identify them, and do block
 * I/O on their namespaces from Java, over NVMe/TCP (the host side of {@code io.nvmeof4j.protocol.spi.host}).
 *
 * <h2>Main types</h2>
 * {@link io.nvmeof4j.initiator.NvmeofHost} (identity, threads; {@code discover}, {@code connect}),
 * {@link io.nvmeof4j.initiator.HostIdentity} (host NQN + host id, generated once and persisted),
 * {@link io.nvmeof4j.initiator.NvmeofController} (queues, keep-alive, async events, reconnect),
 * {@link io.nvmeof4j.initiator.NvmeofNamespace} (block I/O: read, write with FUA, flush, write zeroes, deallocate,
 * compare; as futures or allocation-free callbacks),
 * {@link io.nvmeof4j.initiator.MultipathController} and {@link io.nvmeof4j.initiator.MultipathNamespace} (one subsystem
 * over several paths: ANA-aware {@link io.nvmeof4j.initiator.IoPolicy}, failover, per-path
 * {@link io.nvmeof4j.initiator.PathStats}).
 *
 * <h2>Threading model</h2>
 * <ul>
 *   <li><b>Reactors.</b> A host runs a few data-path threads ("host reactors", {@code nvmeof-host-reactor-N}); each
 *       I/O queue of each controller belongs to exactly one of them, which does all of that queue's socket work,
 *       parsing, completion and callback dispatch, without locks. A controller's I/O queues are spread round-robin
 *       over the reactors. An idle reactor spins for 50 µs, then sleeps in its selector.</li>
 *   <li><b>Submission from any thread.</b> Every {@code NvmeofNamespace} method is thread-safe. The calling
 *       thread picks a queue: a reactor thread uses a queue it owns and submits directly (no hand-off, so submitting
 *       the next I/O from a callback is the cheapest path); any other thread is mapped by its thread id to one queue,
 *       takes a preallocated request from that queue's pool and passes it through a lock-free MPSC ring to the
 *       queue's reactor (Agrona array queues: nothing is allocated, a sleeping reactor is woken only when needed).
 *       I/O from one thread therefore stays in order of submission into one queue; I/O from different threads is
 *       not ordered.</li>
 *   <li><b>Callbacks</b> ({@link io.nvmeof4j.initiator.IoCallback}, and the futures' completion stages) run on the
 *       queue's reactor thread. They must not block or do long work: that stalls every queue of the reactor. Hand
 *       blocking work to an executor ({@code thenApplyAsync}, or your own).</li>
 *   <li><b>Control threads.</b> Connect, discover, identify and close block the calling thread (each step bounded by
 *       the connect timeout). Keep-alive timing, asynchronous-event handling, namespace listeners and reconnects run
 *       on the host's own control threads ({@code nvmeof-host-timer}, {@code nvmeof-host-control-N}).</li>
 *   <li><b>Buffers.</b> The callback API uses the caller's buffers directly (direct buffers avoid a JDK copy): data
 *       lands in or leaves from them with no intermediate copy when large. While an I/O is in flight its buffer range
 *       and the buffer's position/limit belong to the library; they are restored before the callback runs.</li>
 * </ul>
 *
 * <h2>Failures</h2>
 * Set-up failures throw {@link io.nvmeof4j.initiator.NvmeofException} naming the peer, the step and the NVMe status.
 * On the data path, failures are status codes given to the callback (the future API turns them into
 * {@link io.nvmeof4j.initiator.NvmeofIoException}). A command without completion within the command timeout fails
 * with HOST_ABORTED_COMMAND and resets the connection; a lost connection requeues I/O in flight and reconnects with
 * back-off; after the controller-loss timeout waiting I/O fails with a message naming the controller and the last
 * error.
 */
package io.nvmeof4j.initiator;
