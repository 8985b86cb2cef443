package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.jni.bdev.BdevPollGroup;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.target.reactor.InFlightAware;
import io.nvmeof4j.target.reactor.Reactor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * One reactor's block-device poll group: the io_uring every {@link UringBlockDevice} used on this reactor submits
 * to, with the reactor's buffer pool registered as a fixed buffer, and one {@link BdevIoChannel} per device,
 * created the first time the device is used here (SPDK: a bdev's I/O channel per thread). The reactor polls it in
 * the same loop as its transport: {@link #poll()} hands the round's submissions to the kernel in one call and reaps
 * completions in one call, completing their commands on this thread.
 * <p>Reactor thread only (the devices find it with {@link Reactor#current()}).
 */
public final class BdevChannels implements PollGroup, InFlightAware {
    private static final Logger LOG = LoggerFactory.getLogger(BdevChannels.class);

    private final String name;
    private final BdevPollGroup group;
    private final OffHeapBufferPool pool;
    private BdevIoChannel[] channels = new BdevIoChannel[4];
    private boolean closed;

    /**
     * @param pool the reactor's buffer pool; its region (when it has one) is registered as io_uring fixed buffer
     */
    public BdevChannels(String name, OffHeapBufferPool pool, int capacity) throws NativeIoException {
        this.name = name;
        this.pool = pool;
        ByteBuffer region = pool == null ? null : pool.region();
        this.group = new BdevPollGroup(capacity, region);
        if (region != null && !group.fixedBuffers()) {
            LOG.warn("{}: registering the {}-byte buffer pool as io_uring fixed buffers failed (errno {}; "
                + "RLIMIT_MEMLOCK?): block I/O pins its pages per I/O instead", name, region.capacity(),
                group.fixedBuffersErrno());
        }
    }

    /** The group of the calling reactor, or null off a reactor thread (or on a reactor without one). */
    static BdevChannels current() {
        Reactor reactor = Reactor.current();
        return reactor == null ? null : reactor.pollGroup(BdevChannels.class);
    }

    BdevPollGroup group() {
        return group;
    }

    /** Offset of {@code buffer} in the registered region, or -1 (not a pool buffer, or nothing registered). */
    long regionOffset(ByteBuffer buffer) {
        return pool == null || !group.fixedBuffers() ? -1 : pool.regionOffset(buffer);
    }

    /** The device's channel on this reactor, created on first use (allocates once per device and reactor). */
    BdevIoChannel channel(UringBlockDevice device) throws NativeIoException {
        int id = device.id();
        if (id >= channels.length) {
            channels = Arrays.copyOf(channels, Math.max(id + 1, channels.length * 2));
        }
        BdevIoChannel ch = channels[id];
        if (ch == null || ch.isClosed()) {
            if (closed) {
                throw new IllegalStateException(name + " is closed");
            }
            ch = device.descriptor().ioChannel(group, device);
            channels[id] = ch;
        }
        return ch;
    }

    /**
     * Takes {@code device} off this reactor (live namespace removal): waits until its channel has no I/O in flight,
     * polling this reactor's ring meanwhile (which completes those commands), then closes the channel. Returns false
     * when I/O was still in flight at {@code deadlineNanos} ({@link System#nanoTime()}): the channel stays open and
     * the device must not be closed. The device refuses new I/O before this is called. Reactor thread.
     */
    boolean closeChannel(UringBlockDevice device, long deadlineNanos) {
        int id = device.id();
        BdevIoChannel ch = id < channels.length ? channels[id] : null;
        if (ch == null) {
            return true;
        }
        while (ch.inFlight() > 0) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            if (group.poll() == 0) {
                group.await(Math.min(left, TimeUnit.MILLISECONDS.toNanos(1)));
            }
        }
        ch.close();
        channels[id] = null;
        return true;
    }

    @Override
    public int poll() {
        return group.poll();
    }

    @Override
    public boolean hasInFlight() {
        return group.inFlight() > 0;
    }

    @Override
    public void await(long timeoutNanos) {
        group.await(timeoutNanos);
    }

    /** The ring wait cannot be interrupted from another thread; the reactor bounds it instead. */
    @Override
    public void wakeup() {
    }

    /** Waits (bounded) for the I/O in flight, completing its commands, then closes the channels and the ring. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            group.close();
        } finally {
            for (BdevIoChannel ch : channels) {
                if (ch != null) {
                    ch.close();
                }
            }
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
