/**
 * NVMe over Fabrics on RDMA in the host (initiator) role: {@link io.nvmeof4j.rdma.host.RdmaHostTransport} (the
 * {@code HostTransport}: CM connect with the queue's private data, bounded and naming the failing step),
 * {@link io.nvmeof4j.rdma.host.RdmaHostPollGroup} (one per host reactor) and {@code RdmaHostQueue} (capsules by SEND,
 * in-capsule writes on I/O queues, keyed SGL 0x40 on long-lived registered memory: the application's buffers through
 * a registration cache, or registered bounce buffers).
 */
package io.nvmeof4j.rdma.host;
