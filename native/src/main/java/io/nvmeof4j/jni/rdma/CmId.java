package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * An RDMA CM identifier ({@code struct rdma_cm_id}, reliable connected, TCP port space): a listener, or one end of
 * a connection. Created by {@link CmEventChannel#createId(long)} (active side, listeners) or delivered by a
 * CONNECT_REQUEST event (passive side). Its events arrive on its {@link CmEventChannel}.
 *
 * <p>Two styles. Asynchronous for reactors: {@link #resolveAddress}, {@link #resolveRoute}, {@link #connect},
 * {@link #accept}, {@link #reject}, {@link #disconnect} start the step and return; the outcome is an event.
 * Blocking with a timeout for set-up code and tests: {@link #resolve}, {@link #connectAndWait},
 * {@link #acceptAndWait}, {@link #awaitConnectRequest} wait for the step's event on the id's channel and throw an
 * {@link RdmaCmException} naming the peer, the step and the status on a reject, an address/route error, an
 * unreachable peer or a timeout, never hanging.
 *
 * <p>Closing it closes its queue pair ({@code rdma_destroy_qp}) and then destroys the id ({@code rdma_destroy_id});
 * {@link #reject} closes it too. Close is serialised with the queue pair's close, so the two may run on different
 * threads. Threading otherwise: one thread at a time per id (its reactor or the set-up code); the blocking helpers
 * may run on several threads for different ids of one channel (see {@link CmEventChannel}).
 */
public final class CmId extends NativeHandle {
    private final CmEventChannel channel;
    private final CmId listener;
    private final long nativeId;
    private volatile long context;
    private volatile String peer;
    private QueuePair queuePair; // guarded by this
    private boolean queuePairDestroyed; // guarded by this: rdma_destroy_qp ran for queuePair
    private boolean destroyed; // guarded by this: rdma_destroy_id ran

    CmId(long handle, CmEventChannel channel, long context, CmId listener) {
        super(handle, listener != null ? "CM id (connection request)" : "CM id");
        this.nativeId = handle;
        this.channel = channel;
        this.context = context;
        this.listener = listener;
        this.peer = "unresolved peer";
        if (listener != null) {
            InetSocketAddress p = addressOf(handle, true);
            this.peer = p != null ? hostPort(p) : "unknown peer";
        }
    }

    static long create(long channel) {
        return create0(channel);
    }

    long nativeId() {
        return nativeId;
    }

    /** The event channel this id reports to. */
    public CmEventChannel channel() {
        return channel;
    }

    /** The caller's value given at creation (inherited from the listener for a connection request). */
    public long context() {
        return context;
    }

    /** Replaces the caller's value (a passive side sets its connection's index here, for example). */
    public void context(long value) {
        this.context = value;
    }

    /** For an id from a CONNECT_REQUEST: the listener it arrived on; else null. */
    public CmId listener() {
        return listener;
    }

    /** The peer as {@code host:port} (what exceptions name), or where this id listens. */
    public String peer() {
        return peer;
    }

    String describe() {
        return "CM id " + peer;
    }

    /** Binds to a local address and port ({@code rdma_bind_addr}); port 0 picks one. */
    public void bind(InetSocketAddress local) throws NativeIoException {
        checkAddress(local);
        byte[] addr = local.getAddress().getAddress();
        NativeIoException.check("rdma_bind_addr " + hostPort(local), bind0(handle(), addr, local.getPort(),
            scopeId(local)));
        this.peer = "listener on " + hostPort(local);
    }

    /** Listens for connection requests ({@code rdma_listen}); they arrive as CONNECT_REQUEST events. */
    public void listen(int backlog) throws NativeIoException {
        NativeIoException.check("rdma_listen " + peer, listen0(handle(), backlog));
    }

    /**
     * Starts resolving {@code destination} to an RDMA device and address ({@code rdma_resolve_addr}); the outcome
     * is an ADDR_RESOLVED or ADDR_ERROR event within {@code timeoutMillis}.
     *
     * @param source a local address to use, or null
     */
    public void resolveAddress(InetSocketAddress source, InetSocketAddress destination, int timeoutMillis)
            throws NativeIoException {
        checkAddress(destination);
        if (source != null) {
            checkAddress(source);
        }
        this.peer = hostPort(destination);
        NativeIoException.check("rdma_resolve_addr " + peer, resolveAddr0(handle(),
            source == null ? null : source.getAddress().getAddress(), source == null ? 0 : source.getPort(),
            source == null ? 0 : scopeId(source), destination.getAddress().getAddress(), destination.getPort(),
            scopeId(destination), Math.max(1, timeoutMillis)));
    }

    /** Starts resolving the route to the peer ({@code rdma_resolve_route}): ROUTE_RESOLVED or ROUTE_ERROR follows. */
    public void resolveRoute(int timeoutMillis) throws NativeIoException {
        NativeIoException.check("rdma_resolve_route " + peer, resolveRoute0(handle(), Math.max(1, timeoutMillis)));
    }

    /**
     * Resolves address and route of {@code destination}, waiting for each event; throws {@link RdmaCmException}
     * (step {@code "resolve address"} or {@code "resolve route"}) on an error event or when {@code timeout} passes.
     */
    public void resolve(InetSocketAddress destination, Duration timeout) throws NativeIoException, RdmaCmException {
        long deadline = System.nanoTime() + timeout.toNanos();
        checkAddress(destination);
        this.peer = hostPort(destination);
        try {
            resolveAddress(null, destination, millisLeft(deadline));
        } catch (NativeIoException e) {
            throw stepFailed("resolve address", e);
        }
        channel.awaitEvent(this, CmEventType.ADDR_RESOLVED, nanosLeft(deadline), "resolve address");
        try {
            resolveRoute(millisLeft(deadline));
        } catch (NativeIoException e) {
            throw stepFailed("resolve route", e);
        }
        channel.awaitEvent(this, CmEventType.ROUTE_RESOLVED, nanosLeft(deadline), "resolve route");
    }

    /** A call that failed at once, as the blocking helpers report it: peer, step, errno. */
    private RdmaCmException stepFailed(String step, NativeIoException e) {
        RdmaCmException failure = new RdmaCmException(peer, step, null, 0, e.errno(), null, e.operation());
        failure.initCause(e);
        return failure;
    }

    /**
     * The verbs context of the device this id is bound to (after address resolution, on a connection request's id,
     * or on a listener bound to a device's address); librdmacm owns it and shares it between the ids on that
     * device. The same object for every id on that device (see {@link VerbsContext}).
     */
    public VerbsContext verbsContext() throws NativeIoException {
        long ctx = verbs0(handle());
        if (ctx == 0) {
            throw new NativeIoException("verbs context of " + describe(), Errno.ENODEV,
                "the id is not bound to an RDMA device yet (resolve the address or bind to a device's address)");
        }
        return VerbsContext.shared(ctx, CmId::deviceName0);
    }

    /**
     * Creates this id's reliable-connected queue pair ({@code rdma_create_qp}) in {@code pd}, completing into
     * {@code sendCq} and {@code recvCq} (all of this id's device). librdmacm moves it to RTS while connecting.
     */
    public synchronized QueuePair createQueuePair(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
                                                  QueuePairCapabilities caps) throws NativeIoException {
        long id = handle();
        if (queuePair != null && !queuePair.isClosed()) {
            throw new IllegalStateException(describe() + " already has " + queuePair);
        }
        long ctx = verbs0(id);
        for (VerbsContext c : new VerbsContext[] {pd.context(), sendCq.context(), recvCq.context()}) {
            if (ctx != 0 && c.nativeContext() != ctx) {
                throw new IllegalArgumentException(c + " is not the verbs context of " + describe()
                    + " (use the PD and CQs of its verbsContext())");
            }
        }
        long pdHandle = pd.handleForChild();
        long sendHandle = sendCq.handleForChild();
        long recvHandle = recvCq.handleForChild();
        int[] actual = new int[6];
        long qp = NativeIoException.check("rdma_create_qp on " + describe(), createQp0(id, pdHandle, sendHandle,
            recvHandle, caps.maxSendWr(), caps.maxRecvWr(), caps.maxSendSge(), caps.maxRecvSge(),
            caps.maxInlineData(), actual));
        QueuePair result = new QueuePair(qp, this, pd, sendCq, recvCq,
            new QueuePairCapabilities(actual[0], actual[1], actual[2], actual[3], actual[4]), actual[5]);
        queuePair = result;
        queuePairDestroyed = false;
        result.attachToParents();
        return result;
    }

    /** The queue pair created on this id, or null. */
    public synchronized QueuePair queuePair() {
        return queuePair;
    }

    /**
     * Sends a connection request ({@code rdma_connect}, after the route is resolved and the QP created);
     * ESTABLISHED, or REJECTED / UNREACHABLE / CONNECT_ERROR, follows.
     */
    public void connect(ConnectionParameters params) throws NativeIoException {
        byte[] pd = params.privateData();
        NativeIoException.check("rdma_connect " + peer, connect0(handle(), pd, params.responderResources(),
            params.initiatorDepth(), params.flowControl(), params.retryCount(), params.rnrRetryCount()));
    }

    /**
     * {@link #connect} and wait for ESTABLISHED (returned: it carries the peer's accept private data and its
     * IRD/ORD); throws {@link RdmaCmException} with step {@code "connect"} on REJECTED (with its status and
     * private data), UNREACHABLE, CONNECT_ERROR or timeout.
     */
    public CmEvent connectAndWait(ConnectionParameters params, Duration timeout)
            throws NativeIoException, RdmaCmException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            connect(params);
        } catch (NativeIoException e) {
            throw stepFailed("connect", e);
        }
        return channel.awaitEvent(this, CmEventType.ESTABLISHED, nanosLeft(deadline), "connect");
    }

    /** Accepts a connection request on this (passive) id ({@code rdma_accept}); ESTABLISHED follows. */
    public void accept(ConnectionParameters params) throws NativeIoException {
        byte[] pd = params.privateData();
        NativeIoException.check("rdma_accept " + peer, accept0(handle(), pd, params.responderResources(),
            params.initiatorDepth(), params.flowControl(), params.retryCount(), params.rnrRetryCount()));
    }

    /** {@link #accept} and wait for ESTABLISHED on this id. */
    public CmEvent acceptAndWait(ConnectionParameters params, Duration timeout)
            throws NativeIoException, RdmaCmException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            accept(params);
        } catch (NativeIoException e) {
            throw stepFailed("accept", e);
        }
        return channel.awaitEvent(this, CmEventType.ESTABLISHED, nanosLeft(deadline), "accept");
    }

    /** Waits for a CONNECT_REQUEST on this listener; the event's {@link CmEvent#id()} is the new connection's id. */
    public CmEvent awaitConnectRequest(Duration timeout) throws NativeIoException, RdmaCmException {
        return channel.awaitEvent(this, CmEventType.CONNECT_REQUEST, timeout.toNanos(), "wait for connect request");
    }

    /** Waits for an event of {@code type} on this id (DISCONNECTED after a disconnect, for example). */
    public CmEvent awaitEvent(CmEventType type, Duration timeout, String step)
            throws NativeIoException, RdmaCmException {
        return channel.awaitEvent(this, type, timeout.toNanos(), step);
    }

    /**
     * Rejects a connection request with {@code privateData} (may be null) ({@code rdma_reject}) and then closes
     * this id: a rejected request's id is of no further use, so reject takes it over (calling {@link #close()}
     * afterwards is harmless). The id is closed also when {@code rdma_reject} fails (the exception says why).
     */
    public void reject(byte[] privateData) throws NativeIoException {
        if (privateData != null && privateData.length > 255) {
            throw new IllegalArgumentException("reject private data of " + privateData.length + " bytes");
        }
        try {
            NativeIoException.check("rdma_reject " + peer, reject0(handle(), privateData));
        } finally {
            close();
        }
    }

    /**
     * Disconnects ({@code rdma_disconnect}): the QP goes to error (outstanding work requests complete with
     * {@link WorkCompletions#STATUS_WR_FLUSH_ERR}), and the peer gets DISCONNECTED. A side that receives DISCONNECTED
     * must call this too: on InfiniBand/RoCE that sends the DREP, and only then does the side that started get its
     * own DISCONNECTED (otherwise only after its DREQ timed out).
     */
    public void disconnect() throws NativeIoException {
        NativeIoException.check("rdma_disconnect " + peer, disconnect0(handle()));
    }

    /** The local address ({@code rdma_get_local_addr}), or null when not bound. */
    public InetSocketAddress localAddress() {
        return addressOf(handle(), false);
    }

    /** The peer's address ({@code rdma_get_peer_addr}), or null when none. */
    public InetSocketAddress peerAddress() {
        return addressOf(handle(), true);
    }

    /** QueuePair.release: destroys the QP unless this id's close (or an earlier call) did already. */
    synchronized void queuePairClosed(QueuePair qp) {
        if (queuePair == qp && !queuePairDestroyed && !destroyed) {
            destroyQp0(nativeId);
            queuePairDestroyed = true;
        }
    }

    /**
     * Serialised with {@link #queuePairClosed}: the QP is destroyed (C checks {@code cm_id->qp}) before the id, and
     * the id leaves the channel's map before {@code rdma_destroy_id}, so a new id reusing the pointer keeps its own
     * registration.
     */
    @Override
    protected synchronized void release(long handle) {
        destroyQp0(handle);
        queuePairDestroyed = true;
        QueuePair qp = queuePair;
        RuntimeException qpFailure = null;
        if (qp != null) {
            try {
                qp.close(); // marks it closed and detaches it from its PD and CQs; queuePairClosed skips
            } catch (RuntimeException e) {
                qpFailure = e;
            }
        }
        channel.unregister(this);
        int rc = destroy0(handle);
        destroyed = true;
        Children.checkDestroy("rdma_destroy_id for " + describe(), rc, qpFailure);
    }

    private static InetSocketAddress addressOf(long id, boolean peerSide) {
        byte[] addr = new byte[20]; // 16 address bytes, then the IPv6 scope id (native order)
        int rc = address0(id, peerSide, addr);
        if (rc < 0) {
            return null;
        }
        int port = rc & 0xffff;
        int family = rc >>> 16;
        try {
            int scope = java.nio.ByteBuffer.wrap(addr, 16, 4).order(java.nio.ByteOrder.nativeOrder()).getInt();
            InetAddress a = family == 4
                ? InetAddress.getByAddress(java.util.Arrays.copyOf(addr, 4))
                : scope != 0 ? Inet6Address.getByAddress(null, java.util.Arrays.copyOf(addr, 16), scope)
                : InetAddress.getByAddress(java.util.Arrays.copyOf(addr, 16));
            return new InetSocketAddress(a, port);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    private static void checkAddress(InetSocketAddress a) {
        if (a == null || a.isUnresolved()
            || !(a.getAddress() instanceof Inet4Address || a.getAddress() instanceof Inet6Address)) {
            throw new IllegalArgumentException("a resolved IPv4/IPv6 socket address is needed, got " + a);
        }
    }

    /** The IPv6 scope id (interface index) of a link-local address, else 0: C sets it as {@code sin6_scope_id}. */
    static int scopeId(InetSocketAddress a) {
        return a.getAddress() instanceof Inet6Address v6 ? v6.getScopeId() : 0;
    }

    static String hostPort(InetSocketAddress a) {
        String host = a.getAddress().getHostAddress();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    private static long nanosLeft(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }

    private static int millisLeft(long deadline) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, nanosLeft(deadline) / 1_000_000));
    }

    /** rdma_create_id(channel, &id, NULL, RDMA_PS_TCP); pointer or -errno. */
    private static native long create0(long channel);

    /** rdma_bind_addr with a sockaddr_in (4 bytes) or sockaddr_in6 (16 bytes, with sin6_scope_id = scope). */
    private static native int bind0(long id, byte[] address, int port, int scope);

    private static native int listen0(long id, int backlog);

    private static native int resolveAddr0(long id, byte[] src, int srcPort, int srcScope, byte[] dst, int dstPort,
                                           int dstScope, int timeoutMs);

    private static native int resolveRoute0(long id, int timeoutMs);

    /** id->verbs, or 0. */
    private static native long verbs0(long id);

    /** ibv_get_device_name(context->device). */
    private static native String deviceName0(long context);

    /** rdma_create_qp (RC, sq_sig_all 0); fills actual = {send_wr, recv_wr, send_sge, recv_sge, inline, qp_num}. */
    private static native long createQp0(long id, long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr,
                                         int maxSendSge, int maxRecvSge, int maxInline, int[] actual);

    private static native void destroyQp0(long id);

    private static native int connect0(long id, byte[] privateData, int responderResources, int initiatorDepth,
                                       int flowControl, int retryCount, int rnrRetryCount);

    private static native int accept0(long id, byte[] privateData, int responderResources, int initiatorDepth,
                                      int flowControl, int retryCount, int rnrRetryCount);

    private static native int reject0(long id, byte[] privateData);

    private static native int disconnect0(long id);

    /**
     * Fills addr (4 or 16 bytes used; for IPv6 bytes 16..19 get sin6_scope_id in native order); returns family
     * (4 or 6) &lt;&lt; 16 | port, or -errno.
     */
    private static native int address0(long id, boolean peer, byte[] addr);

    private static native int destroy0(long id);
}
