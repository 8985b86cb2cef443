package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

/**
 * One Discovery log page entry as a value (NVMe-oF 1.1, 5.3; wire reference 2.8).
 *
 * @param transportType          TRTYPE code (3 TCP, 1 RDMA)
 * @param addressFamily          ADRFAM code (1 IPv4, 2 IPv6)
 * @param subsystemType          SUBTYPE: 1 referral, 2 NVM subsystem, 3 current discovery subsystem
 * @param transportRequirements  TREQ (bit 2: SQ flow control may be disabled)
 * @param portId                 PORTID
 * @param controllerId           CNTLID (0xFFFF: dynamic)
 * @param adminMaxSqSize         ASQSZ
 * @param transportServiceId     TRSVCID (the port)
 * @param subsystemNqn           SUBNQN
 * @param transportAddress       TRADDR
 */
public record DiscoveryEntry(int transportType, int addressFamily, int subsystemType, int transportRequirements,
                             int portId, int controllerId, int adminMaxSqSize, String transportServiceId,
                             String subsystemNqn, String transportAddress, int tcpSecurityType) {
    /** TSAS SECTYPE of an NVMe/TCP entry: the port speaks TLS 1.3 (TREQ bits 1:0 say whether it must). */
    public static final int TCP_SECTYPE_TLS13 = 2;

    public static final int SUBTYPE_REFERRAL = 1;
    public static final int SUBTYPE_NVM = 2;
    public static final int SUBTYPE_CURRENT_DISCOVERY = 3;
    public static final int TREQ_DISABLE_SQ_FLOW_CONTROL = 1 << 2;

    /** Where to connect, for {@link NvmeofHost#connect}. */
    public TransportAddress address() {
        TransportType type = TransportType.TCP;
        for (TransportType t : TransportType.values()) {
            if (t.code() == transportType) {
                type = t;
            }
        }
        AddressFamily family = addressFamily == AddressFamily.IPV6.code() ? AddressFamily.IPV6 : AddressFamily.IPV4;
        return new TransportAddress(type, family, transportAddress, transportServiceId);
    }

    /** Whether the port offers NVMe/TCP TLS 1.3 (libnvme then connects with --tls). */
    public boolean tls() {
        return transportType == TransportType.TCP.code() && tcpSecurityType == TCP_SECTYPE_TLS13;
    }

    /** Whether the port lets the host disable SQ flow control (libnvme then connects with it disabled). */
    public boolean supportsSqFlowControlDisable() {
        return (transportRequirements & TREQ_DISABLE_SQ_FLOW_CONTROL) != 0;
    }
}
