/**
 * NVMe/TCP in the host (initiator) role (NVMe/TCP Transport Specification 1.0; wire reference 5), implementing
 * {@link io.nvmeof4j.protocol.spi.host.HostTransport}: a blocking, time-bounded connect (TCP_NODELAY, ICReq with
 * HPDA 0 and MAXR2T 0, ICResp checked as the Linux host checks it), then a non-blocking socket served by a
 * Selector-driven {@link io.nvmeof4j.tcp.host.TcpHostPollGroup}: CapsuleCmd with in-capsule data (SGL 0x01) or a
 * transport SGL (0x5A), R2T answered with H2CData PDUs of at most MAXH2CDATA, C2HData reassembled straight into the
 * caller's buffer (SUCCESS flag honoured), header and data digests, C2HTermReq and protocol errors failing the queue.
 * Preallocated per-CID slots and gathering writes: nothing allocates per command.
 */
package io.nvmeof4j.tcp.host;
