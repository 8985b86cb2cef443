package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/**
 * An opened RDMA device ({@code struct ibv_context}): the parent of protection domains, completion channels and
 * completion queues.
 *
 * <p>Two origins: {@link Rdma#openDevice(String)} opens one that this object owns ({@code ibv_close_device} on
 * close); {@link CmId#verbsContext()} returns the context librdmacm opened for the device a CM id is bound to,
 * which librdmacm shares between all ids on that device and frees itself (closing this object then only marks it
 * closed). Queue pairs of a CM id must use a protection domain and completion queues of that id's context.
 */
public final class VerbsContext extends NativeHandle {
    private final String deviceName;
    private final boolean owned;
    @SuppressWarnings("unused") // keeps the CmId this context came from reachable
    private final Object owner;
    private final Children children = new Children();

    VerbsContext(long handle, String deviceName, boolean owned, Object owner) {
        super(handle, "verbs context " + deviceName);
        this.deviceName = deviceName;
        this.owned = owned;
        this.owner = owner;
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
        if (channel != null && channel.context() != this) {
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

    /** Closes the children still open (PDs, channels, CQs created here), then the device when this object owns it. */
    @Override
    protected void release(long handle) {
        children.closeAll();
        if (owned) {
            close0(handle);
        }
    }

    /** ibv_open_device on the device called {@code name}; pointer or -errno (-ENODEV when no such device). */
    private static native long open0(String name);

    /** ibv_query_device + ibv_query_port into {@code attrs} (layout in RdmaDevice); 0 or -errno. */
    private static native int query0(long context, long[] attrs);

    /** ibv_close_device; 0 or -errno. */
    private static native int close0(long context);
}
