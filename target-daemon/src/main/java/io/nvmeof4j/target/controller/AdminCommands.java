package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.admin.ActiveNamespaceIdList;
import io.nvmeof4j.protocol.ana.AnaLogPage;
import io.nvmeof4j.protocol.reservation.ReservationNotificationLog;
import io.nvmeof4j.protocol.reservation.ReservationType;
import io.nvmeof4j.target.model.AnaStates;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsciiFields;
import io.nvmeof4j.protocol.admin.ChangedNamespaceList;
import io.nvmeof4j.protocol.admin.CommandsSupportedAndEffects;
import io.nvmeof4j.protocol.admin.ErrorLogEntry;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.FirmwareSlotLog;
import io.nvmeof4j.protocol.admin.GetFeaturesCommand;
import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.admin.IdentifyNamespace;
import io.nvmeof4j.protocol.admin.IoCommandSetIndependentNamespace;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.admin.NamespaceIdDescriptorList;
import io.nvmeof4j.protocol.admin.SmartLog;
import io.nvmeof4j.protocol.admin.SupportedLogPages;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.PortOptions;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.io.NvmCommands;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;

import java.nio.ByteBuffer;

/**
 * The admin command set of an NVM I/O controller (wire reference 2.5–2.9; nvmet's admin-cmd.c,
 * {@code nvmet_parse_admin_cmd}): Identify (CNS 00h, 01h, 02h, 03h, 05h, 06h, 07h, 08h, 1Ch), Get Log Page (01h,
 * 02h, 03h, 04h, 05h, 0Ch ANA, 80h reservation notifications, 00h supported pages), Set/Get Features (07h, 0Bh, 0Fh,
 * 06h, 81h, 19h, 82h, 83h), Asynchronous Event Request, Keep Alive and Abort. Any other opcode is Invalid Opcode +
 * DNR. What the discovery controller shares with it lives in {@link AdminCommandSet}; the fabrics commands of the
 * admin queue (Property Get/Set, authentication) in {@link FabricsCommands}. The class comments name the places
 * where we chose otherwise than nvmet.
 */
final class AdminCommands extends AdminCommandSet {
    /** Recommended arbitration burst (nvmet's value). */
    static final int RAB = 6;
    /** ACL, 0-based: Abort is accepted but never aborts anything, so the spec minimum. */
    static final int ACL = 3;
    /** Error Information log entries (ELPE + 1); we keep no errors, so the log reads as empty entries. */
    static final int ERROR_LOG_ENTRIES = 64;
    /** FRMW: slot 1 read-only, one slot. */
    static final int FRMW = IdentifyController.FRMW_SLOT1_READ_ONLY | 1 << 1;
    /** DLFEAT of a device whose deallocated blocks read as zeroes: that, and Write Zeroes may deallocate. */
    static final int DLFEAT = IdentifyNamespace.DLFEAT_READ_ZEROES | IdentifyNamespace.DLFEAT_WRITE_ZEROES_DEALLOCATE;

    /** ANATT: seconds a group may stay in ANA Change (nvmet's value). */
    static final int ANATT = 10;
    /** RESCAP: PTPL, all six types, and IEKEY ignored where the spec lets it be (SPDK's set). */
    static final int RESCAP = ReservationType.RESCAP_PTPL | ReservationType.RESCAP_ALL_TYPES
        | ReservationType.RESCAP_IGNORE_EXISTING_KEY;

    private final IdentifyCommand identify = new IdentifyCommand();
    private final IdentifyNamespace identifyNamespace = new IdentifyNamespace();
    private final IoCommandSetIndependentNamespace independentNamespace = new IoCommandSetIndependentNamespace();
    private final NamespaceIdDescriptorList descriptors = new NamespaceIdDescriptorList();
    private final ActiveNamespaceIdList namespaceList = new ActiveNamespaceIdList();
    private final ChangedNamespaceList changedNamespaces = new ChangedNamespaceList();
    private final SmartLog smartLog = new SmartLog();
    private final FirmwareSlotLog firmwareSlotLog = new FirmwareSlotLog();
    private final CommandsSupportedAndEffects effects = new CommandsSupportedAndEffects();
    private final SupportedLogPages supportedLogPages = new SupportedLogPages();
    private final AnaLogPage anaLogPage = new AnaLogPage();
    private final ReservationNotificationLog reservationLog = new ReservationNotificationLog();

    AdminCommands(Controller controller) {
        super(controller);
    }

    @Override
    void executeOwn(Request r) {
        switch (r.command().opcode()) {
            case AdminOpcode.ABORT:
                if (expectLength(r, 0)) {
                    // Nothing is ever aborted: DW0 bit 0 = 1 says "command not aborted" (nvmet does the same).
                    r.response().dw0(1);
                    r.complete(NvmeStatus.SUCCESS);
                }
                return;
            default:
                fail(r, NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR, "unsupported admin opcode");
        }
    }

    // ---------------------------------------------------------------- identify

    @Override
    void identify(Request r) {
        if (!expectLength(r, IdentifyCommand.DATA_LENGTH)) {
            return;
        }
        identify.wrap(r.command());
        int nsid = identify.nsid();
        switch (identify.cns()) {
            case IdentifyCommand.CNS_NAMESPACE:
                identifyNamespace(r, nsid);
                return;
            case IdentifyCommand.CNS_CONTROLLER:
                identifyController(r);
                return;
            case IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST:
                activeNamespaceList(r, nsid, true);
                return;
            case IdentifyCommand.CNS_CSI_ACTIVE_NAMESPACE_LIST:
                activeNamespaceList(r, nsid, identify.commandSetIdentifier() == IdentifyCommand.CSI_NVM);
                return;
            case IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS:
                namespaceDescriptors(r, nsid);
                return;
            case IdentifyCommand.CNS_CSI_NAMESPACE:
                // NVM command set specific Identify Namespace: nothing beyond CNS 00h to report, so zeroes.
                if (identify.commandSetIdentifier() != IdentifyCommand.CSI_NVM) {
                    fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Identify CNS 05h for CSI " + identify.commandSetIdentifier());
                    return;
                }
                if (controller.subsystem().namespace(nsid) == null) {
                    fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "Identify CNS 05h of an inactive NSID");
                    return;
                }
                zeroData(r);
                r.complete(NvmeStatus.SUCCESS);
                return;
            case IdentifyCommand.CNS_CSI_CONTROLLER:
                // The Linux host asks CNS 06h CSI 0 and ignores errors; nvmet answers zeroes.
                if (identify.commandSetIdentifier() != IdentifyCommand.CSI_NVM) {
                    fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Identify CNS 06h for CSI " + identify.commandSetIdentifier());
                    return;
                }
                zeroData(r);
                r.complete(NvmeStatus.SUCCESS);
                return;
            case IdentifyCommand.CNS_CSI_INDEPENDENT_NAMESPACE:
                independentNamespace(r, nsid);
                return;
            case IdentifyCommand.CNS_IO_COMMAND_SET:
                // One combination, index 0: NVM only (SPDK's nvmf_ctrlr_identify_iocs; nvmet answers Invalid Field).
                // It is what Set Features 19h selects, and what a host that set CC.CSS 110b may look up.
                zeroData(r);
                r.data().putLong(0, IdentifyCommand.IO_COMMAND_SET_VECTOR_NVM);
                r.complete(NvmeStatus.SUCCESS);
                return;
            default:
                fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Identify CNS " + identify.cns());
        }
    }

    private void identifyController(Request r) {
        PortOptions options = controller.port().options();
        Subsystem subsystem = controller.subsystem();
        IdentifyController id = identifyControllerCommon(r, subsystem.serialNumber(), subsystem.modelNumber(),
            subsystem.firmwareRevision(), IdentifyController.CNTRLTYPE_IO);
        id.recommendedArbitrationBurst(RAB)
            // Several ports and several controllers per subsystem, and ANA (log 0Ch, ANAGRPID per namespace).
            .multiPathCapabilities(IdentifyController.CMIC_MULTI_PORT | IdentifyController.CMIC_MULTI_CONTROLLER
                | IdentifyController.CMIC_ANA)
            // nvmet's ANA fields: every state may be reported, 10 s for a transition, 128 groups.
            .anaTransitionTime(ANATT)
            .anaCapabilities(IdentifyController.ANACAP_ALL_STATES | IdentifyController.ANACAP_GRPID_NOT_CHANGED)
            .anaGroupIdMax(AnaStates.GROUP_MAX)
            .anaGroupIdCount(AnaStates.GROUP_MAX)
            .maximumDataTransferSize(Integer.numberOfTrailingZeros(options.maxDataTransferSize() / 4096))
            // 128-bit host id; traffic-based keep-alive: every command restarts the timer, as in nvmet.
            .controllerAttributes(IdentifyController.CTRATT_HOST_ID_128_BIT
                | IdentifyController.CTRATT_TRAFFIC_BASED_KEEP_ALIVE)
            .abortCommandLimit(ACL)
            .firmwareUpdates(FRMW)
            .logPageAttributes(IdentifyController.LPA_SMART_PER_NAMESPACE | IdentifyController.LPA_COMMANDS_EFFECTS
                | IdentifyController.LPA_EXTENDED_DATA)
            .errorLogPageEntries(ERROR_LOG_ENTRIES - 1)
            .submissionQueueEntrySize(IdentifyController.SQES_NVM)
            .completionQueueEntrySize(IdentifyController.CQES_NVM)
            .numberOfNamespaces(Subsystem.MAX_NSID)
            .maxAllowedNamespaces(Subsystem.MAX_NSID)
            .optionalNvmCommands(IdentifyController.ONCS_COMPARE | IdentifyController.ONCS_DATASET_MANAGEMENT
                | IdentifyController.ONCS_WRITE_ZEROES | IdentifyController.ONCS_VERIFY | IdentifyController.ONCS_COPY
                | IdentifyController.ONCS_RESERVATIONS)
            // Fused Compare and Write (VMware ESXi's atomic test-and-set for VMFS); Copy with range format 0.
            .fusedOperations(IdentifyController.FUSES_COMPARE_AND_WRITE)
            .optionalCopyFormats(IdentifyController.OCFS_FORMAT_0)
            // Reported always, as nvmet does: a Flush the device did not need costs little, a lost write a lot.
            .volatileWriteCache(IdentifyController.VWC_PRESENT)
            .ioCommandCapsuleSize((64 + options.inlineDataSize()) / 16)
            .ioResponseCapsuleSize(1)
            .inCapsuleDataOffset(0)
            .fabricsControllerAttributes(0)
            .maxSglDataBlockDescriptors(1);
        r.complete(NvmeStatus.SUCCESS);
    }

    private void identifyNamespace(Request r, int nsid) {
        if (nsid == 0 || nsid == -1) {
            // The spec's answer for both; nvmet returns zeroes for NSID 0, which no host relies on.
            fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "Identify Namespace of NSID " + Integer.toUnsignedString(nsid));
            return;
        }
        IdentifyNamespace id = identifyNamespace.wrap(r.data(), 0).clear();
        Namespace ns = controller.subsystem().namespace(nsid);
        if (ns != null) {
            long blocks = ns.blockCount();
            id.size(blocks)
                .capacity(blocks)
                .utilization(blocks)
                .lbaFormatCount(0)
                .formattedLbaSize(0)
                .multiPathCapabilities(IdentifyNamespace.NMIC_SHARED)
                .deallocateFeatures(ns.device().deallocatedBlocksReadZeroes() ? DLFEAT : 0)
                // Copy limits: a Copy is staged whole in one 64 KiB buffer. MSRC is 0-based.
                .maxSingleSourceRangeLength(NvmCommands.copyMaxBlocks(ns.blockSizeShift()))
                .maxCopyLength(NvmCommands.copyMaxBlocks(ns.blockSizeShift()))
                .maxSourceRangeCount(NvmCommands.COPY_MAX_RANGES - 1)
                .nguid(ns.nguid())
                .reservationCapabilities(RESCAP)
                .anaGroupId(ns.anaGroupId())
                .lbaFormat(0, 0, ns.blockSizeShift(), 0);
        }
        // An inactive NSID reads as all zeroes (NVMe Base 2.0, 5.17.2.1).
        r.complete(NvmeStatus.SUCCESS);
    }

    private void activeNamespaceList(Request r, int nsid, boolean matchingCommandSet) {
        if (nsid == 0xFFFF_FFFE || nsid == -1) {
            fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "active namespace list above NSID "
                + Integer.toUnsignedString(nsid));
            return;
        }
        ActiveNamespaceIdList list = namespaceList.wrap(r.data(), 0).clear();
        if (matchingCommandSet) {
            int i = 0;
            for (Namespace ns : controller.subsystem().namespaces()) {
                if (Integer.compareUnsigned(ns.nsid(), nsid) > 0) {
                    list.nsid(i++, ns.nsid());
                    if (i == ActiveNamespaceIdList.MAX_ENTRIES) {
                        break;
                    }
                }
            }
        }
        r.complete(NvmeStatus.SUCCESS);
    }

    private void namespaceDescriptors(Request r, int nsid) {
        Namespace ns = controller.subsystem().namespace(nsid);
        if (ns == null) {
            fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "descriptor list of an inactive NSID");
            return;
        }
        NamespaceIdDescriptorList list = descriptors.wrap(r.data(), 0).clear();
        // nvmet's order: UUID, NGUID (when not all zero), CSI. The model has no EUI-64.
        list.addUuid(ns.uuid());
        byte[] nguid = ns.nguid();
        if (!allZero(nguid)) {
            list.addNguid(nguid);
        }
        list.addCommandSetIdentifier(IdentifyCommand.CSI_NVM);
        r.complete(NvmeStatus.SUCCESS);
    }

    private void independentNamespace(Request r, int nsid) {
        Namespace ns = controller.subsystem().namespace(nsid);
        if (ns == null) {
            fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "Identify CNS 08h of an inactive NSID");
            return;
        }
        independentNamespace.wrap(r.data(), 0).clear()
            .multiPathCapabilities(IdentifyNamespace.NMIC_SHARED)
            .status(IoCommandSetIndependentNamespace.NSTAT_READY);
        r.complete(NvmeStatus.SUCCESS);
    }

    // ---------------------------------------------------------------- get log page

    @Override
    void logPage(Request r, GetLogPageCommand cmd, int lid) {
        if (lid == LogPageIdentifier.ANA) {
            anaLog(r, cmd);
            return;
        }
        int pageLength = logLength(lid);
        if (pageLength < 0) {
            // nvmet (and NVMe 2.0) answer an unsupported LID with Invalid Field, not Invalid Log Page.
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Get Log Page of unsupported LID " + lid);
            return;
        }
        if (Long.compareUnsigned(cmd.logPageOffset(), pageLength) > 0) {
            // Checked before building: reading log 04h clears it, which must not happen for a failed read.
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "log page offset "
                + Long.toUnsignedString(cmd.logPageOffset()) + " beyond the " + pageLength + "-byte log " + lid);
            return;
        }
        ByteBuffer page = scratch(pageLength);
        switch (lid) {
            case LogPageIdentifier.SUPPORTED_LOG_PAGES:
                SupportedLogPages supported = supportedLogPages.wrap(page, 0).clear();
                for (int l = LogPageIdentifier.SUPPORTED_LOG_PAGES; l <= LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS; l++) {
                    supported.descriptor(l, SupportedLogPages.LSUPP);
                }
                supported.descriptor(LogPageIdentifier.ANA, SupportedLogPages.LSUPP);
                supported.descriptor(LogPageIdentifier.RESERVATION_NOTIFICATION, SupportedLogPages.LSUPP);
                break;
            case LogPageIdentifier.ERROR_INFORMATION:
                // No error is recorded: ELPE + 1 empty entries (ERROR COUNT 0 marks an entry unused).
                AsciiFields.zero(page, 0, pageLength);
                break;
            case LogPageIdentifier.SMART_HEALTH: {
                int nsid = r.command().nsid();
                if (nsid != 0 && nsid != -1 && controller.subsystem().namespace(nsid) == null) {
                    fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "SMART log of an inactive NSID");
                    return;
                }
                // No device statistics yet: counters stay zero. Spare reported full so tools show no warning.
                smartLog.wrap(page, 0).clear().availableSpare(100).availableSpareThreshold(10);
                break;
            }
            case LogPageIdentifier.FIRMWARE_SLOT:
                firmwareSlotLog.wrap(page, 0).clear()
                    .activeFirmwareInfo(1)
                    .revision(1, ascii(controller.subsystem().firmwareRevision(), FirmwareSlotLog.FRS_LENGTH));
                break;
            case LogPageIdentifier.CHANGED_NAMESPACE_LIST:
                controller.readChangedNamespaces(changedNamespaces.wrap(page, 0), cmd.retainAsyncEvent());
                break;
            case LogPageIdentifier.RESERVATION_NOTIFICATION:
                controller.readReservationLog(reservationLog.wrap(page, 0), cmd.retainAsyncEvent());
                break;
            case LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS:
                if (cmd.commandSetIdentifier() != IdentifyCommand.CSI_NVM) {
                    fail(r, NvmeStatus.INVALID_LOG_PAGE | NvmeStatus.DNR, "effects log for CSI " + cmd.commandSetIdentifier());
                    return;
                }
                writeEffects(effects.wrap(page, 0).clear());
                break;
            default:
                throw new AssertionError(lid);
        }
        scratch.limit(pageLength);
        sendLog(r, cmd, pageLength);
    }

    /** Size of the log pages of an I/O controller, or -1 for a LID we do not serve. */
    static int logLength(int lid) {
        switch (lid) {
            case LogPageIdentifier.SUPPORTED_LOG_PAGES:
                return SupportedLogPages.LENGTH;
            case LogPageIdentifier.ERROR_INFORMATION:
                return ERROR_LOG_ENTRIES * ErrorLogEntry.LENGTH;
            case LogPageIdentifier.SMART_HEALTH:
                return SmartLog.LENGTH;
            case LogPageIdentifier.FIRMWARE_SLOT:
                return FirmwareSlotLog.LENGTH;
            case LogPageIdentifier.CHANGED_NAMESPACE_LIST:
                return ChangedNamespaceList.LENGTH;
            case LogPageIdentifier.RESERVATION_NOTIFICATION:
                return ReservationNotificationLog.LENGTH;
            case LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS:
                return CommandsSupportedAndEffects.LENGTH;
            default:
                return -1;
        }
    }

    /**
     * The ANA log (0Ch; NVMe Base 2.0, 5.16.1.12) as seen through this controller's port: one descriptor per group
     * that is configured on the port or holds a namespace of the subsystem (group 1 always), each with the port's
     * state, its change count and (unless LSP bit 0, RGO) the subsystem's NSIDs in it, in NSID order. nvmet lists the
     * groups enabled anywhere in the target; listing the port's and the subsystem's is what a host can use.
     */
    private void anaLog(Request r, GetLogPageCommand cmd) {
        AnaStates ana = controller.port().ana();
        boolean groupsOnly = (cmd.logSpecificField() & AnaLogPage.LSP_RGO) != 0;
        java.util.Collection<Namespace> namespaces = controller.subsystem().namespaces();
        boolean[] listed = new boolean[AnaStates.GROUP_MAX + 1];
        int groups = 0;
        for (int g = 1; g <= AnaStates.GROUP_MAX; g++) {
            if (ana.isConfigured(g)) {
                listed[g] = true;
                groups++;
            }
        }
        for (Namespace ns : namespaces) {
            if (!listed[ns.anaGroupId()]) {
                listed[ns.anaGroupId()] = true;
                groups++;
            }
        }
        int pageLength = AnaLogPage.length(groups, groupsOnly ? 0 : namespaces.size());
        if (Long.compareUnsigned(cmd.logPageOffset(), pageLength) > 0) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "log page offset "
                + Long.toUnsignedString(cmd.logPageOffset()) + " beyond the " + pageLength + "-byte ANA log");
            return;
        }
        ByteBuffer page = scratch(pageLength);
        AnaLogPage log = anaLogPage.wrap(page, 0);
        log.changeCount(ana.changeCount()).groupCount(groups);
        AsciiFields.zero(page, AnaLogPage.NGRPS_OFFSET + 2, AnaLogPage.HEADER_LENGTH - AnaLogPage.NGRPS_OFFSET - 2);
        int at = AnaLogPage.HEADER_LENGTH;
        for (int g = 1; g <= AnaStates.GROUP_MAX; g++) {
            if (!listed[g]) {
                continue;
            }
            int count = 0;
            if (!groupsOnly) {
                for (Namespace ns : namespaces) {
                    if (ns.anaGroupId() == g) {
                        log.nsid(at, count++, ns.nsid());
                    }
                }
            }
            at = log.putDescriptor(at, g, count, ana.changeCount(g), ana.state(g));
        }
        scratch.limit(pageLength);
        if (sendLog(r, cmd, pageLength)) {
            controller.anaLogRead(cmd.retainAsyncEvent());
        }
    }

    static void writeEffects(CommandsSupportedAndEffects log) {
        int[] admin = {AdminOpcode.GET_LOG_PAGE, AdminOpcode.IDENTIFY, AdminOpcode.ABORT, AdminOpcode.SET_FEATURES,
            AdminOpcode.GET_FEATURES, AdminOpcode.ASYNC_EVENT_REQUEST, AdminOpcode.KEEP_ALIVE};
        for (int opcode : admin) {
            log.admin(opcode, CommandsSupportedAndEffects.CSUPP);
        }
        log.io(NvmOpcode.FLUSH, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.READ, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.COMPARE, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.DATASET_MANAGEMENT, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.WRITE, CommandsSupportedAndEffects.CSUPP | CommandsSupportedAndEffects.LBCC);
        log.io(NvmOpcode.WRITE_ZEROES, CommandsSupportedAndEffects.CSUPP | CommandsSupportedAndEffects.LBCC);
        log.io(NvmOpcode.VERIFY, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.COPY, CommandsSupportedAndEffects.CSUPP | CommandsSupportedAndEffects.LBCC);
        log.io(NvmOpcode.RESERVATION_REGISTER, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.RESERVATION_REPORT, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.RESERVATION_ACQUIRE, CommandsSupportedAndEffects.CSUPP);
        log.io(NvmOpcode.RESERVATION_RELEASE, CommandsSupportedAndEffects.CSUPP);
    }

    // ---------------------------------------------------------------- features

    @Override
    int setFeatureRefusal(int fid) {
        if (fid == FeatureIdentifier.HOST_IDENTIFIER) {
            // Fabrics hosts give their id in the Connect data; nvmet refuses to change it.
            return NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR;
        }
        boolean supported = fid == FeatureIdentifier.NUMBER_OF_QUEUES || fid == FeatureIdentifier.IO_COMMAND_SET_PROFILE
            || isReservationFeature(fid);
        return supported ? NvmeStatus.SUCCESS : super.setFeatureRefusal(fid);
    }

    @Override
    boolean setFeature(Request r, int fid, int value) {
        switch (fid) {
            case FeatureIdentifier.NUMBER_OF_QUEUES: {
                int nsqr = FeatureIdentifier.requestedSubmissionQueues0Based(value);
                int ncqr = FeatureIdentifier.requestedCompletionQueues0Based(value);
                if (nsqr == FeatureIdentifier.NUMBER_OF_QUEUES_INVALID || ncqr == FeatureIdentifier.NUMBER_OF_QUEUES_INVALID) {
                    fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Number of Queues 0xFFFF");
                    return false;
                }
                long result = controller.setNumberOfQueues(nsqr, ncqr);
                if (result < 0) {
                    fail(r, NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR, "Number of Queues after I/O queues exist");
                    return false;
                }
                r.response().dw0((int) result);
                return true;
            }
            case FeatureIdentifier.RESERVATION_NOTIFICATION_MASK:
            case FeatureIdentifier.RESERVATION_PERSISTENCE: {
                int status = setReservationFeature(fid, r.command().nsid(), value);
                if (status != NvmeStatus.SUCCESS) {
                    fail(r, status, "Set Features " + FeatureIdentifier.name(fid) + " NSID "
                        + Integer.toUnsignedString(r.command().nsid()));
                    return false;
                }
                return true;
            }
            case FeatureIdentifier.IO_COMMAND_SET_PROFILE:
                // CAP.CSS bit 43 makes this feature the host's way to pick a combination of Identify CNS 1Ch; the
                // only one is index 0 (NVM), already in force. nvmet refuses the feature (Invalid Field).
                if ((value & FeatureIdentifier.IO_COMMAND_SET_COMBINATION_INDEX_MASK) != 0) {
                    fail(r, NvmeStatus.IO_COMMAND_SET_COMBINATION_REJECTED | NvmeStatus.DNR, "I/O Command Set Profile "
                        + (value & FeatureIdentifier.IO_COMMAND_SET_COMBINATION_INDEX_MASK) + " (only 0 exists)");
                    return false;
                }
                r.response().dw0(0);
                return true;
            default:
                throw new AssertionError(fid);
        }
    }

    @Override
    boolean getFeatureSupported(int fid) {
        return fid == FeatureIdentifier.NUMBER_OF_QUEUES || fid == FeatureIdentifier.VOLATILE_WRITE_CACHE
            || fid == FeatureIdentifier.HOST_IDENTIFIER || fid == FeatureIdentifier.IO_COMMAND_SET_PROFILE
            || isReservationFeature(fid) || super.getFeatureSupported(fid);
    }

    @Override
    boolean getFeature(Request r, GetFeaturesCommand cmd, int fid, boolean current) {
        switch (fid) {
            case FeatureIdentifier.NUMBER_OF_QUEUES: {
                int granted = current ? controller.grantedIoQueues() : controller.maxIoQueues();
                r.response().dw0(FeatureIdentifier.numberOfQueuesResult(granted, granted));
                return true;
            }
            case FeatureIdentifier.VOLATILE_WRITE_CACHE:
                r.response().dw0(1);
                return true;
            case FeatureIdentifier.IO_COMMAND_SET_PROFILE:
                r.response().dw0(0); // combination index 0, current and default alike
                return true;
            case FeatureIdentifier.RESERVATION_NOTIFICATION_MASK:
            case FeatureIdentifier.RESERVATION_PERSISTENCE: {
                // Both are namespace features: a single active NSID (the current value; the default is 0).
                Namespace ns = controller.subsystem().namespace(r.command().nsid());
                if (ns == null) {
                    fail(r, NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR, "Get Features " + FeatureIdentifier.name(fid)
                        + " of NSID " + Integer.toUnsignedString(r.command().nsid()));
                    return false;
                }
                if (!current) {
                    r.response().dw0(0);
                } else if (fid == FeatureIdentifier.RESERVATION_NOTIFICATION_MASK) {
                    r.response().dw0(controller.reservationMask(ns.nsid()));
                } else {
                    r.response().dw0(ns.reservations().persistThroughPowerLoss()
                        ? ReservationNotificationLog.PERSISTENCE_PTPL : 0);
                }
                return true;
            }
            case FeatureIdentifier.HOST_IDENTIFIER:
                if ((cmd.cdw11() & FeatureIdentifier.HOST_IDENTIFIER_EXTENDED) == 0) {
                    // Only the 128-bit form exists here (CTRATT bit 0), as in nvmet.
                    fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "Get Features Host Identifier without EXHID");
                    return false;
                }
                controller.hostId().write(r.data(), 0);
                return true;
            default:
                throw new AssertionError(fid);
        }
    }

    private static boolean isReservationFeature(int fid) {
        return fid == FeatureIdentifier.RESERVATION_NOTIFICATION_MASK || fid == FeatureIdentifier.RESERVATION_PERSISTENCE;
    }

    /**
     * Feature 82h (which reservation notifications this controller wants, per namespace) and 83h (PTPL of the
     * namespace, persisted with its reservations). NSID FFFFFFFFh means every namespace; an inactive NSID is Invalid
     * Namespace; reserved bits are Invalid Field.
     */
    private int setReservationFeature(int fid, int nsid, int value) {
        int allowed = fid == FeatureIdentifier.RESERVATION_NOTIFICATION_MASK ? ReservationNotificationLog.MASK_ALL
            : ReservationNotificationLog.PERSISTENCE_PTPL;
        if ((value & ~allowed) != 0) {
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
        }
        Subsystem subsystem = controller.subsystem();
        if (nsid != -1 && subsystem.namespace(nsid) == null) {
            return NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
        }
        if (fid == FeatureIdentifier.RESERVATION_NOTIFICATION_MASK) {
            controller.reservationMask(nsid, value);
            return NvmeStatus.SUCCESS;
        }
        boolean ptpl = (value & ReservationNotificationLog.PERSISTENCE_PTPL) != 0;
        for (Namespace ns : subsystem.namespaces()) {
            if (nsid == -1 || ns.nsid() == nsid) {
                int status = ns.reservations().persistThroughPowerLoss(ptpl);
                if (status != NvmeStatus.SUCCESS) {
                    return status;
                }
            }
        }
        return NvmeStatus.SUCCESS;
    }

    // ---------------------------------------------------------------- helpers

    private static boolean allZero(byte[] bytes) {
        for (byte b : bytes) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }
}
