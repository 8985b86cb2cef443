package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.log.RateLimitedLog;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;
import io.nvmeof4j.target.metrics.TargetMetrics;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.target.model.Subsystem;
import io.nvmeof4j.target.model.TargetModel;
import io.nvmeof4j.tcp.tls.HostPskStore;
import io.nvmeof4j.tcp.tls.PskIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteOrder;
import java.security.SecureRandom;

/**
 * The Fabrics command set of one port (NVMe-oF 1.1, 3; wire reference 2.1–2.4), as nvmet's fabrics-cmd.c: Connect,
 * Property Get/Set, Authentication Send/Receive and Disconnect. {@link ControllerQueueHandler#onCommand}, the one
 * command entry, sends every fabrics command here after its common checks.
 * <ul>
 *   <li>Connect, the only command a queue without a controller takes: turns the queue into an admin queue (creating
 *       a {@link Controller}) or an I/O queue of an existing controller. On a connected queue: Invalid Opcode.</li>
 *   <li>Property Get/Set (the controller registers CAP, VS, CC, CSTS; wire reference 2.3): admin queue only, else
 *       Invalid Opcode (nvmet_parse_fabrics_io_cmd). Get: 8 bytes for CAP only, 4 bytes for VS, CC, CSTS; Set: CC
 *       only, 4 bytes (nvmet refuses NSSR too); anything else Invalid Field + DNR.</li>
 *   <li>Authentication Send/Receive: on a queue that authenticates ({@link QueueAuthentication}); elsewhere
 *       Invalid Opcode, as nvmet without a host key.</li>
 *   <li>Disconnect: not offered (OFCS bit 0 clear; the Linux host never sends it): Invalid Opcode.</li>
 * </ul>
 * <p>Connect checks, in this order, with the status the host sees (all with DNR):
 * <ul>
 *   <li>anything but Connect on a new queue: Command Sequence Error (nvmet answers Invalid Opcode);</li>
 *   <li>RECFMT ≠ 0: Incompatible Format (0x180); the SGL not exactly 1024 bytes: SGL Data Length Invalid;</li>
 *   <li>admin queue: CNTLID ≠ 0xFFFF → Connect Invalid Parameters (0x182) naming the data field at 16;
 *       an NQN field without NUL → 0x182 at 256 or 512; SUBNQN unknown or not exported by this port (the
 *       discovery NQN is served everywhere) → 0x182 at 256; HOSTNQN not allowed (an allow list holds valid NQNs
 *       only; {@code allow_any_host} and discovery serve any NQN, the empty one too, but none with control
 *       characters) → Connect Invalid Host (0x184) at 512; SQSIZE 0 or above the admin queue limit → 0x182 at
 *       SQE offset 44; target shutting down → Controller Busy (0x181, retryable); no free CNTLID → 0x181 +
 *       DNR;</li>
 *   <li>I/O queue: the same NQN checks; a discovery NQN has no I/O queues → 0x182 at SQE offset 42; no live
 *       controller with that CNTLID, subsystem and host NQN → 0x182 at data offset 16 (a host id differing from
 *       the admin queue's is logged, not refused, as nvmet and SPDK); QID above qid_max → 0x182 at SQE offset
 *       42; controller not enabled → Command Sequence Error (as SPDK); SQSIZE 0 or above MQES → 0x182 at 44;
 *       QID already connected → Command Sequence Error.</li>
 *   <li>both, once every check passed: the transport sets the queue up for its size
 *       ({@link TransportQueue#install}); memory it cannot have (NVMe/TCP: the queue buffer budget is spent, or the
 *       allocation failed) → Controller Busy (0x181) without DNR, so the Linux host logs "controller is busy or not
 *       available" and a reconnect tries again after reconnect_delay; counted in
 *       {@code nvmeof_target_connections_refused_total{reason="queue_buffer_budget"|"direct_memory"}}.</li>
 * </ul>
 * A queue under TLS must name the PSK identity's host (Connect Invalid Host at 512). Under a PSK that DH-HMAC-CHAP
 * generated (secure channel concatenation, {@code NVMe1G..}) also its subsystem (0x182 at 256); its admin Connect
 * binds the PSK to the new controller, and refuses (0x184 at 512) a PSK that another live controller holds; an I/O
 * Connect under it must join that controller (0x184 at 512).
 * Success: the transport learns QID, queue size and CATTR bit 2 through {@link TransportQueue#connected}, and DW0
 * carries the CNTLID, plus ATR (bit 17) when the host must authenticate with DH-HMAC-CHAP on this queue (never
 * under a generated PSK: that PSK is the proof, as on nvmet).
 */
final class FabricsCommands {
    private static final Logger LOG = LoggerFactory.getLogger(FabricsCommands.class);
    /** Refused Connects: what one host can make us repeat (a wrong NQN in a reconnect loop), per address. */
    private static final RateLimitedLog REJECTIONS = new RateLimitedLog(LOG);

    /**
     * Largest admin queue accepted, in entries, when the port allows less. Fabrics bounds the admin queue by the
     * discovery entry's ASQSZ (32), not by MQES; the Linux host always asks for 32.
     */
    static final int ADMIN_QUEUE_ENTRIES_MIN_LIMIT = 32;

    private final TargetModel model;
    private final Port port;
    private final ControllerRegistry registry;
    /** Null when metrics are off. */
    private final TargetMetrics metrics;
    /** Challenges and DH exponents of DH-HMAC-CHAP. */
    private final SecureRandom random = new SecureRandom();

    FabricsCommands(TargetModel model, Port port, ControllerRegistry registry, TargetMetrics metrics) {
        this.model = model;
        this.port = port;
        this.registry = registry;
        this.metrics = metrics;
    }

    /** The port as the model holds it now (the daemon replaces it by its bound form once listening). */
    Port currentPort() {
        for (Port p : model.ports()) {
            if (p.portId() == port.portId()) {
                return p;
            }
        }
        return port;
    }

    /**
     * A fabrics command on a connected queue (its reactor thread), past the entry's checks. {@code request} is the
     * one to complete (metered on the admin queue).
     */
    void execute(ControllerQueueHandler handler, Controller controller, Request request) {
        SubmissionQueueEntry sqe = request.command();
        int fctype = sqe.fabricsCommandType();
        switch (fctype) {
            case FabricsCommandType.PROPERTY_GET:
            case FabricsCommandType.PROPERTY_SET:
                if (handler.queueId() == 0) {
                    property(handler, controller, request, fctype);
                    return;
                }
                break;
            case FabricsCommandType.AUTHENTICATION_SEND:
            case FabricsCommandType.AUTHENTICATION_RECEIVE:
                QueueAuthentication auth = handler.authentication();
                if (auth != null) {
                    auth.execute(controller, request);
                    return;
                }
                break;
            default:
                // Connect on a connected queue, Disconnect (not offered), reserved types.
                break;
        }
        // nvmet: Invalid Opcode for a fabrics command the queue does not take.
        fail(handler, request, NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR, FabricsCommandType.name(fctype)
            + (handler.queueId() == 0 ? " on the admin queue" : " on an I/O queue"));
    }

    /** Property Get/Set on the admin queue; the data path takes none. */
    private void property(ControllerQueueHandler handler, Controller controller, Request r, int fctype) {
        SubmissionQueueEntry sqe = r.command();
        if (r.dataLength() != 0) {
            fail(handler, r, NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR, "SGL of " + r.dataLength()
                + " bytes where 0 are transferred");
            return;
        }
        PropertyCommand property = handler.propertyCommand.wrap(sqe);
        int offset = property.propertyOffset();
        if (fctype == FabricsCommandType.PROPERTY_GET) {
            if ((property.attributes() & 1) != 0) {
                if (offset != ControllerRegisters.CAP) {
                    fail(handler, r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "8-byte Property Get of offset "
                        + offset);
                    return;
                }
                r.response().result64(controller.capabilities());
            } else {
                long value = controller.readRegister4(offset);
                if (value < 0) {
                    fail(handler, r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "4-byte Property Get of offset "
                        + offset);
                    return;
                }
                r.response().result64(value);
            }
            r.complete(NvmeStatus.SUCCESS);
            return;
        }
        // Only CC is writable, and it is 4 bytes (nvmet: Invalid Field for anything else, NSSR included).
        if ((property.attributes() & 1) != 0 || offset != ControllerRegisters.CC) {
            fail(handler, r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Property Set of offset " + offset);
            return;
        }
        controller.writeControllerConfiguration((int) property.value());
        r.complete(NvmeStatus.SUCCESS);
    }

    /**
     * Fails a fabrics command on a connected queue: on an I/O queue counted as the entry's early failures are; on the
     * admin queue {@code r} is the slot's metering (when on), which records it.
     */
    private static void fail(ControllerQueueHandler handler, Request r, int status, String why) {
        if (handler.queueId() != 0) {
            handler.fail(r, r.command(), status, why);
            return;
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("{}: {} cid {} failed with {}: {}", handler, FabricsCommandType.name(r.command().fabricsCommandType()),
                r.command().commandId(), NvmeStatus.describe(status), why);
        }
        r.complete(status);
    }

    /** A command on a queue without a controller: Connect, or Command Sequence Error (its reactor thread). */
    void connect(ControllerQueueHandler handler, Request request) {
        SubmissionQueueEntry sqe = request.command();
        TransportQueue queue = handler.queue();
        if (!sqe.isFabrics() || sqe.fabricsCommandType() != FabricsCommandType.CONNECT) {
            reject(handler, request, "command before Connect ("
                    + (sqe.isFabrics() ? FabricsCommandType.name(sqe.fabricsCommandType()) : String.format("opcode 0x%02x", sqe.opcode()))
                    + ")", NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR, -1, null);
            return;
        }
        ConnectCommand cmd = handler.connectCommand.wrap(sqe);
        if (cmd.recordFormat() != ConnectCommand.RECFMT_0) {
            reject(handler, request, "RECFMT " + cmd.recordFormat(),
                NvmeStatus.FABRICS_INCOMPATIBLE_FORMAT | NvmeStatus.DNR, -1, null);
            return;
        }
        if (request.dataLength() != ConnectData.LENGTH || request.data() == null) {
            reject(handler, request, "Connect data of " + request.dataLength() + " bytes",
                NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR, -1, null);
            return;
        }
        if (request.data().order() != ByteOrder.LITTLE_ENDIAN) {
            request.data().order(ByteOrder.LITTLE_ENDIAN);
        }
        ConnectData data = handler.connectData.wrap(request.data(), 0);
        int unterminated = data.firstUnterminatedField();
        if (unterminated >= 0) {
            reject(handler, request, (unterminated == ConnectData.SUBNQN_OFFSET ? "SUBNQN" : "HOSTNQN")
                    + " without a terminating NUL", NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(unterminated), null);
            return;
        }
        String securedHost = queue.secureChannelHostNqn();
        if (securedHost != null && !securedHost.equals(data.hostNqn())) {
            reject(handler, request, "Connect names host " + data.hostNqn() + " but the TLS PSK identity is of "
                    + securedHost, NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.HOSTNQN_OFFSET), null);
            return;
        }
        String generated = generatedPskIdentity(queue);
        if (generated != null) {
            String pskSubsystem = PskIdentity.parse(generated).subsystemNqn();
            if (!pskSubsystem.equals(data.subsystemNqn())) {
                reject(handler, request, "Connect names subsystem " + data.subsystemNqn() + " but the generated TLS PSK"
                        + " is for " + pskSubsystem, NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                    ConnectResponse.invalidDataField(ConnectData.SUBNQN_OFFSET), null);
                return;
            }
        }
        if (cmd.queueId() == 0) {
            adminConnect(handler, request, cmd, data, queue, generated);
        } else {
            ioConnect(handler, request, cmd, data, queue, generated);
        }
    }

    /** The queue's PSK identity when DH-HMAC-CHAP generated its PSK ({@code NVMe1G..}), else null. */
    private static String generatedPskIdentity(TransportQueue queue) {
        String identity = queue.secureChannelPskIdentity();
        return identity != null && PskIdentity.parse(identity).generated() ? identity : null;
    }

    private void adminConnect(ControllerQueueHandler handler, Request request, ConnectCommand cmd, ConnectData data,
                              TransportQueue queue, String generatedPsk) {
        String subnqn = data.subsystemNqn();
        String hostnqn = data.hostNqn();
        String who = "subsystem " + subnqn + ", host " + hostnqn;
        if (data.controllerId() != ConnectData.CNTLID_DYNAMIC) {
            reject(handler, request, "admin Connect with CNTLID " + String.format("0x%04x", data.controllerId())
                    + " (dynamic controller model needs 0xFFFF), " + who,
                NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET), null);
            return;
        }
        Port current = currentPort();
        boolean discovery = Port.DISCOVERY_NQN.equals(subnqn);
        Subsystem subsystem = null;
        if (!discovery) {
            subsystem = model.subsystem(subnqn);
            if (subsystem == null || !current.exports(subnqn)) {
                reject(handler, request, (subsystem == null ? "unknown " : "not exported on port " + current.portId() + ": ")
                        + who, NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                    ConnectResponse.invalidDataField(ConnectData.SUBNQN_OFFSET), null);
                return;
            }
        }
        String refusal = hostRefusal(subsystem, hostnqn);
        if (refusal != null) {
            reject(handler, request, refusal + ": " + who, NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.HOSTNQN_OFFSET), null);
            return;
        }
        int sqsize = cmd.submissionQueueSize();
        int adminLimit = Math.max(ADMIN_QUEUE_ENTRIES_MIN_LIMIT, current.options().maxQueueSize());
        if (sqsize == 0 || sqsize + 1 > adminLimit) {
            reject(handler, request, "admin SQSIZE " + sqsize + " (0-based; limit " + (adminLimit - 1) + "), " + who,
                NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidCommandField(ConnectCommand.SQSIZE_OFFSET), null);
            return;
        }
        if (!registry.isAcceptingConnects()) {
            reject(handler, request, "target shutting down, " + who, NvmeStatus.FABRICS_CONTROLLER_BUSY, -1, null);
            return;
        }
        if (!install(handler, request, queue, 0, sqsize + 1, who, null)) {
            return;
        }
        HostId hostId = data.hostId();
        long kato = cmd.keepAliveTimeoutMillis();
        Subsystem s = subsystem;
        Controller controller = registry.register(s == null ? ControllerRegistry.CNTLID_MIN : s.cntlidMin(),
            s == null ? ControllerRegistry.CNTLID_MAX : s.cntlidMax(), cntlid -> new Controller(registry, cntlid, s,
                subnqn, hostnqn, hostId, current, queue.transportType(), queue.localAddress(), queue.peer(), kato, model));
        if (controller == null) {
            reject(handler, request, "no free controller id, " + who,
                NvmeStatus.FABRICS_CONTROLLER_BUSY | NvmeStatus.DNR, -1, null);
            return;
        }
        if (generatedPsk != null) {
            HostPskStore psks = registry.tlsKeys();
            if (psks == null || !psks.bindGenerated(generatedPsk, controller)) {
                // One association per generated PSK: a second admin queue under it would share the first's key.
                controller.destroy("generated TLS PSK refused", false);
                reject(handler, request, "the generated TLS PSK " + generatedPsk + " is gone or serves another "
                        + "controller, " + who, NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR,
                    ConnectResponse.invalidDataField(ConnectData.HOSTNQN_OFFSET), null);
                return;
            }
        }
        controller.attachAdminQueue(handler);
        handler.connected(controller, 0, sqsize + 1);
        queue.connected(0, sqsize + 1, cmd.sqFlowControlDisabled());
        controller.startKeepAlive();
        LOG.info("controller {} created: {} {} for host {} (hostid {}) from {} on port {}, KATO {} ms", controller.cntlid(),
            discovery ? "discovery" : "subsystem", subnqn, hostnqn, hostId, queue.peer(), current.portId(),
            controller.keepAliveTimeoutMillis());
        if (handler.isClosed()) {
            // The connection dropped while we were creating the controller: onClosed has already run.
            controller.destroy("admin queue closed during Connect", false);
        }
        int dw0 = ConnectResponse.success(controller.cntlid());
        if (QueueAuthentication.require(handler, registry.hostKeys(), controller, random, generatedPsk)) {
            dw0 |= ConnectResponse.ATR;
        }
        request.response().dw0(dw0);
        request.complete(NvmeStatus.SUCCESS);
    }

    private void ioConnect(ControllerQueueHandler handler, Request request, ConnectCommand cmd, ConnectData data,
                           TransportQueue queue, String generatedPsk) {
        int qid = cmd.queueId();
        String subnqn = data.subsystemNqn();
        String hostnqn = data.hostNqn();
        int cntlid = data.controllerId();
        String who = "I/O queue " + qid + " of controller " + cntlid + ", subsystem " + subnqn + ", host " + hostnqn;
        if (Port.DISCOVERY_NQN.equals(subnqn)) {
            reject(handler, request, "discovery controllers have no I/O queues: " + who,
                NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidCommandField(ConnectCommand.QID_OFFSET), null);
            return;
        }
        Subsystem subsystem = model.subsystem(subnqn);
        if (subsystem == null || !currentPort().exports(subnqn)) {
            reject(handler, request, "unknown or unexported subsystem: " + who,
                NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.SUBNQN_OFFSET), null);
            return;
        }
        Controller controller = registry.find(subnqn, cntlid);
        if (controller == null || !controller.hostNqn().equals(hostnqn)) {
            reject(handler, request, "no such controller for this host: " + who,
                NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET), null);
            return;
        }
        HostPskStore psks = registry.tlsKeys();
        if (generatedPsk != null && (psks == null || psks.generatedOwner(generatedPsk) != controller)) {
            reject(handler, request, "the generated TLS PSK " + generatedPsk + " belongs to another association: "
                    + who, NvmeStatus.FABRICS_CONNECT_INVALID_HOST | NvmeStatus.DNR,
                ConnectResponse.invalidDataField(ConnectData.HOSTNQN_OFFSET), null);
            return;
        }
        HostId hostId = data.hostId();
        if (!controller.hostId().equals(hostId)) {
            // nvmet (nvmet_ctrl_find_get) and SPDK (_nvmf_ctrlr_add_io_qpair) match an I/O Connect by subsystem,
            // host NQN and CNTLID only; some hosts send a fresh or zero HOSTID per queue. Worth a line, not a refusal.
            LOG.info("I/O Connect with host id {} where the admin queue gave {} (accepted, as nvmet and SPDK do): {}",
                hostId, controller.hostId(), who);
        }
        int[] sqeField = {-1};
        int status = controller.connectIoQueue(handler, qid, cmd.submissionQueueSize(), sqeField);
        if (status != NvmeStatus.SUCCESS) {
            int dw0 = sqeField[0] >= 0 ? ConnectResponse.invalidCommandField(sqeField[0])
                : NvmeStatus.code(status) == NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS
                    ? ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET) : -1;
            String why = sqeField[0] == ConnectCommand.QID_OFFSET ? "QID beyond the " + controller.maxIoQueues()
                    + " I/O queues a controller may have (qid_max)"
                : sqeField[0] == ConnectCommand.SQSIZE_OFFSET ? "SQSIZE " + cmd.submissionQueueSize() + " (0-based)"
                : NvmeStatus.code(status) == NvmeStatus.COMMAND_SEQUENCE_ERROR
                    ? (controller.isReady() ? "QID already connected" : "controller not enabled") : "controller gone";
            reject(handler, request, why + ": " + who, status, dw0, controller);
            return;
        }
        if (!install(handler, request, queue, qid, cmd.submissionQueueSize() + 1, who, controller)) {
            controller.releaseIoQueue(handler, qid);
            return;
        }
        handler.connected(controller, qid, cmd.submissionQueueSize() + 1);
        queue.connected(qid, cmd.submissionQueueSize() + 1, cmd.sqFlowControlDisabled());
        LOG.debug("controller {}: I/O queue {} (SQSIZE {}) connected from {}", controller.cntlid(), qid,
            cmd.submissionQueueSize() + 1, queue.peer());
        if (handler.isClosed()) {
            controller.queueClosed(handler, "closed during Connect");
        }
        int dw0 = ConnectResponse.success(controller.cntlid());
        if (QueueAuthentication.require(handler, registry.hostKeys(), controller, random, generatedPsk)) {
            dw0 |= ConnectResponse.ATR;
        }
        request.response().dw0(dw0);
        request.complete(NvmeStatus.SUCCESS);
    }

    /**
     * Why {@code hostnqn} may not open a controller of {@code subsystem} (null for discovery), or null when it may.
     * An allow list names valid NQNs only, so anything else is refused there; with {@code allow_any_host} every
     * host NQN is served, the empty one included (SPDK's initiator sends it), as nvmet (nvmet_host_allowed) and SPDK
     * (spdk_nvmf_subsystem_host_allowed) do. Control characters stay refused: the NQN goes into logs and the
     * management API verbatim, and no host needs them.
     */
    static String hostRefusal(Subsystem subsystem, String hostnqn) {
        for (int i = 0; i < hostnqn.length(); i++) {
            char c = hostnqn.charAt(i);
            if (c < 0x20 || c == 0x7F) {
                return "host NQN with control character 0x" + Integer.toHexString(c);
            }
        }
        if (subsystem == null || subsystem.isHostAllowed(hostnqn)) {
            if (!Nqn.isValid(hostnqn)) {
                LOG.info("serving a host with the malformed host NQN '{}': the subsystem allows any host", hostnqn);
            }
            return null;
        }
        return Nqn.isValid(hostnqn) ? "host not allowed" : "malformed host NQN";
    }

    /**
     * The transport sets the queue up for {@code sqSize} entries (its memory: after every other check, so a Connect
     * that is wrong anyway is told so, with DNR, rather than to try again). False when it could not: the Connect is
     * refused with the transport's status and the refusal counted.
     */
    private boolean install(ControllerQueueHandler handler, Request request, TransportQueue queue, int qid, int sqSize,
                            String who, Controller controller) {
        try {
            queue.install(qid, sqSize);
            return true;
        } catch (ConnectRefusedException e) {
            if (metrics != null) {
                metrics.connectionRefused(queue.transportType(), e.reason());
            }
            reject(handler, request, e.getMessage() + "; " + who, e.status(), -1, controller);
            return false;
        }
    }

    private static void reject(ControllerQueueHandler handler, Request request, String why, int status, int dw0,
                               Controller controller) {
        SubmissionQueueEntry sqe = request.command();
        boolean connect = sqe.isFabrics() && sqe.fabricsCommandType() == FabricsCommandType.CONNECT;
        String peer = handler.queue().peer();
        REJECTIONS.warnFrom(RateLimitedLog.hostOf(peer), "{} from {} rejected with {}: {}",
            connect ? "Connect" : "command on an unconnected queue", peer, NvmeStatus.describe(status), why);
        if (dw0 != -1) {
            request.response().dw0(dw0);
        } else if (controller != null) {
            request.response().dw0(controller.cntlid());
        }
        request.complete(status);
    }
}
