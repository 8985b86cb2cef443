/**
 * The transport SPI in the host (initiator) role: what the initiator library needs from NVMe/TCP or NVMe-oF/RDMA,
 * and nothing it does not.
 * <ul>
 *   <li>{@link io.nvmeof4j.protocol.spi.host.HostTransport}: creates host poll groups and opens queues (a blocking,
 *       time-bounded connect: TCP connect + ICReq/ICResp, or RDMA CM connect). The Fabrics Connect command is the
 *       caller's business: the transport moves capsules, it does not know NVMe commands.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.host.HostPollGroup}: the transport's share of one host reactor thread;
 *       every queue belongs to exactly one group and is touched only on that group's thread.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.host.HostQueue}: one NVMe queue pair. {@code submit} takes a prepared SQE
 *       and an optional data range; the transport owns the CID, the SGL and the data movement (in-capsule, R2T,
 *       C2H, RDMA), and calls the command's {@link io.nvmeof4j.protocol.spi.host.HostCommandCallback} with the CQE
 *       on the group thread. Command slots are preallocated per CID: nothing allocates per command.</li>
 *   <li>{@link io.nvmeof4j.protocol.spi.host.AbstractHostQueue} with its
 *       {@link io.nvmeof4j.protocol.spi.host.HostCommandSlots}: what every binding's host queue shares (command
 *       slots, CID generation, the submit checks, CID lookup, completion, the close sequence that fails every
 *       outstanding command). A binding subclasses it with its own {@link io.nvmeof4j.protocol.spi.host.HostCommandSlot}
 *       type and keeps only its wire work (NVMe/TCP PDUs, R2T, H2C/C2H, digests; RDMA capsules, keyed SGLs, WRs).</li>
 * </ul>
 * Errors on the data path are status codes ({@link io.nvmeof4j.protocol.spi.host.HostStatus}); a queue that fails
 * completes every outstanding command with {@link io.nvmeof4j.protocol.spi.host.HostStatus#HOST_PATH_ERROR} and
 * then tells its {@link io.nvmeof4j.protocol.spi.host.HostQueueListener} why.
 */
package io.nvmeof4j.protocol.spi.host;
