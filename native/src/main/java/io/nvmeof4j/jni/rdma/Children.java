package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.NativeHandle;

import java.util.ArrayList;
import java.util.List;

/**
 * The open children of a native parent (control path only). rdma-core refuses to free a parent with live children
 * ({@code ibv_dealloc_pd} and {@code ibv_destroy_comp_channel} fail with EBUSY and leak), so a parent's close closes
 * the children still open first, newest first.
 */
final class Children {
    private final List<NativeHandle> open = new ArrayList<>();

    synchronized void add(NativeHandle child) {
        open.add(child);
    }

    synchronized void remove(NativeHandle child) {
        open.remove(child);
    }

    void closeAll() {
        List<NativeHandle> copy;
        synchronized (this) {
            copy = new ArrayList<>(open);
            open.clear();
        }
        for (int i = copy.size() - 1; i >= 0; i--) {
            copy.get(i).close();
        }
    }

    synchronized int size() {
        return open.size();
    }
}
