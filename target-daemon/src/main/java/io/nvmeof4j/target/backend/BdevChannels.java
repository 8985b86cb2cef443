package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.jni.bdev.BdevPollGroup;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.protocol.spi.JvmOptions;
import io.nvmeof4j.protocol.spi.PollGroup;
import io.nvmeof4j.target.reactor.InFlightAware;
import io.nvmeof4j.target.reactor.Reactor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.channels.Selector;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * One reactor's block-device poll group: the io_uring every {@link UringBlockDevice} used on this reactor submits
 * to, with the reactor's buffer pool registered as a fixed buffer, and one {@link BdevIoChannel} per device,
 * opened when a queue of the device's subsystem connects on this reactor ({@link ReactorBackends}; SPDK: a bdev's
 * I/O channel per thread, taken when the subsystem joins the poll group). The reactor polls it in
 * the same loop as its transport: {@link #poll()} hands the round's submissions to the kernel in one call and reaps
 * completions in one call, completing their commands on this thread.
 * <h2>A full ring waits, it never fails</h2>
 * The ring holds {@link #entries()} I/Os; the commands in flight on a reactor are bounded only by the hosts'
 * queue depths (several controllers at QD128 exceed 4,096). An I/O that finds every slot taken, or finds others
 * already waiting, joins this reactor's {@link BlockIoFifo} (linked through the {@link BlockIo} itself: preallocated
 * per queue slot, so waiting allocates nothing) and is submitted, in order, as completions free slots in {@link #poll()}.
 * Each I/O that had to wait is counted ({@link #waits()}, the metric
 * {@code nvmeof.target.resource.waits{resource="io_uring"}}).
 * <h2>Waking the reactor</h2>
 * On a reactor that blocks in a selector (NVMe/TCP), the ring's completions wake that selector
 * ({@link #wakeSelector}: the selector's own eventfd is the ring's completion eventfd, armed only while the reactor
 * blocks), so the reactor waits on one thing. Elsewhere the reactor waits in {@link #await} with a bound.
 * <p>Reactor thread only (the devices find it with {@link Reactor#current()}).
 */
public final class BdevChannels implements PollGroup, InFlightAware {
    private static final Logger LOG = LoggerFactory.getLogger(BdevChannels.class);
    /** System property: io_uring entries per reactor (tests shrink it to make the ring overflow). */
    public static final String ENTRIES_PROP_NAME = "nvmeof4j.io_uring.entries";
    public static final int ENTRIES_DEFAULT = 4096;
    /** The kernel's IORING_MAX_ENTRIES; the ring's own check asks the native layer, which is not loaded yet here. */
    public static final int ENTRIES_MAX = 32768;
    /**
     * System property: false keeps the ring off the reactor's selector (the reactor then waits in the ring, 200 us at
     * a time, while I/O is in flight: the behaviour before issue 17), for before/after comparisons.
     */
    public static final String WAKE_SELECTOR_PROP_NAME = "nvmeof4j.io_uring.wake_selector";

    private final String name;
    private final BdevPollGroup group;
    private final OffHeapBufferPool pool;
    private BdevIoChannel[] channels = new BdevIoChannel[4];
    private boolean closed;
    private final BlockIoFifo waiting = new BlockIoFifo();
    /** Written by the reactor only; read by the metrics scrape. */
    private volatile long waits;
    /** The selector this ring's completions wake, or null. */
    private Selector wakes;
    /** The reactor thread this group belongs to, once known. */
    private volatile Thread owner;

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

    /**
     * Ring entries per reactor: {@value #ENTRIES_PROP_NAME} (1..{@value #ENTRIES_MAX}), else
     * {@value #ENTRIES_DEFAULT}.
     */
    public static int entriesFromProperty() {
        return JvmOptions.intOption(ENTRIES_PROP_NAME, ENTRIES_DEFAULT, 1, ENTRIES_MAX);
    }

    /** {@value #WAKE_SELECTOR_PROP_NAME}, else true. */
    public static boolean wakeSelectorFromProperty() {
        return JvmOptions.booleanOption(WAKE_SELECTOR_PROP_NAME, true);
    }

    public int entries() {
        return group.capacity();
    }

    /** I/Os that found the ring full (or others waiting) and waited for a slot, since start. Any thread. */
    public long waits() {
        return waits;
    }

    /** True while I/Os wait for a ring slot: a new one must queue behind them (first come, first served). */
    boolean hasWaiting() {
        return !waiting.isEmpty();
    }

    /** {@code io} waits for a ring slot; {@link #poll()} submits it for {@code device} when one frees. */
    void park(BlockIo io, UringBlockDevice device) {
        io.waitingDevice = device;
        waiting.add(io);
        waits = waits + 1; // the reactor is the only writer
    }

    /** Submits waiting I/Os, oldest first, while the ring has free slots. Returns how many left the queue. */
    private int resumeWaiting() {
        int n = 0;
        while (!waiting.isEmpty() && group.available() > 0) {
            BlockIo io = waiting.poll();
            UringBlockDevice device = io.waitingDevice;
            io.waitingDevice = null;
            n++;
            if (!device.resume(io, this)) {
                break; // parked again at the tail: the ring is full after all
            }
        }
        return n;
    }

    /** Completes the waiting I/Os of {@code device} (or of every device, when null) with {@code status}. */
    private void failWaiting(UringBlockDevice device, int status) {
        BlockIoFifo.completeAll(waiting.removeAll(device == null ? null : io -> io.waitingDevice == device), status);
    }

    /**
     * Completes the I/Os waiting for a ring slot that {@code which} selects with {@code status}, keeping the others
     * in order (Preempt and Abort: the preempted hosts' commands end before they reach the device). Returns how many.
     * Reactor thread.
     */
    public int abortWaiting(Predicate<BlockIo> which, int status) {
        if (waiting.isEmpty()) {
            return 0;
        }
        BlockIo chain = waiting.removeAll(which);
        int n = 0;
        for (BlockIo io = chain; io != null; io = io.waitingNext) {
            n++;
        }
        BlockIoFifo.completeAll(chain, status);
        return n;
    }

    /** The group of the calling reactor, or null off a reactor thread (or on a reactor without one). */
    static BdevChannels current() {
        Reactor reactor = Reactor.current();
        return reactor == null ? null : reactor.pollGroup(BdevChannels.class);
    }

    /** This ring is {@code reactorThread}'s (found through that thread's reactor); the first caller tells. */
    void ownedBy(Thread reactorThread) {
        if (owner == null) {
            owner = reactorThread;
        }
    }

    /**
     * The ring {@code io} runs on when submitted from the calling thread, or null off the reactors: the one bound to
     * the descriptor when its queue connected on this reactor ({@link ReactorBackends}), while the caller is that
     * ring's reactor (the common case: one field read and a thread compare); else looked up and bound anew (a
     * descriptor no queue bound, a tool's, or a step resumed on another thread).
     */
    static BdevChannels bound(BlockIo io) {
        BdevChannels ring = io.boundRing;
        if (ring != null && ring.owner == Thread.currentThread()) {
            return ring;
        }
        ring = current();
        if (ring != null) {
            ring.ownedBy(Thread.currentThread()); // current() found it through this thread's reactor
        }
        if (ring != io.boundRing) {
            io.boundRing = ring;
            io.boundDevice = null;
            io.boundChannel = null;
        }
        return ring;
    }

    /** The device's channel on this ring for {@code io}: the one bound to the descriptor, else resolved and bound. */
    BdevIoChannel boundChannel(BlockIo io, UringBlockDevice device) throws NativeIoException {
        BdevIoChannel ch = io.boundChannel;
        if (io.boundDevice == device && ch != null && !ch.isClosed()) {
            return ch;
        }
        ch = channel(device);
        io.boundDevice = device;
        io.boundChannel = ch;
        return ch;
    }

    BdevPollGroup group() {
        return group;
    }

    /** Offset of {@code buffer} in the registered region, or -1 (not a pool buffer, or nothing registered). */
    long regionOffset(ByteBuffer buffer) {
        return pool == null || !group.fixedBuffers() ? -1 : pool.regionOffset(buffer);
    }

    /** The device's channel on this reactor if one is open, else null (nothing is opened). */
    BdevIoChannel existingChannel(UringBlockDevice device) {
        int id = device.id();
        BdevIoChannel ch = id < channels.length ? channels[id] : null;
        return ch == null || ch.isClosed() ? null : ch;
    }

    /**
     * The device's channel on this reactor, opened if it has none (allocates once per device and reactor): when a
     * queue of the device's subsystem connects here, or the device's namespace is added live
     * ({@link ReactorBackends#open}); else (one that could not be opened then, a tool's I/O) at its first I/O here.
     */
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
        failWaiting(device, DeviceSupport.STATUS_CLOSED);
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
        int n = group.poll();
        if (!waiting.isEmpty()) {
            n += resumeWaiting();
        }
        return n;
    }

    @Override
    public boolean hasInFlight() {
        return group.inFlight() > 0 || !waiting.isEmpty();
    }

    @Override
    public void await(long timeoutNanos) {
        group.await(timeoutNanos);
    }

    @Override
    public boolean wakeSelector(Selector selector) {
        if (closed || !wakeSelectorFromProperty()) {
            return false;
        }
        int rc = group.wakeSelector(selector);
        if (rc != 0) {
            LOG.info("{}: io_uring completions cannot wake the reactor's selector ({}): {}", name,
                io.nvmeof4j.jni.Errno.describe(-rc), rc == -io.nvmeof4j.jni.Errno.EOPNOTSUPP
                    ? "this JDK's selector has no eventfd" : "kernel before 5.8, or already joined");
            return false;
        }
        wakes = selector;
        return true;
    }

    @Override
    public boolean wakes(Selector selector) {
        return wakes == selector && selector != null;
    }

    @Override
    public boolean armWakeup() {
        return group.armWakeup();
    }

    @Override
    public void disarmWakeup() {
        if (wakes != null && !closed) {
            group.disarmWakeup();
        }
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
        failWaiting(null, DeviceSupport.STATUS_CLOSED);
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
