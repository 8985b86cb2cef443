/**
 * The NVMe/TCP PDU engine both roles use (NVMe/TCP Transport Specification 1.0, 3.6 and 7.4; wire reference 5), in
 * the spirit of SPDK's {@code nvme_tcp.h}: {@link io.nvmeof4j.tcp.pdu.PduReceiver} frames received bytes (common
 * header, header digest, payload at PDO into the role's buffer, data digest, partial reads across reactor rounds,
 * TermReq framing) and {@link io.nvmeof4j.tcp.pdu.PduSendQueue} writes queued {@link io.nvmeof4j.tcp.pdu.PduSendJob}s
 * with one gathering write per round, resuming partial writes. Both work over a
 * {@link io.nvmeof4j.tcp.tls.TcpStream}, so TLS records are the stream's business. What a PDU means stays with the
 * role: {@code TcpConnection} (controller) and {@code TcpHostQueue} (host) check the headers they accept and
 * arm the PDUs they send. Reactor thread only; nothing here allocates per PDU.
 */
package io.nvmeof4j.tcp.pdu;
