package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.NativeLibrary;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Entry point of the RDMA JNI layer (libnvmeof4j-rdma over rdma-core's libibverbs and librdmacm): whether RDMA can
 * be used here, and the devices there are.
 *
 * <p>RDMA is optional: on a machine without rdma-core or without an RDMA device {@link #isAvailable()} is false and
 * {@link #unavailabilityCause()} says why, so the daemon keeps serving NVMe/TCP. Every other class of this package
 * assumes the library is loaded; their factories call {@link #ensureLoaded()} first.
 *
 * <p>Threading: the verbs objects are used by one thread at a time (the reactor owning them), except where a
 * method says otherwise ({@link CompletionChannel#wakeup()}, {@link CmEventChannel#wakeup()}).
 */
public final class Rdma {
    private static final Throwable LOAD_FAILURE;

    static {
        Throwable failure = NativeLibrary.load("rdma");
        if (failure != null) {
            failure = describeLoadFailure(failure);
        } else {
            try {
                RdmaLayout.init();
            } catch (Throwable t) {
                failure = t;
            }
        }
        LOAD_FAILURE = failure;
    }

    private Rdma() {
    }

    /**
     * True when libnvmeof4j-rdma and rdma-core are loaded and at least one RDMA device exists (devices are looked
     * up on every call, so a Soft-RoCE device added after start counts).
     */
    public static boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /**
     * Why RDMA cannot be used, or {@code null} when it can: the JNI library is missing or built for another
     * platform, rdma-core (libibverbs/librdmacm) is not installed, or there are no RDMA devices.
     */
    public static Throwable unavailabilityCause() {
        if (LOAD_FAILURE != null) {
            return LOAD_FAILURE;
        }
        String[] names = deviceNames0();
        if (names == null || names.length == 0) {
            return new IllegalStateException("no RDMA devices (ibv_get_device_list found none; load a driver or "
                + "add a Soft-RoCE device: rdma link add rxe0 type rxe netdev eth0)");
        }
        return null;
    }

    /** True when the JNI library and rdma-core loaded (devices may still be missing). */
    public static boolean isLoaded() {
        return LOAD_FAILURE == null;
    }

    /** Throws {@link UnsupportedOperationException} with the load failure as cause when the library did not load. */
    public static void ensureLoaded() {
        if (LOAD_FAILURE != null) {
            throw new UnsupportedOperationException("RDMA is unavailable: " + LOAD_FAILURE.getMessage(), LOAD_FAILURE);
        }
    }

    /**
     * The RDMA devices of this machine with their attributes ({@code ibv_get_device_list}, then
     * {@code ibv_open_device} + {@code ibv_query_device} + {@code ibv_query_port} on each). Empty when there are none;
     * throws {@link UnsupportedOperationException} when the library did not load.
     */
    public static List<RdmaDevice> devices() throws NativeIoException {
        ensureLoaded();
        String[] names = deviceNames0();
        List<RdmaDevice> devices = new ArrayList<>();
        if (names == null) {
            return devices;
        }
        for (String name : names) {
            long[] attrs = new long[RdmaDevice.ATTR_COUNT];
            NativeIoException.check("ibv_query_device " + name, queryDevice0(name, attrs));
            devices.add(RdmaDevice.fromAttributes(name, attrs));
        }
        return devices;
    }

    /** Opens device {@code name} ({@code ibv_open_device}); the caller owns the returned context. */
    public static VerbsContext openDevice(String name) throws NativeIoException {
        ensureLoaded();
        if (name == null) {
            throw new IllegalArgumentException("device name is null");
        }
        long ctx = NativeIoException.check("ibv_open_device " + name, VerbsContext.open(name));
        return new VerbsContext(ctx, name, true, null);
    }

    /**
     * The native address of a direct buffer's first byte ({@code GetDirectBufferAddress}); control path only
     * (callers cache it and compute {@code address + offset} on the data path).
     */
    public static long address(ByteBuffer buffer) {
        ensureLoaded();
        if (buffer == null || !buffer.isDirect()) {
            throw new IllegalArgumentException("a direct ByteBuffer is needed, got " + buffer);
        }
        long address = bufferAddress0(buffer);
        if (address == 0) {
            throw new IllegalArgumentException("no native address for " + buffer);
        }
        return address;
    }

    /** A zeroed direct buffer of {@code size} bytes aligned to {@code alignment}, in native byte order. */
    static ByteBuffer allocateAligned(int size, int alignment) {
        ByteBuffer raw = ByteBuffer.allocateDirect(size + alignment);
        ByteBuffer aligned = raw.alignedSlice(alignment);
        aligned.limit(size);
        return aligned.slice().order(ByteOrder.nativeOrder());
    }

    private static Throwable describeLoadFailure(Throwable failure) {
        String message = String.valueOf(failure.getMessage());
        if (message.contains("libibverbs") || message.contains("librdmacm")) {
            UnsatisfiedLinkError e = new UnsatisfiedLinkError("rdma-core is missing (install rdma-core, "
                + "libibverbs1 and librdmacm1): " + message);
            e.initCause(failure);
            return e;
        }
        UnsatisfiedLinkError e = new UnsatisfiedLinkError("libnvmeof4j-rdma could not be loaded: " + message);
        e.initCause(failure);
        return e;
    }

    /** Names of the devices {@code ibv_get_device_list} returns (empty when none or when verbs are missing). */
    private static native String[] deviceNames0();

    /** Opens device {@code name}, fills {@code attrs} (see {@link RdmaDevice}), closes it; 0 or -errno. */
    private static native int queryDevice0(String name, long[] attrs);

    /** {@code GetDirectBufferAddress}. */
    private static native long bufferAddress0(ByteBuffer buffer);
}
