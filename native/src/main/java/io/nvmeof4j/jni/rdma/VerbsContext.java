package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongFunction;

/**
 * An opened RDMA device ({@code struct ibv_context}): the parent of protection domains, completion channels and
 * completion queues.
 *
 * <p>Two origins: {@link Rdma#openDevice(String)} opens one that this object owns ({@code ibv_close_device} on
 * close); {@link CmId#verbsContext()} returns the context librdmacm opened for the device a CM id is bound to,
 * which librdmacm shares between all ids on that device and frees itself. There is ONE Java object per shared
 * native context in the process: every CM id on a device returns the same {@code VerbsContext}, so one completion
 * channel and one protection domain serve all connections on the device. Closing a shared context never closes
 * the device (the native part is a no-op) but does close everything created through it (PDs, channels, CQs, and so
 * their QPs): close it only when the device's connections are all gone, or just close the children one by one.
 * After that close, the next {@link CmId#verbsContext()} returns a new object for the same device.
 *
 * <p>Queue pairs of a CM id must use a protection domain and completion queues of that id's context; contexts are
 * compared by native pointer.
 */
public final class VerbsContext extends NativeHandle {
    // librdmacm's contexts by native pointer: one Java object each (see the class comment).
    private static final Map<Long, VerbsContext> SHARED = new ConcurrentHashMap<>();

    private final String deviceName;
    private final boolean owned;
    private final long nativeContext;
    private final Children children = new Children();

    VerbsContext(long handle, String deviceName, boolean owned) {
        super(handle, "verbs context " + deviceName + (owned ? "" : " (shared)"));
        this.deviceName = deviceName;
        this.owned = owned;
        this.nativeContext = handle;
    }

    /** The canonical object for librdmacm's context {@code handle} (created on first use, or after a close). */
    static VerbsContext shared(long handle, LongFunction<String> deviceName) {
        return SHARED.compute(handle, (ptr, existing) -> existing != null && !existing.isClosed() ? existing
            : new VerbsContext(ptr, deviceName.apply(ptr), false));
    }

    /** The native pointer (also after close), for comparing contexts. */
    long nativeContext() {
        return nativeContext;
    }

    static long open(String name) {
        return open0(name);
    }

    /** The device name ({@code ibv_get_device_name}). */
    public String deviceName() {
        return deviceName;
    }

    /** This device's attributes ({@code ibv_query_device}, {@code ibv_query_port}). */
    public RdmaDevice query() throws NativeIoException {
        long[] attrs = new long[RdmaDevice.ATTR_COUNT];
        NativeIoException.check("ibv_query_device " + deviceName, query0(handle(), attrs));
        return RdmaDevice.fromAttributes(deviceName, attrs);
    }

    /** Allocates a protection domain ({@code ibv_alloc_pd}). */
    public ProtectionDomain allocateProtectionDomain() throws NativeIoException {
        long pd = NativeIoException.check("ibv_alloc_pd on " + deviceName, ProtectionDomain.allocate(handle()));
        ProtectionDomain result = new ProtectionDomain(pd, this);
        children.add(result);
        return result;
    }

    /** Creates a completion channel ({@code ibv_create_comp_channel}) plus its wake-up eventfd. */
    public CompletionChannel createCompletionChannel() throws NativeIoException {
        long ch = NativeIoException.check("ibv_create_comp_channel on " + deviceName,
            CompletionChannel.create(handle()));
        CompletionChannel result = new CompletionChannel(ch, this);
        children.add(result);
        return result;
    }

    /**
     * Creates a completion queue of at least {@code minEntries} entries ({@code ibv_create_cq}); its events go to
     * {@code channel} when not null (then {@link CompletionQueue#requestNotify(boolean)} arms it).
     *
     * @param vector the completion vector (interrupt) to use, 0 ≤ vector &lt; num_comp_vectors
     */
    public CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int vector)
            throws NativeIoException {
        if (minEntries <= 0) {
            throw new IllegalArgumentException("completion queue size must be positive: " + minEntries);
        }
        if (channel != null && channel.nativeContext() != nativeContext) {
            throw new IllegalArgumentException(channel + " belongs to another device context than " + this);
        }
        long cq = NativeIoException.check("ibv_create_cq(" + minEntries + ") on " + deviceName,
            CompletionQueue.create(handle(), minEntries, channel == null ? 0 : channel.handleForChild(), vector));
        CompletionQueue result = new CompletionQueue(cq, this, channel);
        if (channel != null) {
            channel.attach(result);
        } else {
            children.add(result);
        }
        return result;
    }

    void detach(NativeHandle child) {
        children.remove(child);
    }

    long handleForChild() {
        return handle();
    }

    /** True when this context is librdmacm's (from a CM id), false when opened by {@link Rdma#openDevice}. */
    public boolean isShared() {
        return !owned;
    }

    /**
     * Closes the children still open (PDs, channels, CQs created here), then the device when this object owns it
     * (a shared context stays open: librdmacm owns it).
     */
    @Override
    protected void release(long handle) {
        if (!owned) {
            SHARED.remove(nativeContext, this);
        }
        RuntimeException childFailure = children.closeAllCollecting();
        int rc = owned ? close0(handle) : 0;
        Children.checkDestroy("ibv_close_device " + deviceName, rc, childFailure);
    }

    /** ibv_open_device on the device called {@code name}; pointer or -errno (-ENODEV when no such device). */
    private static native long open0(String name);

    /** ibv_query_device + ibv_query_port into {@code attrs} (layout in RdmaDevice); 0 or -errno. */
    private static native int query0(long context, long[] attrs);

    /** ibv_close_device; 0 or -errno. */
    private static native int close0(long context);
}
