package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsciiFields;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.GetFeaturesCommand;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.admin.SetFeaturesCommand;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What the two admin command sets share: the NVM I/O controller's ({@link AdminCommands}, wire reference 2.5–2.9)
 * and the discovery controller's ({@link DiscoveryCommands}, 2.10). A controller has one of them, chosen when it is
 * created, and the command entry ({@link ControllerQueueHandler#onCommand}) hands it every non-fabrics command of
 * the admin queue once the controller is enabled (CC.EN = 1, CSTS.RDY = 1). Shared here: the Identify Controller
 * fields both report, Get Log Page's transfer checks and offset handling, Set/Get Features' common frame and the two
 * features both serve (Keep Alive Timer, Asynchronous Event Configuration), Asynchronous Event Request and Keep
 * Alive. Runs on the admin queue's reactor thread, one command at a time; the flyweights and the log scratch buffer
 * are used by that thread only. Statuses follow the Linux target (nvmet) wherever the host can tell the
 * difference.
 */
abstract class AdminCommandSet {
    private static final Logger LOG = LoggerFactory.getLogger(AdminCommandSet.class);

    /** Keep-alive granularity in 100 ms units: the timer here works in milliseconds, so 100 ms is honest. */
    static final int KAS = 1;

    final Controller controller;
    private final GetLogPageCommand getLogPage = new GetLogPageCommand();
    private final SetFeaturesCommand setFeatures = new SetFeaturesCommand();
    private final GetFeaturesCommand getFeatures = new GetFeaturesCommand();
    private final IdentifyController identifyController = new IdentifyController();
    /** A log page is built here, then bytes [LPO, LPO + length) of it are sent. */
    ByteBuffer scratch = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);

    AdminCommandSet(Controller controller) {
        this.controller = controller;
    }

    /**
     * Runs one admin command of this set and completes it. Called by the command entry after its checks (flags,
     * Connect done, authentication, controller enabled). The opcodes every controller serves are dispatched here;
     * the others go to {@link #executeOwn}.
     */
    final void execute(Request r) {
        switch (r.command().opcode()) {
            case AdminOpcode.IDENTIFY:
                identify(r);
                return;
            case AdminOpcode.GET_LOG_PAGE:
                getLogPage(r);
                return;
            case AdminOpcode.SET_FEATURES:
                setFeatures(r);
                return;
            case AdminOpcode.GET_FEATURES:
                getFeatures(r);
                return;
            case AdminOpcode.ASYNC_EVENT_REQUEST:
                asyncEventRequest(r);
                return;
            case AdminOpcode.KEEP_ALIVE:
                keepAlive(r);
                return;
            default:
                executeOwn(r);
        }
    }

    /** Identify, with the CNS values this set serves. */
    abstract void identify(Request r);

    /** An opcode beyond the common ones: this set's own, or Invalid Opcode + DNR. */
    abstract void executeOwn(Request r);

    // ---------------------------------------------------------------- identify controller

    /**
     * Fills the Identify Controller fields every controller reports, with the given identity, and returns the
     * flyweight for the set's own fields; the caller completes the request.
     */
    final IdentifyController identifyControllerCommon(Request r, String serialNumber, String modelNumber,
                                                      String firmwareRevision, int controllerType) {
        PortOptions options = controller.port().options();
        return identifyController.wrap(r.data(), 0).clear()
            .serialNumber(ascii(serialNumber, IdentifyController.SN_LENGTH))
            .modelNumber(ascii(modelNumber, IdentifyController.MN_LENGTH))
            .firmwareRevision(ascii(firmwareRevision, IdentifyController.FR_LENGTH))
            .controllerId(controller.cntlid())
            .version(Controller.VERSION)
            .optionalAsyncEvents(controller.optionalAsyncEvents())
            .controllerType(controllerType)
            .asyncEventRequestLimit(Controller.ASYNC_EVENT_REQUEST_LIMIT - 1)
            .keepAliveSupport(KAS)
            .maxOutstandingCommands(Math.min(options.maxQueueSize(), 0xFFFF)) // MAXCMD is 16 bits
            .sglSupport(sglSupport(controller.transportType(), options.inlineDataSize()))
            .subsystemNqn(controller.subsystemNqn());
    }

    /** SGLS: byte-aligned SGLs always; keyed SGLs on RDMA; the in-capsule offset form when the port takes in-capsule data. */
    static int sglSupport(TransportType type, int inlineDataSize) {
        int sgls = IdentifyController.SGLS_SUPPORTED_BYTE_ALIGNED;
        if (type == TransportType.RDMA) {
            sgls |= IdentifyController.SGLS_KEYED_DATA_BLOCK;
        }
        if (inlineDataSize > 0) {
            sgls |= IdentifyController.SGLS_OFFSET_SUPPORTED;
        }
        return sgls;
    }

    // ---------------------------------------------------------------- get log page

    /** Get Log Page: the transfer and offset checks, then {@link #logPage} of the set. */
    final void getLogPage(Request r) {
        GetLogPageCommand cmd = getLogPage.wrap(r.command());
        long length = cmd.lengthBytes();
        if (length != r.dataLength() || r.data() == null) {
            fail(r, NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR, "Get Log Page of " + length
                + " bytes with an SGL of " + r.dataLength());
            return;
        }
        int valid = cmd.validate();
        if (valid != NvmeStatus.SUCCESS) {
            fail(r, valid, "Get Log Page offset " + cmd.logPageOffset() + " not dword aligned");
            return;
        }
        logPage(r, cmd, cmd.logPageId());
    }

    /** One log page of this set; an unsupported LID is Invalid Field + DNR (nvmet, NVMe 2.0), not Invalid Log Page. */
    abstract void logPage(Request r, GetLogPageCommand cmd, int lid);

    /**
     * Sends bytes [LPO, LPO + length) of the page held in {@link #scratch} (positions 0..pageLength), zero-filling
     * past its end; an LPO beyond the page is Invalid Field (NVMe Base 2.0, 5.16).
     */
    final boolean sendLog(Request r, GetLogPageCommand cmd, int pageLength) {
        long lpo = cmd.logPageOffset();
        if (Long.compareUnsigned(lpo, pageLength) > 0) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "log page offset " + Long.toUnsignedString(lpo)
                + " beyond the " + pageLength + "-byte log " + cmd.logPageId());
            return false;
        }
        ByteBuffer data = r.data();
        int length = r.dataLength();
        int copy = (int) Math.min(length, pageLength - lpo);
        data.put(0, scratch, (int) lpo, copy);
        AsciiFields.zero(data, copy, length - copy);
        r.complete(NvmeStatus.SUCCESS);
        return true;
    }

    /** The scratch buffer, cleared, at least {@code length} bytes. */
    final ByteBuffer scratch(int length) {
        if (scratch.capacity() < length) {
            scratch = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        }
        scratch.clear();
        return scratch;
    }

    // ---------------------------------------------------------------- features

    /**
     * Set Features: {@link #setFeatureRefusal} of the set, SV (nothing is saveable), no data, then the value; Keep
     * Alive Timer and Asynchronous Event Configuration here, the rest in {@link #setFeature}.
     */
    final void setFeatures(Request r) {
        SetFeaturesCommand cmd = setFeatures.wrap(r.command());
        int fid = cmd.featureId();
        int refusal = setFeatureRefusal(fid);
        if (refusal != NvmeStatus.SUCCESS) {
            fail(r, refusal, "Set Features " + FeatureIdentifier.name(fid));
            return;
        }
        if (cmd.save()) {
            // Nothing survives a reset here, so no feature is saveable (nvmet ignores SV; the spec wants this).
            fail(r, NvmeStatus.FEATURE_NOT_SAVEABLE | NvmeStatus.DNR, "Set Features " + FeatureIdentifier.name(fid) + " with SV");
            return;
        }
        if (!expectLength(r, 0)) {
            return;
        }
        int value = cmd.value();
        switch (fid) {
            case FeatureIdentifier.ASYNC_EVENT_CONFIGURATION:
                if ((value & ~controller.asyncEventConfigMask()) != 0) {
                    fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Async Event Configuration 0x"
                        + Integer.toHexString(value));
                    return;
                }
                controller.asyncEventConfig(value);
                r.response().dw0(value);
                break;
            case FeatureIdentifier.KEEP_ALIVE_TIMER:
                controller.keepAliveTimeoutMillis(value & 0xFFFF_FFFFL);
                break;
            default:
                if (!setFeature(r, fid, value)) {
                    return;
                }
        }
        r.complete(NvmeStatus.SUCCESS);
    }

    /** SUCCESS when this set takes Set Features of {@code fid}, else the status that refuses it. */
    int setFeatureRefusal(int fid) {
        return fid == FeatureIdentifier.KEEP_ALIVE_TIMER || fid == FeatureIdentifier.ASYNC_EVENT_CONFIGURATION
            ? NvmeStatus.SUCCESS : NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
    }

    /** A feature of this set beyond the shared two; false when it failed {@code r} (already completed). */
    boolean setFeature(Request r, int fid, int value) {
        throw new AssertionError(fid);
    }

    /**
     * Get Features: {@link #getFeatureSupported} of the set, the transfer (Host Identifier only), SEL, then the value;
     * Keep Alive Timer and Asynchronous Event Configuration here, the rest in {@link #getFeature}.
     */
    final void getFeatures(Request r) {
        GetFeaturesCommand cmd = getFeatures.wrap(r.command());
        int fid = cmd.featureId();
        int sel = cmd.select();
        if (!getFeatureSupported(fid)) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Get Features " + FeatureIdentifier.name(fid));
            return;
        }
        boolean hostId = fid == FeatureIdentifier.HOST_IDENTIFIER && sel != GetFeaturesCommand.SEL_SUPPORTED_CAPABILITIES;
        if (!expectLength(r, hostId ? FeatureIdentifier.HOST_IDENTIFIER_LENGTH : 0)) {
            return;
        }
        if (sel > GetFeaturesCommand.SEL_SUPPORTED_CAPABILITIES) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Get Features SEL " + sel);
            return;
        }
        if (sel == GetFeaturesCommand.SEL_SUPPORTED_CAPABILITIES) {
            boolean changeable = fid != FeatureIdentifier.VOLATILE_WRITE_CACHE && fid != FeatureIdentifier.HOST_IDENTIFIER;
            r.response().dw0(changeable ? GetFeaturesCommand.CAPABILITY_CHANGEABLE : 0);
            r.complete(NvmeStatus.SUCCESS);
            return;
        }
        // Nothing is saveable, so "saved" reports the default (NVMe Base 2.0, 5.15).
        boolean current = sel == GetFeaturesCommand.SEL_CURRENT;
        switch (fid) {
            case FeatureIdentifier.ASYNC_EVENT_CONFIGURATION:
                r.response().dw0(current ? controller.asyncEventConfig() : controller.defaultAsyncEventConfig());
                break;
            case FeatureIdentifier.KEEP_ALIVE_TIMER:
                r.response().dw0(current ? (int) controller.keepAliveTimeoutMillis() : 0);
                break;
            default:
                if (!getFeature(r, cmd, fid, current)) {
                    return;
                }
        }
        r.complete(NvmeStatus.SUCCESS);
    }

    /** True when this set answers Get Features of {@code fid}. */
    boolean getFeatureSupported(int fid) {
        return fid == FeatureIdentifier.KEEP_ALIVE_TIMER || fid == FeatureIdentifier.ASYNC_EVENT_CONFIGURATION;
    }

    /** A feature of this set beyond the shared two, current or default; false when it failed {@code r}. */
    boolean getFeature(Request r, GetFeaturesCommand cmd, int fid, boolean current) {
        throw new AssertionError(fid);
    }

    // ---------------------------------------------------------------- events, keep-alive

    final void asyncEventRequest(Request r) {
        if (!expectLength(r, 0)) {
            return;
        }
        if (!controller.parkAsyncEventRequest(r)) {
            fail(r, NvmeStatus.ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED | NvmeStatus.DNR, "more than AERL + 1 requests");
        }
    }

    final void keepAlive(Request r) {
        if (!expectLength(r, 0)) {
            return;
        }
        if (controller.keepAliveTimeoutMillis() == 0) {
            // No DNR: the host may set a KATO and try again (nvmet).
            r.complete(NvmeStatus.KEEP_ALIVE_INVALID);
            return;
        }
        controller.keepAliveReceived();
        r.complete(NvmeStatus.SUCCESS);
    }

    // ---------------------------------------------------------------- helpers

    /** nvmet_check_transfer_len: the SGL must describe exactly the bytes the command moves. */
    final boolean expectLength(Request r, int length) {
        if (r.dataLength() != length || (length > 0 && r.data() == null)) {
            fail(r, NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR, "SGL of " + r.dataLength()
                + " bytes where " + length + " are transferred");
            return false;
        }
        return true;
    }

    final void fail(Request r, int status, String why) {
        if (LOG.isDebugEnabled()) {
            SubmissionQueueEntry sqe = r.command();
            LOG.debug("controller {} ({}): admin {} cid {} failed with {}: {}", controller.cntlid(), controller.peer(),
                AdminOpcode.name(sqe.opcode()), sqe.commandId(), NvmeStatus.describe(status), why);
        }
        r.complete(status);
    }

    static void zeroData(Request r) {
        AsciiFields.zero(r.data(), 0, r.dataLength());
    }

    /** Printable ASCII, cut to {@code max} bytes: Identify strings must never make the command fail. */
    static String ascii(String text, int max) {
        StringBuilder sb = new StringBuilder(Math.min(text.length(), max));
        for (int i = 0; i < text.length() && sb.length() < max; i++) {
            char c = text.charAt(i);
            sb.append(c >= 0x20 && c <= 0x7E ? c : '?');
        }
        return sb.toString();
    }
}
