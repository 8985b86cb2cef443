package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;

/** An open of a {@link Bdev} (SPDK's {@code spdk_bdev_desc}); keeps its device reachable. */
public final class BdevDescriptor extends NativeHandle {
    private final Bdev bdev;
    private final boolean writable;

    BdevDescriptor(long handle, Bdev bdev, boolean writable) {
        super(handle, "descriptor of bdev " + bdev.name());
        this.bdev = bdev;
        this.writable = writable;
    }

    public Bdev bdev() {
        return bdev;
    }

    public boolean isWritable() {
        return writable;
    }

    /**
     * This descriptor's I/O channel on {@code group} (SPDK's {@code spdk_bdev_get_io_channel}): call on the group's
     * thread, once per group; completions go to {@code handler} on that thread.
     */
    public BdevIoChannel ioChannel(BdevPollGroup group, BdevCompletionHandler handler) throws NativeIoException {
        long h = BdevNative.channelCreate0(handle(), group.nativeHandle());
        NativeIoException.check("create an I/O channel for " + bdev.name(), h);
        return new BdevIoChannel(h, this, group, handler);
    }

    long nativeHandle() {
        return handle();
    }

    @Override
    protected void release(long handle) {
        BdevNative.closeDesc0(handle);
    }
}
