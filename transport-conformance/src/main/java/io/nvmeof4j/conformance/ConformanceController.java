package io.nvmeof4j.conformance;

import io.nvmeof4j.protocol.admin.AdminOpcode;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.ConnectCommand;
import io.nvmeof4j.protocol.fabrics.ConnectData;
import io.nvmeof4j.protocol.fabrics.ConnectResponse;
import io.nvmeof4j.protocol.fabrics.ControllerRegisters;
import io.nvmeof4j.protocol.fabrics.FabricsCommandType;
import io.nvmeof4j.protocol.fabrics.PropertyCommand;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.spi.ConnectRefusedException;
import io.nvmeof4j.protocol.spi.QueueHandler;
import io.nvmeof4j.protocol.spi.QueueHandlerFactory;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.protocol.spi.TransportQueue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The suite's command layer: a small controller over one RAM namespace, answering through the SPI exactly the
 * shapes the target's controller answers (which commands carry data, which way, how long, what DW0/DW1 hold, which
 * complete late), so that the suite exercises every path a transport has to carry. Contents are deterministic
 * ({@link #pattern}) so the host side checks every byte; what the bytes mean is the command layer's business and is
 * tested in target-daemon and the in-JVM ITs, not here.
 * <ul>
 *   <li>Fabrics: Connect (install, connected, CNTLID in DW0; an I/O queue must name a known CNTLID), Property Get
 *       (CAP 8 bytes in DW0+DW1, VS, CC, CSTS) and Property Set (CC.EN sets CSTS.RDY).</li>
 *   <li>Admin: Identify CNS 00h-03h, 05h-08h, 1Ch (4 KiB each), Get Log Page (any length, LPO honoured) of the log
 *       pages the target serves, Get/Set Features of its features (Host Identifier: 16 bytes of data), Keep Alive,
 *       Asynchronous Event Request (held until {@link #raiseAsyncEvent}; at most {@link #AERL_PLUS_ONE}).</li>
 *   <li>NVM: Write, Read (512-byte LBAs, NLB checked against the transfer), Flush, on namespace 1.</li>
 *   <li>Anything else: Invalid Opcode; out of range: LBA Out of Range; another NSID: Invalid Namespace.</li>
 * </ul>
 * {@link #holdReads}/{@link #holdIo} park commands so a test controls when they complete (from its own thread, as a
 * backend completes from its worker).
 */
public final class ConformanceController implements QueueHandlerFactory {
    public static final int LBA = 512;
    public static final int NSID = 1;
    public static final long CAP = 0x0000_0020_0F01_007FL; // CSS NVM, TO 15 (7.5 s), CQR, MQES 127
    public static final int VS = 0x0001_0400; // NVMe 1.4
    public static final int AERL_PLUS_ONE = 4;
    public static final int HOST_IDENTIFIER_LENGTH = 16;
    /** Identify CNS values the target answers, each with 4 KiB. */
    public static final int[] IDENTIFY_CNS = {IdentifyCommand.CNS_NAMESPACE, IdentifyCommand.CNS_CONTROLLER,
        IdentifyCommand.CNS_ACTIVE_NAMESPACE_LIST, IdentifyCommand.CNS_NAMESPACE_ID_DESCRIPTORS,
        IdentifyCommand.CNS_CSI_NAMESPACE, IdentifyCommand.CNS_CSI_CONTROLLER, IdentifyCommand.CNS_CSI_ACTIVE_NAMESPACE_LIST,
        IdentifyCommand.CNS_CSI_INDEPENDENT_NAMESPACE, IdentifyCommand.CNS_IO_COMMAND_SET};
    /** Log pages the target serves. */
    public static final int[] LOG_PAGES = {LogPageIdentifier.SUPPORTED_LOG_PAGES, LogPageIdentifier.ERROR_INFORMATION,
        LogPageIdentifier.SMART_HEALTH, LogPageIdentifier.FIRMWARE_SLOT, LogPageIdentifier.CHANGED_NAMESPACE_LIST,
        LogPageIdentifier.COMMANDS_SUPPORTED_AND_EFFECTS, LogPageIdentifier.ANA,
        LogPageIdentifier.RESERVATION_NOTIFICATION};
    /** Features the target lets a host set (and get back); Host Identifier is get-only on fabrics. */
    public static final int[] SETTABLE_FEATURES = {FeatureIdentifier.NUMBER_OF_QUEUES,
        FeatureIdentifier.ASYNC_EVENT_CONFIGURATION, FeatureIdentifier.KEEP_ALIVE_TIMER,
        FeatureIdentifier.IO_COMMAND_SET_PROFILE, FeatureIdentifier.RESERVATION_NOTIFICATION_MASK,
        FeatureIdentifier.RESERVATION_PERSISTENCE};

    private final ByteBuffer ram;
    private final long lbaCount;
    private final AtomicInteger nextControllerId = new AtomicInteger(1);
    private final Map<Integer, Map<Integer, Integer>> features = new ConcurrentHashMap<>();
    private final Map<Integer, Integer> cc = new ConcurrentHashMap<>();
    private final Set<Integer> controllers = ConcurrentHashMap.newKeySet();
    /** The CNTLID each connected queue's Connect established (keyed by queue: no per-request state needed). */
    private final Map<TransportQueue, Integer> controllerOfQueue = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Request> asyncEvents = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Request> held = new ConcurrentLinkedQueue<>();
    /** Every queue opened, in order. */
    public final List<TransportQueue> queues = new CopyOnWriteArrayList<>();
    /** Every {@link QueueHandler#onClosed} reason, one per closed queue. */
    public final List<String> closed = new CopyOnWriteArrayList<>();
    /** Commands that reached the handler. */
    public final AtomicInteger commands = new AtomicInteger();
    /** Commands completed by this controller (at once or after being held). */
    public final AtomicInteger completed = new AtomicInteger();
    /** {@link Request#sequence()} of every command that reached the handler, per queue, in arrival order. */
    public final Map<TransportQueue, List<Long>> sequences = new ConcurrentHashMap<>();
    /** Commands whose {@link Request#receivedNanos()} was not between the queue's opening and their arrival. */
    public final AtomicInteger badReceiveTimes = new AtomicInteger();
    /** Responses the transport reported sent ({@link QueueHandler#onResponseSent}). */
    public final AtomicInteger responsesSent = new AtomicInteger();
    /** Responses whose sent stamp was before their command's {@link Request#receivedNanos()} or after the report. */
    public final AtomicInteger badSentTimes = new AtomicInteger();
    public volatile boolean holdReads;
    public volatile boolean holdIo;

    /** @param capacity bytes of namespace 1 (a multiple of {@link #LBA}) */
    public ConformanceController(int capacity) {
        ram = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        lbaCount = capacity / LBA;
    }

    public long lbaCount() {
        return lbaCount;
    }

    /** The namespace's bytes at {@code [offset, offset + length)}, for checks. */
    public byte[] ram(long offset, int length) {
        byte[] out = new byte[length];
        ram.get((int) offset, out);
        return out;
    }

    /** Deterministic contents for data the controller makes up (Identify, log pages, Host Identifier). */
    public static byte[] pattern(long seed, int length) {
        byte[] out = new byte[length];
        long x = seed * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
        for (int i = 0; i < length; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            out[i] = (byte) x;
        }
        return out;
    }

    public static long identifySeed(int cns, int nsid) {
        return 0x1D00_0000L | (cns << 8) | nsid;
    }

    /** A log page's bytes from offset 0: the bytes at LPO are {@code logPage(lid, LPO + n)[LPO..]}. */
    public static long logPageSeed(int lid) {
        return 0x1090_0000L | lid;
    }

    public static long hostIdentifierSeed(int controllerId) {
        return 0x4851_0000L | controllerId;
    }

    /** Requests held by {@link #holdReads}/{@link #holdIo}, or outstanding AERs: a snapshot count. */
    public int heldCount() {
        return held.size();
    }

    public int outstandingAsyncEvents() {
        return asyncEvents.size();
    }

    /** Completes every held command now, on the calling thread (a backend worker's role). */
    public int releaseHeld() {
        int n = 0;
        Request r;
        while ((r = held.poll()) != null) {
            complete(r, executeIo(r));
            n++;
        }
        return n;
    }

    /** Completes one outstanding Asynchronous Event Request with {@code dw0}; false when none is outstanding. */
    public boolean raiseAsyncEvent(int dw0) {
        Request r = asyncEvents.poll();
        if (r == null) {
            return false;
        }
        r.response().dw0(dw0);
        complete(r, NvmeStatus.SUCCESS);
        return true;
    }

    private void complete(Request r, int status) {
        completed.incrementAndGet();
        r.complete(status);
    }

    @Override
    public QueueHandler open(TransportQueue queue) {
        queues.add(queue);
        long opened = System.nanoTime();
        List<Long> arrived = new CopyOnWriteArrayList<>();
        sequences.put(queue, arrived);
        return new QueueHandler() {
            @Override
            public void onCommand(Request request) {
                commands.incrementAndGet();
                arrived.add(request.sequence());
                long received = request.receivedNanos();
                if (received - opened < -1_000_000 || received - System.nanoTime() > 0) {
                    badReceiveTimes.incrementAndGet(); // 1 ms of slack: the capsule may precede open() a little
                }
                SubmissionQueueEntry sqe = request.command();
                if (sqe.isFabrics()) {
                    complete(request, fabrics(request));
                } else if (queue.queueId() < 0) {
                    complete(request, NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR); // before Connect
                } else if (queue.queueId() == 0) {
                    admin(request);
                } else if (holdIo || holdReads && sqe.opcode() == NvmOpcode.READ) {
                    held.add(request);
                } else {
                    complete(request, executeIo(request));
                }
            }

            @Override
            public void onResponseSent(Request request, long sentNanos) {
                if (sentNanos - request.receivedNanos() < 0 || sentNanos - System.nanoTime() > 0) {
                    badSentTimes.incrementAndGet();
                }
                responsesSent.incrementAndGet();
            }

            @Override
            public void onClosed(String reason) {
                closed.add(reason);
            }
        };
    }

    private int fabrics(Request request) {
        SubmissionQueueEntry sqe = request.command();
        TransportQueue queue = request.queue();
        switch (sqe.fabricsCommandType()) {
            case FabricsCommandType.CONNECT:
                return connect(request);
            case FabricsCommandType.PROPERTY_GET: {
                if (queue.queueId() != 0) {
                    return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
                }
                PropertyCommand get = new PropertyCommand().wrap(sqe);
                int controllerId = controllerOf(queue);
                int enabled = cc.getOrDefault(controllerId, 0) & 1;
                switch (get.propertyOffset()) {
                    case ControllerRegisters.CAP:
                        request.response().result64(CAP);
                        return NvmeStatus.SUCCESS;
                    case ControllerRegisters.VS:
                        request.response().dw0(VS);
                        return NvmeStatus.SUCCESS;
                    case ControllerRegisters.CC:
                        request.response().dw0(cc.getOrDefault(controllerId, 0));
                        return NvmeStatus.SUCCESS;
                    case ControllerRegisters.CSTS:
                        request.response().dw0(enabled);
                        return NvmeStatus.SUCCESS;
                    default:
                        return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
                }
            }
            case FabricsCommandType.PROPERTY_SET: {
                PropertyCommand set = new PropertyCommand().wrap(sqe);
                if (queue.queueId() != 0 || set.propertyOffset() != ControllerRegisters.CC) {
                    return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
                }
                cc.put(controllerOf(queue), (int) set.value());
                return NvmeStatus.SUCCESS;
            }
            default:
                return NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR;
        }
    }

    private int controllerOf(TransportQueue queue) {
        return controllerOfQueue.getOrDefault(queue, -1);
    }

    private int connect(Request request) {
        ConnectCommand connect = new ConnectCommand().wrap(request.command());
        TransportQueue queue = request.queue();
        ByteBuffer data = request.data();
        if (data == null || request.dataLength() != ConnectData.LENGTH) {
            return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
        }
        if (queue.queueId() >= 0) {
            return NvmeStatus.COMMAND_SEQUENCE_ERROR | NvmeStatus.DNR; // a second Connect
        }
        ConnectData connectData = new ConnectData().wrap(data, 0);
        int qid = connect.queueId();
        int controllerId;
        if (qid == 0) {
            if (connectData.controllerId() != ConnectData.CNTLID_DYNAMIC) {
                request.response().dw0(ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET));
                return NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;
            }
            controllerId = nextControllerId.getAndIncrement();
        } else {
            controllerId = connectData.controllerId();
            if (!controllers.contains(controllerId)) {
                request.response().dw0(ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET));
                return NvmeStatus.FABRICS_CONNECT_INVALID_PARAMETERS | NvmeStatus.DNR;
            }
        }
        int sqSize = connect.submissionQueueSize() + 1;
        try {
            queue.install(qid, sqSize);
        } catch (ConnectRefusedException e) {
            return e.status();
        }
        queue.connected(qid, sqSize, connect.sqFlowControlDisabled());
        controllers.add(controllerId);
        controllerOfQueue.put(queue, controllerId);
        request.response().dw0(ConnectResponse.success(controllerId));
        return NvmeStatus.SUCCESS;
    }

    private void admin(Request request) {
        SubmissionQueueEntry sqe = request.command();
        switch (sqe.opcode()) {
            case AdminOpcode.IDENTIFY: {
                int cns = sqe.cdw10() & 0xFF;
                if (indexOf(IDENTIFY_CNS, cns) < 0 || request.dataLength() != IdentifyCommand.DATA_LENGTH) {
                    complete(request, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                    return;
                }
                request.data().put(0, pattern(identifySeed(cns, sqe.nsid()), IdentifyCommand.DATA_LENGTH));
                complete(request, NvmeStatus.SUCCESS);
                return;
            }
            case AdminOpcode.GET_LOG_PAGE: {
                int lid = sqe.cdw10() & 0xFF;
                long numd = ((sqe.cdw10() >>> 16) | ((long) (sqe.cdw11() & 0xFFFF) << 16)) + 1;
                long offset = (sqe.cdw12() & 0xFFFF_FFFFL) | ((long) sqe.cdw13() << 32);
                if (indexOf(LOG_PAGES, lid) < 0 || numd * 4 != request.dataLength() || offset > 1 << 20) {
                    complete(request, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                    return;
                }
                byte[] page = pattern(logPageSeed(lid), (int) offset + request.dataLength());
                request.data().put(0, page, (int) offset, request.dataLength());
                complete(request, NvmeStatus.SUCCESS);
                return;
            }
            case AdminOpcode.GET_FEATURES: {
                int fid = sqe.cdw10() & 0xFF;
                int controllerId = controllerOf(request.queue());
                if (fid == FeatureIdentifier.HOST_IDENTIFIER) {
                    if (request.dataLength() != HOST_IDENTIFIER_LENGTH) {
                        complete(request, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                        return;
                    }
                    request.data().put(0, pattern(hostIdentifierSeed(controllerId), HOST_IDENTIFIER_LENGTH));
                    complete(request, NvmeStatus.SUCCESS);
                    return;
                }
                if (fid != FeatureIdentifier.VOLATILE_WRITE_CACHE && indexOf(SETTABLE_FEATURES, fid) < 0) {
                    complete(request, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
                    return;
                }
                request.response().dw0(features.computeIfAbsent(controllerId, c -> new ConcurrentHashMap<>())
                    .getOrDefault(fid, 0));
                complete(request, NvmeStatus.SUCCESS);
                return;
            }
            case AdminOpcode.SET_FEATURES: {
                int fid = sqe.cdw10() & 0xFF;
                if (indexOf(SETTABLE_FEATURES, fid) < 0) {
                    complete(request, NvmeStatus.FEATURE_NOT_CHANGEABLE | NvmeStatus.DNR);
                    return;
                }
                features.computeIfAbsent(controllerOf(request.queue()), c -> new ConcurrentHashMap<>())
                    .put(fid, sqe.cdw11());
                request.response().dw0(sqe.cdw11()); // Number of Queues answers what it granted: all of it
                complete(request, NvmeStatus.SUCCESS);
                return;
            }
            case AdminOpcode.KEEP_ALIVE:
                complete(request, NvmeStatus.SUCCESS);
                return;
            case AdminOpcode.ASYNC_EVENT_REQUEST:
                if (asyncEvents.size() >= AERL_PLUS_ONE) {
                    complete(request, NvmeStatus.ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED | NvmeStatus.DNR);
                    return;
                }
                asyncEvents.add(request); // completes when an event is raised, or never
                return;
            default:
                complete(request, NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        }
    }

    private int executeIo(Request request) {
        SubmissionQueueEntry sqe = request.command();
        int opcode = sqe.opcode();
        if (opcode != NvmOpcode.WRITE && opcode != NvmOpcode.READ && opcode != NvmOpcode.FLUSH) {
            return NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR;
        }
        if (sqe.nsid() != NSID) {
            return NvmeStatus.INVALID_NAMESPACE | NvmeStatus.DNR;
        }
        if (opcode == NvmOpcode.FLUSH) {
            return NvmeStatus.SUCCESS;
        }
        long slba = sqe.cdw10And11();
        int blocks = (sqe.cdw12() & 0xFFFF) + 1;
        if (slba < 0 || slba + blocks > lbaCount) {
            return NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR;
        }
        if (request.dataLength() != blocks * LBA) {
            return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
        }
        int at = (int) (slba * LBA);
        if (opcode == NvmOpcode.WRITE) {
            ram.put(at, request.data(), 0, request.dataLength());
        } else {
            request.data().put(0, ram, at, request.dataLength());
        }
        return NvmeStatus.SUCCESS;
    }

    private static int indexOf(int[] values, int value) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] == value) {
                return i;
            }
        }
        return -1;
    }
}
