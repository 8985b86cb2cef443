package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.auth.Dhchap;
import io.nvmeof4j.protocol.auth.GeneratedPsk;
import io.nvmeof4j.protocol.auth.HostAuthentication;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTlsPsk;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.rdma.host.RdmaHostTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * An admin queue brought up the way the Linux host brings it up (wire reference 2.5 steps 1-5): transport connect,
 * Connect on QID 0 with CNTLID 0xFFFF and KATO, Property Get CAP, Property Set CC with EN=0 (IOSQES 6, IOCQES 4,
 * CSS 0 or 6), CC with EN=1, CSTS polled until RDY within CAP.TO × 500 ms, VS, Identify Controller with the
 * transport checks (ICDOFF 0, SGLS bits 1:0, CNTLID as Connect said). Shared by connect and discover.
 */
final class AdminConnection {
    private static final Logger LOG = LoggerFactory.getLogger(AdminConnection.class);
    /** The Linux host's admin queue: 32 entries (NVME_AQ_DEPTH). */
    static final int ADMIN_QUEUE_SIZE = 32;
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    final HostQueue queue;
    final String peer;
    final int controllerId;
    final long capabilities;
    final int version;
    final ControllerInfo info;
    /**
     * With secure channel concatenation: the PSK a REPLACETLSPSK on this admin queue generated (when the controller
     * asked for authentication under TLS, as the Linux host answers it), which the I/O queues must use; else null.
     */
    final GeneratedPsk replacedPsk;
    /** Bound on each admin command after bring-up (bring-up itself uses the connect timeout). */
    private final Duration timeout;

    private AdminConnection(HostQueue queue, String peer, int controllerId, long capabilities, int version,
                            ControllerInfo info, GeneratedPsk replacedPsk, Duration timeout) {
        this.queue = queue;
        this.replacedPsk = replacedPsk;
        this.peer = peer;
        this.controllerId = controllerId;
        this.capabilities = capabilities;
        this.version = version;
        this.info = info;
        this.timeout = timeout;
    }

    /**
     * @param generatedTls with secure channel concatenation the TLS PSK that DH-HMAC-CHAP generated
     *                     ({@link #generateTlsPsk}), which replaces {@code options}' TLS settings; else null
     */
    static AdminConnection open(HostTransport transport, HostPollGroup group, TransportAddress address,
                                String subsystemNqn, HostIdentity identity, ConnectOptions options,
                                HostTlsPsk generatedTls, HostQueueListener listener) throws IOException {
        String peer = address + " (" + subsystemNqn + ")";
        Duration timeout = options.connectTimeout();
        HostQueueOptions admin = HostQueueOptions.admin(options.headerDigest(), options.dataDigest(), timeout);
        HostQueue queue = openTransport(transport, group, address, peer, generatedTls != null
            ? admin.withTls(generatedTls) : options.queueOptions(admin, identity, subsystemNqn), 0, 0xFFFF, listener);
        GeneratedPsk replaced = null;
        try {
            Cqe connect = fabricsConnect(queue, peer, "Connect (admin queue)", 0, ADMIN_QUEUE_SIZE,
                options.keepAliveTimeout().toMillis(), ConnectData.CNTLID_DYNAMIC, subsystemNqn, identity,
                options.disableSqFlowControl(), timeout);
            int cntlid = ConnectResponse.controllerId(connect.dw0());
            // Under a generated PSK nvmet asks for no authentication; should a controller ask, the Linux host
            // answers with REPLACETLSPSK (nvme_auth_set_dhchap_negotiate_data), and so do we.
            HostAuthentication.Result auth = authenticateIfRequired(queue, peer, 0, connect, options, subsystemNqn,
                identity, generatedTls != null ? Dhchap.SC_C_REPLACETLSPSK : Dhchap.SC_C_NOSC);
            replaced = auth == null ? null : auth.generatedPsk();
            long cap = propertyGet(queue, peer, ControllerRegisters.CAP, true, timeout);
            int css = (cap & ControllerRegisters.CAP_CSS_IO_COMMAND_SETS) != 0 ? 6 : ControllerRegisters.CC_CSS_NVM;
            int mps = ControllerRegisters.capMpsMin(cap);
            int cc = ControllerRegisters.cc(false, css, mps, 0, ControllerRegisters.CC_SHN_NONE,
                ControllerRegisters.NVM_IOSQES, ControllerRegisters.NVM_IOCQES);
            propertySet(queue, peer, "Property Set CC (EN=0)", ControllerRegisters.CC, cc, timeout);
            propertySet(queue, peer, "Property Set CC (EN=1)", ControllerRegisters.CC, cc | ControllerRegisters.CC_EN,
                timeout);
            waitReady(queue, peer, cap, timeout);
            int vs = (int) propertyGet(queue, peer, ControllerRegisters.VS, false, timeout);
            ControllerInfo info = identifyController(queue, peer, mps, timeout);
            if (address.type() == TransportType.RDMA
                && (info.sglSupport() & IdentifyController.SGLS_KEYED_DATA_BLOCK) == 0) {
                // nvme_rdma_setup_ctrl: "Mandatory keyed sgls are not supported!"
                throw new NvmeofException(peer, "Identify Controller", NvmeofException.NO_STATUS, String.format(
                    "SGLS 0x%08x lacks keyed SGL data blocks (bit 2), which NVMe-oF/RDMA needs", info.sglSupport()),
                    null);
            }
            if (info.controllerId() != cntlid) {
                throw new NvmeofException(peer, "Identify Controller", NvmeofException.NO_STATUS,
                    "CNTLID " + info.controllerId() + " differs from the " + cntlid + " Connect returned", null);
            }
            return new AdminConnection(queue, peer, cntlid, cap, vs, info, replaced, options.adminTimeout());
        } catch (IOException | RuntimeException e) {
            if (replaced != null) {
                replaced.clear();
            }
            queue.close("admin queue bring-up failed: " + e.getMessage());
            throw e;
        }
    }

    /**
     * Secure channel concatenation, first half (the Linux host's {@code nvme connect --concat}): an admin queue
     * without TLS, Connect, DH-HMAC-CHAP with SC_C NEWTLSPSK, then the connection is dropped (the controller goes
     * with it). The caller connects again with TLS under the returned PSK and clears it when done.
     */
    static GeneratedPsk generateTlsPsk(HostTransport transport, HostPollGroup group, TransportAddress address,
                                       String subsystemNqn, HostIdentity identity, ConnectOptions options)
        throws NvmeofException {
        String peer = address + " (" + subsystemNqn + ")";
        String step = "secure channel concatenation";
        if (address.type() != TransportType.TCP) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS,
                "secure channel concatenation generates a TLS PSK, which only NVMe/TCP uses", null);
        }
        if (options.dhchapSecret() == null || options.tls() != null) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, options.tls() != null
                ? "secure channel concatenation brings its own TLS PSK: not together with a configured one (--tls)"
                : "secure channel concatenation needs a DH-HMAC-CHAP host secret (--dhchap-secret)", null);
        }
        Duration timeout = options.connectTimeout();
        HostQueue queue = openTransport(transport, group, address, peer,
            HostQueueOptions.admin(options.headerDigest(), options.dataDigest(), timeout), 0, 0xFFFF,
            (q, reason) -> { });
        try {
            Cqe connect = fabricsConnect(queue, peer, "Connect (admin queue without TLS, " + step + ")", 0,
                ADMIN_QUEUE_SIZE, options.keepAliveTimeout().toMillis(), ConnectData.CNTLID_DYNAMIC, subsystemNqn,
                identity, options.disableSqFlowControl(), timeout);
            if (!ConnectResponse.authenticationRequired(connect.dw0())) {
                throw new NvmeofException(peer, step, NvmeofException.NO_STATUS, "the controller asks for no "
                    + "DH-HMAC-CHAP (no ATR in the Connect response; no key for this host?), and only an "
                    + "authentication transaction generates the TLS PSK", null);
            }
            HostAuthentication.Result auth = DhchapAuthenticator.authenticate(queue, peer, 0, options,
                identity.hostNqn().value(), subsystemNqn, timeout, Dhchap.SC_C_NEWTLSPSK);
            LOG.info("{}: DH-HMAC-CHAP ({}, {}) generated a TLS PSK; reconnecting with TLS under it", peer,
                auth.hash().linuxName(), auth.group().linuxName());
            return auth.generatedPsk();
        } finally {
            queue.close(step + ": the admin queue without TLS is done");
        }
    }

    /**
     * Opens the transport connection of queue {@code qid}. NVMe-oF/RDMA names the queue (QID, and CNTLID on I/O
     * queues) in the CM connect request already, so its transport gets both; NVMe/TCP needs neither.
     */
    static HostQueue openTransport(HostTransport transport, HostPollGroup group, TransportAddress address,
                                   String peer, HostQueueOptions options, int qid, int cntlid,
                                   HostQueueListener listener)
        throws NvmeofException {
        try {
            if (transport instanceof RdmaHostTransport) {
                return ((RdmaHostTransport) transport).connect(group, address, options, qid, cntlid, listener);
            }
            return transport.connect(group, address, options, listener);
        } catch (TransportConnectException e) {
            throw new NvmeofException(peer, e.step(), NvmeofException.NO_STATUS, e.detail(), e);
        } catch (IOException e) {
            throw new NvmeofException(peer, TransportConnectException.STEP_CONNECT, NvmeofException.NO_STATUS,
                e.getMessage(), e);
        }
    }

    /**
     * DH-HMAC-CHAP on queue {@code qid} when its Connect answered ATR (wire reference 2.5 step 2), before any other
     * command: the Linux host does the same on the admin queue and on every I/O queue.
     */
    static HostAuthentication.Result authenticateIfRequired(HostQueue queue, String peer, int qid, Cqe connect,
                                                            ConnectOptions options, String subsystemNqn,
                                                            HostIdentity identity, int secureChannel)
        throws NvmeofException {
        if (ConnectResponse.authenticationRequired(connect.dw0())) {
            return DhchapAuthenticator.authenticate(queue, peer, qid, options, identity.hostNqn().value(),
                subsystemNqn, options.connectTimeout(), secureChannel);
        }
        return null;
    }

    /** Fabrics Connect; any failure becomes an {@link NvmeofException} naming what the status means here. */
    static Cqe fabricsConnect(HostQueue queue, String peer, String step, int qid, int sqSize, long katoMillis,
                              int cntlid, String subsystemNqn, HostIdentity identity, boolean disableSqFlowControl,
                              Duration timeout) throws NvmeofException {
        ByteBuffer data = Commands.direct(ConnectData.LENGTH);
        new ConnectData().wrap(data, 0).clear().hostId(identity.hostId()).controllerId(cntlid)
            .subsystemNqn(subsystemNqn).hostNqn(identity.hostNqn().value());
        Cqe cqe = Commands.call(queue, peer, step, sqe -> new ConnectCommand().wrap(sqe)
                .init(0, SglDescriptor.ID_IN_CAPSULE).recordFormat(ConnectCommand.RECFMT_0).queueId(qid)
                .submissionQueueSize(sqSize - 1).keepAliveTimeoutMillis(qid == 0 ? katoMillis : 0)
                .connectAttributes(disableSqFlowControl ? ConnectCommand.CATTR_DISABLE_SQ_FLOW_CONTROL : 0),
            data, ConnectData.LENGTH, timeout);
        if (cqe.ok()) {
            return cqe;
        }
        throw new NvmeofException(peer, step, cqe.status(), connectFailure(cqe, subsystemNqn, identity), null);
    }

    private static String connectFailure(Cqe cqe, String subsystemNqn, HostIdentity identity) {
        switch (NvmeStatus.code(cqe.status())) {
            case NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS: {
                int ipo = ConnectResponse.invalidParameterOffset(cqe.dw0());
                if (ConnectResponse.isInvalidFieldInData(cqe.dw0())) {
                    switch (ipo) {
                        case ConnectData.SUBNQN_OFFSET:
                            return "the controller does not serve subsystem '" + subsystemNqn
                                + "' on this port (invalid parameter: SUBNQN, Connect data offset 256)";
                        case ConnectData.HOSTNQN_OFFSET:
                            return "host NQN '" + identity.hostNqn() + "' rejected (Connect data offset 512)";
                        case ConnectData.CNTLID_OFFSET:
                            return "controller id rejected (Connect data offset 16): the controller may have "
                                + "been reset";
                        default:
                            return "invalid parameter at offset " + ipo + " of the Connect data";
                    }
                }
                return "invalid parameter at offset " + ipo + " of the Connect command"
                    + (ipo == ConnectCommand.SQSIZE_OFFSET ? " (SQSIZE)" : ipo == ConnectCommand.QID_OFFSET
                    ? " (QID)" : "");
            }
            case NvmeStatus.FABRICS_CONNECT_INVALID_HOST:
                return "host '" + identity.hostNqn() + "' is not allowed to connect to '" + subsystemNqn + "'";
            case NvmeStatus.FABRICS_CONTROLLER_BUSY:
                return "controller busy";
            case NvmeStatus.FABRICS_INCOMPATIBLE_FORMAT:
                return "incompatible Connect record format";
            default:
                return null;
        }
    }

    static long propertyGet(HostQueue queue, String peer, int offset, boolean eightBytes, Duration timeout)
        throws NvmeofException {
        String step = "Property Get " + registerName(offset);
        Cqe cqe = Commands.callOk(queue, peer, step, sqe -> new PropertyCommand().wrap(sqe)
            .init(0, FabricsCommandType.PROPERTY_GET).attributes(eightBytes ? PropertyCommand.SIZE_8_BYTES
                : PropertyCommand.SIZE_4_BYTES).propertyOffset(offset), null, 0, timeout);
        return eightBytes ? cqe.result64() : cqe.dw0() & 0xFFFF_FFFFL;
    }

    static void propertySet(HostQueue queue, String peer, String step, int offset, int value, Duration timeout)
        throws NvmeofException {
        Commands.callOk(queue, peer, step, sqe -> new PropertyCommand().wrap(sqe)
            .init(0, FabricsCommandType.PROPERTY_SET).attributes(PropertyCommand.SIZE_4_BYTES)
            .propertyOffset(offset).value(value & 0xFFFF_FFFFL), null, 0, timeout);
    }

    private static String registerName(int offset) {
        switch (offset) {
            case ControllerRegisters.CAP: return "CAP";
            case ControllerRegisters.VS: return "VS";
            case ControllerRegisters.CC: return "CC";
            case ControllerRegisters.CSTS: return "CSTS";
            default: return String.format("0x%x", offset);
        }
    }

    private static void waitReady(HostQueue queue, String peer, long cap, Duration commandTimeout)
        throws NvmeofException {
        long limitMillis = Math.max(1, ControllerRegisters.capTimeout(cap)) * 500L;
        long deadline = System.nanoTime() + limitMillis * 1_000_000L;
        while (true) {
            int csts = (int) propertyGet(queue, peer, ControllerRegisters.CSTS, false, commandTimeout);
            if (ControllerRegisters.cstsFatal(csts)) {
                throw new NvmeofException(peer, "enable controller", NvmeofException.NO_STATUS,
                    "CSTS.CFS set: controller fatal status after CC.EN=1", null);
            }
            if (ControllerRegisters.cstsReady(csts)) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new NvmeofException(peer, "enable controller", NvmeofException.NO_STATUS,
                    "CSTS.RDY not set within CAP.TO = " + limitMillis + " ms", null);
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NvmeofException(peer, "enable controller", NvmeofException.NO_STATUS, "interrupted", e);
            }
        }
    }

    private static ControllerInfo identifyController(HostQueue queue, String peer, int mpsMin, Duration timeout)
        throws NvmeofException {
        String step = "Identify Controller";
        ByteBuffer data = Commands.direct(IdentifyCommand.DATA_LENGTH);
        Commands.callOk(queue, peer, step, sqe -> new IdentifyCommand().wrap(sqe)
            .init(0, 0, IdentifyCommand.CNS_CONTROLLER), data, IdentifyCommand.DATA_LENGTH, timeout);
        IdentifyController id = new IdentifyController().wrap(data, 0);
        if (id.inCapsuleDataOffset() != 0) {
            // The Linux host refuses ICDOFF != 0 (nvme_tcp_setup_ctrl / nvme_rdma_setup_ctrl).
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS,
                "ICDOFF " + id.inCapsuleDataOffset() + " is not supported (must be 0)", null);
        }
        if ((id.sglSupport() & 0x3) == 0) {
            throw new NvmeofException(peer, step, NvmeofException.NO_STATUS,
                String.format("SGLS 0x%08x: the controller supports no SGLs, which NVMe over Fabrics needs",
                    id.sglSupport()), null);
        }
        int mdts = id.maximumDataTransferSize();
        long maxTransfer = mdts == 0 ? 0 : (4096L << mpsMin) << mdts;
        int ioccsz = id.ioCommandCapsuleSize();
        return new ControllerInfo(id.vendorId(), id.serialNumber().trim(), id.modelNumber().trim(),
            id.firmwareRevision().trim(), id.controllerId(), id.version(), id.controllerType(), maxTransfer,
            id.maxOutstandingCommands(), id.numberOfNamespaces(), id.optionalNvmCommands(),
            (id.volatileWriteCache() & IdentifyController.VWC_PRESENT) != 0, id.keepAliveSupport(), id.sglSupport(),
            id.optionalAsyncEvents(), ioccsz, Math.max(0, ioccsz * 16 - 64), id.subsystemNqn(),
            id.logPageAttributes(), id.controllerAttributes(), id.multiPathCapabilities());
    }

    /** Get Log Page of {@code length} bytes at byte {@code offset} into {@code data} (which it clears). */
    Cqe getLogPage(String step, int lid, int nsid, ByteBuffer data, int length, long offset, boolean retainEvent)
        throws NvmeofException {
        return Commands.callOk(queue, peer, step, sqe -> new GetLogPageCommand().wrap(sqe)
            .init(0, nsid, lid, length, offset).retainAsyncEvent(retainEvent), data, length, timeout);
    }

    Cqe identify(String step, int cns, int nsid, ByteBuffer data) throws NvmeofException {
        return Commands.callOk(queue, peer, step, sqe -> new IdentifyCommand().wrap(sqe).init(0, nsid, cns),
            data, IdentifyCommand.DATA_LENGTH, timeout);
    }

    Cqe identifyAnyStatus(String step, int cns, int nsid, ByteBuffer data) throws NvmeofException {
        return Commands.call(queue, peer, step, sqe -> new IdentifyCommand().wrap(sqe).init(0, nsid, cns),
            data, IdentifyCommand.DATA_LENGTH, timeout);
    }

    Cqe setFeatures(String step, int fid, int cdw11) throws NvmeofException {
        return Commands.callOk(queue, peer, step, sqe -> sqe.opcode(AdminOpcode.SET_FEATURES)
            .cdw(10, fid).cdw(11, cdw11), null, 0, timeout);
    }

    /**
     * The Linux host's orderly teardown of the admin side: CC.SHN = 01b, CSTS polled until SHST = 10b (at most 5 s),
     * then the connection closes. Best effort: a controller already gone just gets its connection closed.
     */
    void shutdownAndClose(String reason) {
        try {
            if (queue.isOpen()) {
                long cap = capabilities;
                int css = (cap & ControllerRegisters.CAP_CSS_IO_COMMAND_SETS) != 0 ? 6 : 0;
                int cc = ControllerRegisters.cc(true, css, ControllerRegisters.capMpsMin(cap), 0,
                    ControllerRegisters.CC_SHN_NORMAL, ControllerRegisters.NVM_IOSQES, ControllerRegisters.NVM_IOCQES);
                Duration step = timeout.compareTo(SHUTDOWN_TIMEOUT) < 0 ? timeout : SHUTDOWN_TIMEOUT;
                propertySet(queue, peer, "Property Set CC (SHN=01b)", ControllerRegisters.CC, cc, step);
                long deadline = System.nanoTime() + SHUTDOWN_TIMEOUT.toNanos();
                while (System.nanoTime() - deadline < 0) {
                    int csts = (int) propertyGet(queue, peer, ControllerRegisters.CSTS, false, step);
                    if (ControllerRegisters.cstsShutdownStatus(csts) == ControllerRegisters.SHST_COMPLETE) {
                        break;
                    }
                    Thread.sleep(5);
                }
            }
        } catch (NvmeofException e) {
            LOG.debug("{}: shutdown notification failed: {}", peer, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            queue.close(reason);
        }
    }
}
