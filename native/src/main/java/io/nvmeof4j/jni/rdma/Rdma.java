package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.NativeLibrary;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Entry point of the RDMA JNI layer (libnvmeof4j-rdma over rdma-core's libibverbs and librdmacm): whether RDMA can
 * be used here, and the devices there are.
 *
 * <p>RDMA is optional: on a machine without rdma-core or without an RDMA device {@link #isAvailable()} is false and
 * {@link #unavailabilityCause()} says why, so the daemon keeps serving NVMe/TCP. Every other class of this package
 * assumes the library is loaded; their factories call {@link #ensureLoaded()} first.
 *
 * <p>Threading: the verbs objects are used by one thread at a time (the reactor owning them), except where a
 * class says otherwise: {@link CompletionChannel#wakeup()} and {@link CmEventChannel#wakeup()} from any thread at
 * any time (a no-op once closed); {@code close()} of channels, completion queues, CM ids and queue pairs from any
 * thread (they wait for a thread blocked in a wait on the channel, after waking it);
 * {@link CompletionQueue#ackEvents()} from any thread; the CM event channel's waits from several threads.
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
     * platform, rdma-core (libibverbs/librdmacm) is not installed, there are no RDMA devices, none of them can be
     * opened and queried (each one's reason is kept), or no RDMA CM event channel can be created (no
     * {@code /dev/infiniband/rdma_cm}: the {@code rdma_ucm} module is not loaded, or no permission).
     */
    public static Throwable unavailabilityCause() {
        if (LOAD_FAILURE != null) {
            return LOAD_FAILURE;
        }
        return cause(deviceNames0(), Rdma::queryDevice0, () -> {
            try {
                CmEventChannel.create().close();
                return null;
            } catch (NativeIoException e) {
                return e;
            }
        });
    }

    /** The cause logic of {@link #unavailabilityCause()} over its three probes (separate for the unit test). */
    static Throwable cause(String[] names, BiFunction<String, long[], Integer> query,
                           java.util.function.Supplier<NativeIoException> cmProbe) {
        if (names == null || names.length == 0) {
            return new IllegalStateException("no RDMA devices (ibv_get_device_list found none; load a driver or "
                + "add a Soft-RoCE device: rdma link add rxe0 type rxe netdev eth0)");
        }
        Map<String, NativeIoException> failed = new LinkedHashMap<>();
        if (probe(names, query, failed).isEmpty()) {
            StringBuilder why = new StringBuilder("no usable RDMA device:");
            failed.forEach((name, e) -> why.append(' ').append(name).append(": ").append(e.getMessage()).append(';'));
            IllegalStateException e = new IllegalStateException(why.substring(0, why.length() - 1));
            failed.values().forEach(e::addSuppressed);
            e.initCause(failed.values().iterator().next());
            return e;
        }
        NativeIoException cm = cmProbe.get();
        if (cm != null) {
            return new IllegalStateException("RDMA CM is unavailable (" + cm.getMessage() + "; is the rdma_ucm "
                + "module loaded and /dev/infiniband/rdma_cm accessible?)", cm);
        }
        return null;
    }

    /** Queries each device; the ones that fail go to {@code failed} with their reason. */
    static List<RdmaDevice> probe(String[] names, BiFunction<String, long[], Integer> query,
                                  Map<String, NativeIoException> failed) {
        List<RdmaDevice> devices = new ArrayList<>();
        if (names == null) {
            return devices;
        }
        for (String name : names) {
            long[] attrs = new long[RdmaDevice.ATTR_COUNT];
            int rc = query.apply(name, attrs);
            if (rc < 0) {
                failed.put(name, new NativeIoException("ibv_open_device/ibv_query_device " + name, -rc));
            } else {
                devices.add(RdmaDevice.fromAttributes(name, attrs));
            }
        }
        return devices;
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
     * {@code ibv_open_device} + {@code ibv_query_device} + {@code ibv_query_port} on each). A device that cannot be
     * opened or queried is left out ({@link #unusableDevices()} says why). Empty when there are none; throws
     * {@link UnsupportedOperationException} when the library did not load.
     */
    public static List<RdmaDevice> devices() throws NativeIoException {
        ensureLoaded();
        Map<String, NativeIoException> failed = new LinkedHashMap<>();
        List<RdmaDevice> devices = probe(deviceNames0(), Rdma::queryDevice0, failed);
        unusable = Collections.unmodifiableMap(failed);
        return devices;
    }

    private static volatile Map<String, NativeIoException> unusable = Map.of();

    /** The devices the last {@link #devices()} call left out, with the failure of each (empty when none). */
    public static Map<String, NativeIoException> unusableDevices() {
        return unusable;
    }

    /** Opens device {@code name} ({@code ibv_open_device}); the caller owns the returned context. */
    public static VerbsContext openDevice(String name) throws NativeIoException {
        ensureLoaded();
        if (name == null) {
            throw new IllegalArgumentException("device name is null");
        }
        long ctx = NativeIoException.check("ibv_open_device " + name, VerbsContext.open(name));
        return new VerbsContext(ctx, name, true);
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

    /**
     * One JNI crossing that does nothing, with the shape of a post or poll native (two longs and an int in, a
     * long out): the baseline the JNI benchmark compares {@code postSend}/{@code poll} with. Not for production use.
     */
    public static long noop(long a, long b, int c) {
        return noop0(a, b, c);
    }

    /** A zeroed direct buffer of {@code size} bytes aligned to {@code alignment}, in native byte order. */
    static ByteBuffer allocateAligned(int size, int alignment) {
        // alignedSlice rounds the end down as well: allocate whole alignment units, plus one for the start
        int rounded = (size + alignment - 1) / alignment * alignment;
        ByteBuffer raw = ByteBuffer.allocateDirect(rounded + alignment);
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

    /** Returns 0; the benchmark baseline. */
    private static native long noop0(long a, long b, int c);

    /** {@code GetDirectBufferAddress}. */
    private static native long bufferAddress0(ByteBuffer buffer);
}
