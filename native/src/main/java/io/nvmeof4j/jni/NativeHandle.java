package io.nvmeof4j.jni;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Base of every Java object owning a native resource (RocksDB's {@code AbstractNativeReference}, stricter):
 * {@link #close()} is idempotent and guarded by a CAS, so exactly one caller frees the resource; use after close
 * throws {@link IllegalStateException} from {@link #handle()} instead of handing a dangling pointer to C.
 * A subclass keeps references to its parents (a queue pair to its protection domain and completion queues) so
 * that a parent is never collected, or freed by a finaliser, while a child still uses it.
 *
 * <p>A handle is used by one thread at a time (its reactor); closing it from another thread while a call is in
 * flight is the owner's job to prevent (reactors close what they own on their own thread), unless the subclass
 * says otherwise (the RDMA channels, completion queues, CM ids and queue pairs make close safe from any thread).
 * A {@link #release} that fails throws after the object is marked closed: close reports it once.
 */
public abstract class NativeHandle implements AutoCloseable {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(NativeHandle.class, "closed", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long handle;
    private final String description;
    @SuppressWarnings("unused") // accessed through CLOSED
    private volatile int closed;

    protected NativeHandle(long handle, String description) {
        if (handle == 0) {
            throw new IllegalArgumentException("null native handle for " + description);
        }
        this.handle = handle;
        this.description = description;
    }

    /** The native pointer; throws when this object was closed. */
    protected final long handle() {
        if (closed != 0) {
            throw new IllegalStateException(description + " is closed");
        }
        return handle;
    }

    public final boolean isClosed() {
        return closed != 0;
    }

    /** Frees the native resource; only the first call does anything. */
    @Override
    public final void close() {
        if (CLOSED.compareAndSet(this, 0, 1)) {
            release(handle);
        }
    }

    /** Frees the resource behind {@code handle}; called exactly once. */
    protected abstract void release(long handle);

    @Override
    public String toString() {
        return description + (closed != 0 ? " (closed)" : "");
    }
}
