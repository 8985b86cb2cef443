package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.admin.ActiveNamespaceIdList;
import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.ChangedNamespaceList;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.IdentifyNamespace;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.admin.NamespaceIdDescriptorList;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.spi.host.HostStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The asynchronous events of one {@link NvmeofController} and the namespace scan they trigger (wire reference 2.5):
 * Set Features Async Event Configuration and one outstanding Asynchronous Event Request; a namespace notice reads the
 * Changed Namespace List (re-arming the event), scans again and tells the listeners; an ANA notice goes to the
 * multipath controller owning this path. Holds the active namespaces as of the last scan.
 */
final class AsyncEvents {
    private static final Logger LOG = LoggerFactory.getLogger(AsyncEvents.class);
    private static final int MAX_IDENTIFIED_NAMESPACES = ActiveNamespaceIdList.MAX_ENTRIES;

    private final NvmeofController controller;
    private final NvmeofHost host;
    private final String peer;
    final List<NamespaceListener> listeners = new CopyOnWriteArrayList<>();
    volatile List<NvmeofNamespace> namespaces = List.of();

    AsyncEvents(NvmeofController controller, NvmeofHost host) {
        this.controller = controller;
        this.host = host;
        this.peer = controller.peer();
    }

    void enable(AdminConnection a) throws NvmeofException {
        int events = a.info.optionalAsyncEvents()
            & (FeatureIdentifier.AEC_NAMESPACE_ATTRIBUTE | FeatureIdentifier.AEC_ANA_CHANGE);
        if (events == 0) {
            return;
        }
        a.setFeatures("Set Features (Async Event Configuration)", FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, events);
        submitAsyncEventRequest(a);
    }

    private void submitAsyncEventRequest(AdminConnection a) {
        Commands.submit(a.queue, sqe -> sqe.opcode(AdminOpcode.ASYNC_EVENT_REQUEST), null, 0)
            .whenComplete((cqe, error) -> {
                if (error != null) {
                    return;
                }
                if (!cqe.ok()) {
                    int code = NvmeStatus.code(cqe.status());
                    // Path errors and aborts are what a closing or shutting-down controller does to a pending AER.
                    if (code != HostStatus.HOST_PATH_ERROR && code != NvmeStatus.ABORTED_SQ_DELETION
                        && code != NvmeStatus.ABORTED_BY_REQUEST) {
                        LOG.warn("{}: Asynchronous Event Request failed: {}", peer, HostStatus.describe(cqe.status()));
                    }
                    return;
                }
                host.control().execute(() -> onAsyncEvent(a, cqe.dw0()));
            });
    }

    private void onAsyncEvent(AdminConnection a, int dw0) {
        int type = AsyncEvent.type(dw0);
        int info = AsyncEvent.info(dw0);
        int logId = AsyncEvent.logPageId(dw0);
        LOG.info("{}: asynchronous event type {} info 0x{} log 0x{}", peer, type, Integer.toHexString(info),
            Integer.toHexString(logId));
        try {
            if (type == AsyncEvent.TYPE_NOTICE && info == AsyncEvent.NOTICE_NAMESPACE_ATTRIBUTE_CHANGED) {
                ByteBuffer log = Commands.direct(ChangedNamespaceList.LENGTH);
                // RAE 0: reading the log re-arms the event.
                a.getLogPage("Get Log Page (Changed Namespace List)", LogPageIdentifier.CHANGED_NAMESPACE_LIST,
                    0xFFFF_FFFF, log, ChangedNamespaceList.LENGTH, 0, false);
                ChangedNamespaceList list = new ChangedNamespaceList().wrap(log, 0);
                List<Integer> changed = new ArrayList<>();
                if (!list.isOverflow()) {
                    for (int i = 0; i < list.count(); i++) {
                        changed.add(list.nsid(i));
                    }
                }
                List<NvmeofNamespace> scanned = scan(a);
                namespaces = scanned;
                notifyListeners(Collections.unmodifiableList(changed), scanned);
            } else if (type == AsyncEvent.TYPE_NOTICE && info == AsyncEvent.NOTICE_ANA_CHANGE) {
                NvmeofController.PathEvents events = controller.pathEvents();
                if (events != null) {
                    events.onAnaChange(controller); // it reads the ANA log with RAE 0, re-arming the event
                } else {
                    a.getLogPage("Get Log Page (ANA)", LogPageIdentifier.ANA, 0, Commands.direct(4096), 4096, 0,
                        false);
                }
            }
        } catch (NvmeofException e) {
            LOG.warn("{}: handling asynchronous event 0x{} failed: {}", peer, Integer.toHexString(dw0), e.getMessage());
        }
        if (a == controller.admin() && controller.state() == ControllerState.LIVE) {
            submitAsyncEventRequest(a);
        }
    }

    /** After a reconnect: scans again and, if the namespaces changed, tells the listeners. */
    void rescanAfterReconnect(AdminConnection a) {
        try {
            List<NvmeofNamespace> before = namespaces;
            List<NvmeofNamespace> after = scan(a);
            namespaces = after;
            if (!sameNamespaces(before, after)) {
                notifyListeners(List.of(), after);
            }
        } catch (NvmeofException e) {
            LOG.warn("{}: namespace rescan after reconnect failed: {}", peer, e.getMessage());
        }
    }

    private void notifyListeners(List<Integer> changed, List<NvmeofNamespace> current) {
        for (NamespaceListener listener : listeners) {
            try {
                listener.onNamespacesChanged(controller, changed, current);
            } catch (RuntimeException e) {
                LOG.warn("{}: namespace listener failed", peer, e);
            }
        }
    }

    private static boolean sameNamespaces(List<NvmeofNamespace> a, List<NvmeofNamespace> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).nsid() != b.get(i).nsid() || !a.get(i).sameGeometry(b.get(i))) {
                return false;
            }
        }
        return true;
    }

    /** Identify CNS 02h, then per NSID CNS 00h and (NVMe ≥ 1.3) CNS 03h; keeps unchanged namespace objects. */
    List<NvmeofNamespace> scan(AdminConnection a) throws NvmeofException {
        ByteBuffer data = Commands.direct(IdentifyCommand.DATA_LENGTH);
        a.identify("Identify (active namespace list)", IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, 0, data);
        ActiveNamespaceIdList list = new ActiveNamespaceIdList().wrap(data, 0);
        int count = Math.min(list.count(), MAX_IDENTIFIED_NAMESPACES);
        int[] nsids = new int[count];
        for (int i = 0; i < count; i++) {
            nsids[i] = list.nsid(i);
        }
        Map<Integer, NvmeofNamespace> previous = new HashMap<>();
        for (NvmeofNamespace ns : namespaces) {
            previous.put(ns.nsid(), ns);
        }
        List<NvmeofNamespace> result = new ArrayList<>();
        for (int nsid : nsids) {
            ByteBuffer idns = Commands.direct(IdentifyCommand.DATA_LENGTH);
            Cqe cqe = a.identifyAnyStatus("Identify Namespace " + nsid, IdentifyCommand.CNS_NAMESPACE, nsid, idns);
            if (!cqe.ok()) {
                LOG.warn("{}: Identify Namespace {} failed: {}; skipping it", peer, nsid,
                    HostStatus.describe(cqe.status()));
                continue;
            }
            IdentifyNamespace ns = new IdentifyNamespace().wrap(idns, 0);
            long size = ns.size();
            if (size == 0) {
                continue; // inactive
            }
            int format = (ns.formattedLbaSize() & 0xF) | ((ns.formattedLbaSize() >>> 5) & 0x3) << 4;
            int shift = ns.lbaFormatDataSizeShift(format);
            if (shift < 9 || shift > 20 || ns.lbaFormatMetadataSize(format) != 0) {
                LOG.warn("{}: namespace {} has LBA format {} (LBADS {}, metadata {}); not supported, skipping",
                    peer, nsid, format, shift, ns.lbaFormatMetadataSize(format));
                continue;
            }
            byte[] nguid = nonZero(ns.nguid());
            byte[] eui64 = nonZero(ns.eui64());
            UUID uuid = null;
            if (a.version >= ControllerRegisters.VERSION_1_3) {
                ByteBuffer descriptors = Commands.direct(IdentifyCommand.DATA_LENGTH);
                Cqe d = a.identifyAnyStatus("Identify (namespace id descriptors) " + nsid,
                    IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS, nsid, descriptors);
                if (d.ok()) {
                    NamespaceIdDescriptorList list3 = new NamespaceIdDescriptorList().wrap(descriptors, 0);
                    int at = list3.find(NamespaceIdDescriptorList.NIDT_UUID);
                    if (at >= 0 && list3.idLength(at) == NamespaceIdDescriptorList.UUID_LENGTH) {
                        uuid = NamespaceIdDescriptorList.uuid(list3.id(at));
                    }
                    at = list3.find(NamespaceIdDescriptorList.NIDT_NGUID);
                    if (nguid == null && at >= 0 && list3.idLength(at) == NamespaceIdDescriptorList.NGUID_LENGTH) {
                        nguid = nonZero(list3.id(at));
                    }
                }
            }
            NvmeofNamespace fresh = new NvmeofNamespace(controller, nsid, shift, size, nguid, uuid, eui64);
            NvmeofNamespace old = previous.get(nsid);
            result.add(fresh.sameGeometry(old) ? old : fresh);
        }
        return Collections.unmodifiableList(result);
    }

    private static byte[] nonZero(byte[] bytes) {
        for (byte b : bytes) {
            if (b != 0) {
                return bytes;
            }
        }
        return null;
    }
}
