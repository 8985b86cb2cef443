/**
 * NVMe/TCP transport binding (NVMe/TCP Transport Specification 1.0; wire reference 5), controller role.
 * <p>Entry point: {@link io.nvmeof4j.tcp.TcpControllerTransport}. One {@link io.nvmeof4j.tcp.TcpPollGroup} per
 * reactor owns a selector and its connections; each connection ({@code TcpConnection}) is one NVMe queue with
 * preallocated command slots ({@code TcpRequest}), framed and sent by the PDU engine both roles share
 * ({@link io.nvmeof4j.tcp.pdu}). Nothing on the per-command path allocates, locks or logs.
 */
package io.nvmeof4j.tcp;
