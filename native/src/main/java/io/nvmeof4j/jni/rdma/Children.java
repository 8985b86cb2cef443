package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;

import java.util.ArrayList;
import java.util.List;

/**
 * The open children of a native parent (control path only). rdma-core refuses to free a parent with live children
 * ({@code ibv_dealloc_pd}, {@code ibv_destroy_cq} and {@code ibv_destroy_comp_channel} fail with EBUSY and leak),
 * so a parent's close closes the children still open first, newest first (queue pairs before the regions, CQs and
 * PDs they use).
 */
final class Children {
    private final List<NativeHandle> open = new ArrayList<>();

    synchronized void add(NativeHandle child) {
        open.add(child);
    }

    synchronized void remove(NativeHandle child) {
        open.remove(child);
    }

    /**
     * Closes every child, even when one fails; the first failure is thrown afterwards (the others suppressed), so
     * the parent can still try its own destroy and report.
     */
    void closeAll() {
        List<NativeHandle> copy;
        synchronized (this) {
            copy = new ArrayList<>(open);
            open.clear();
        }
        RuntimeException failure = null;
        for (int i = copy.size() - 1; i >= 0; i--) {
            try {
                copy.get(i).close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    synchronized int size() {
        return open.size();
    }

    /**
     * Reports a failed destroy from a {@code release}: the Java object is closed already (the native object is leaked
     * rather than freed while in use), and {@code close()} throws this, naming the call and the errno.
     *
     * @param childFailure a failure of closing a child first, or null: thrown with the destroy's as suppressed
     */
    static void checkDestroy(String call, int rc, RuntimeException childFailure) {
        RuntimeException failure = childFailure;
        if (rc < 0) {
            IllegalStateException e = new IllegalStateException(call + " failed: " + Errno.describe(-rc)
                + " (the native object is leaked, not freed while in use)");
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Runs {@link #closeAll()} and returns its failure instead of throwing it. */
    RuntimeException closeAllCollecting() {
        try {
            closeAll();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }
}
