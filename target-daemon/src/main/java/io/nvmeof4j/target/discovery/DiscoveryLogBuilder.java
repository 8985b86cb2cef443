package io.nvmeof4j.target.discovery;

import io.nvmeof4j.protocol.admin.AsciiFields;
import io.nvmeof4j.protocol.discovery.DiscoveryLogEntry;
import io.nvmeof4j.protocol.discovery.DiscoveryLogPage;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Referral;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the Discovery log page (log 70h; NVMe-oF 1.1, 5.3; wire reference 2.8 and 2.10) a discovery
 * controller returns to one host, from the {@link TargetModel} as it is at the moment of the read.
 * <p>Content, in order:
 * <ol>
 *   <li>one entry of SUBTYPE 3 (current discovery subsystem) for the port the host asked through, SUBNQN the
 *       discovery NQN, as current Linux targets report it (nvme-cli's connect-all skips it);</li>
 *   <li>one SUBTYPE 2 (NVM subsystem) entry per (port, subsystem) where the port exports the subsystem and the
 *       subsystem allows this host NQN, the asking port's first, then the other ports in configuration order.
 *       Listing every port (the Linux target lists only the asking one) lets a port that exports nothing but
 *       discovery (the usual TCP 8009 listener) point hosts at the I/O ports, and lets connect-all find every
 *       path of a multipath subsystem.</li>
 *   <li>one entry per enabled referral of the asking port ({@link TargetModel#referrals(int)}), for every host, as
 *       nvmet formats them: SUBTYPE 1 (referral to another discovery service) with SUBNQN the discovery NQN, or
 *       SUBTYPE 2 when the referral names an NVM subsystem (SPDK's {@code subnqn}); PORTID, TRTYPE, ADRFAM,
 *       TRADDR, TRSVCID and TREQ bits 1:0 from the referral.</li>
 * </ol>
 * Entry fields follow the Linux target: CNTLID 0xFFFF (dynamic model), ASQSZ 32, TREQ "not specified" + SQ flow
 * control disable supported (bit 2, so libnvme asks for CATTR bit 2), TRSVCID/TRADDR NUL padded, TSAS SECTYPE 0 on
 * TCP and QPTYPE connected / PRTYPE not specified / CMS RDMA-CM on RDMA. A port listening on a wildcard address
 * is reported with the local address of the host's connection instead, never as 0.0.0.0.
 * GENCTR is {@link TargetModel#discoveryGeneration()}.
 * <p>Not thread-safe (the flyweights); one builder per discovery controller, used on its admin queue's thread.
 */
public final class DiscoveryLogBuilder {
    /** ASQSZ: the admin queue depth a host may use (the Linux host's NVME_AQ_DEPTH, nvmet's value). */
    public static final int ADMIN_QUEUE_SIZE = 32;
    public static final int TREQ = DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_SPECIFIED
        | DiscoveryLogEntry.TREQ_DISABLE_SQ_FLOW_CONTROL;
    /** What we know of a referred-to service: nothing about its flow control, so only bits 1:0 (the referral's). */
    static final int TREQ_REFERRAL = DiscoveryLogEntry.TREQ_SECURE_CHANNEL_NOT_SPECIFIED;
    // Bits 1:0 come from the port (addr.treq); TSAS SECTYPE from addr.tsas: libnvme connects with TLS when it reads 2.

    private final TargetModel model;
    private final DiscoveryLogPage header = new DiscoveryLogPage();
    private final DiscoveryLogEntry entry = new DiscoveryLogEntry();

    public DiscoveryLogBuilder(TargetModel model) {
        this.model = model;
    }

    /**
     * Builds the log for {@code hostNqn} asking through {@code askingPort}.
     *
     * @param localTraddr the local address of the host's connection (replaces a wildcard listen address), or null
     * @param reuse       a little-endian buffer to build into when large enough, or null
     * @return the log: position 0, limit its length (1024 × (1 + NUMREC)), little-endian
     */
    public ByteBuffer build(Port askingPort, String hostNqn, String localTraddr, ByteBuffer reuse) {
        List<Port> ports = new ArrayList<>();
        ports.add(askingPort);
        for (Port p : model.ports()) {
            if (p.portId() != askingPort.portId()) {
                ports.add(p);
            }
        }
        List<Port> entryPorts = new ArrayList<>();
        List<String> entryNqns = new ArrayList<>();
        for (Port p : ports) {
            for (String nqn : p.subsystems()) {
                if (Port.DISCOVERY_NQN.equals(nqn)) {
                    continue;
                }
                Subsystem subsystem = model.subsystem(nqn);
                if (subsystem != null && subsystem.isHostAllowed(hostNqn)) {
                    entryPorts.add(p);
                    entryNqns.add(nqn);
                }
            }
        }
        long generation = model.discoveryGeneration();
        List<Referral> referrals = model.referrals(askingPort.portId());
        int records = 1 + entryNqns.size() + referrals.size();
        int length = (int) DiscoveryLogPage.length(records);
        ByteBuffer out = reuse != null && reuse.capacity() >= length && reuse.order() == ByteOrder.LITTLE_ENDIAN
            ? reuse : ByteBuffer.allocate(Math.max(length, 4096)).order(ByteOrder.LITTLE_ENDIAN);
        out.clear();
        AsciiFields.zero(out, 0, length);
        header.wrap(out, 0).generationCounter(generation).numberOfRecords(records).recordFormat(0);
        writeEntry(out, 0, askingPort, Port.DISCOVERY_NQN, DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY, localTraddr);
        for (int i = 0; i < entryNqns.size(); i++) {
            writeEntry(out, i + 1, entryPorts.get(i), entryNqns.get(i), DiscoveryLogEntry.SUBTYPE_NVM, localTraddr);
        }
        for (int i = 0; i < referrals.size(); i++) {
            writeReferral(out, 1 + entryNqns.size() + i, referrals.get(i));
        }
        out.limit(length);
        return out;
    }

    private void writeEntry(ByteBuffer out, int index, Port port, String nqn, int subtype, String localTraddr) {
        TransportAddress address = port.address();
        DiscoveryLogEntry e = entry.wrap(out, DiscoveryLogPage.entryOffset(index));
        e.transportType(address.type().code())
            .addressFamily(address.family().code())
            .subsystemType(subtype)
            .transportRequirements(TREQ | port.options().secureChannel())
            .portId(port.portId())
            .controllerId(DiscoveryLogEntry.CNTLID_DYNAMIC)
            .adminMaxSqSize(ADMIN_QUEUE_SIZE)
            .entryFlags(0)
            .transportServiceId(address.trsvcid())
            .subsystemNqn(nqn)
            .transportAddress(reportedAddress(address.traddr(), localTraddr));
        if (address.type() == TransportType.RDMA) {
            e.rdmaAttributes(DiscoveryLogEntry.RDMA_QPTYPE_CONNECTED, DiscoveryLogEntry.RDMA_PRTYPE_NOT_SPECIFIED,
                DiscoveryLogEntry.RDMA_CMS_RDMA_CM);
        } else if (address.type() == TransportType.TCP) {
            e.tcpSecurityType(port.options().tcpSecurityType());
        }
    }

    private void writeReferral(ByteBuffer out, int index, Referral r) {
        TransportAddress address = r.address();
        DiscoveryLogEntry e = entry.wrap(out, DiscoveryLogPage.entryOffset(index));
        e.transportType(address.type().code())
            .addressFamily(address.family().code())
            .subsystemType(Port.DISCOVERY_NQN.equals(r.subnqn()) ? DiscoveryLogEntry.SUBTYPE_DISCOVERY_REFERRAL
                : DiscoveryLogEntry.SUBTYPE_NVM)
            .transportRequirements(TREQ_REFERRAL | r.treq())
            .portId(r.portId())
            .controllerId(DiscoveryLogEntry.CNTLID_DYNAMIC)
            .adminMaxSqSize(ADMIN_QUEUE_SIZE)
            .entryFlags(0)
            .transportServiceId(address.trsvcid())
            .subsystemNqn(r.subnqn())
            .transportAddress(address.traddr());
        if (address.type() == TransportType.RDMA) {
            e.rdmaAttributes(DiscoveryLogEntry.RDMA_QPTYPE_CONNECTED, DiscoveryLogEntry.RDMA_PRTYPE_NOT_SPECIFIED,
                DiscoveryLogEntry.RDMA_CMS_RDMA_CM);
        } else if (address.type() == TransportType.TCP) {
            e.tcpSecurityType(0);
        }
    }

    /** A wildcard listen address is useless to a host: report the address it reached us on. */
    static String reportedAddress(String traddr, String localTraddr) {
        if (isWildcard(traddr) && localTraddr != null && !isWildcard(localTraddr)) {
            return localTraddr;
        }
        return traddr;
    }

    static boolean isWildcard(String traddr) {
        return traddr.isEmpty() || "0.0.0.0".equals(traddr) || "::".equals(traddr) || "[::]".equals(traddr)
            || "0:0:0:0:0:0:0:0".equals(traddr);
    }
}
