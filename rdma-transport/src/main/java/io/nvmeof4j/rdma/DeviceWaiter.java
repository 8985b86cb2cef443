package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CompletionChannel;
import io.nvmeof4j.jni.rdma.CompletionChannelSet;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * A poll group's {@link CompletionWaiter} over the JNI completion channels of the devices it serves, the target's
 * and the host's alike: one {@code ppoll} over every channel and its wake-up eventfd ({@link CompletionChannelSet}),
 * so a completion on any device ends the wait at once; the events it took are acknowledged before it returns.
 * Before the first queue arrives (no channel yet) the thread parks.
 * <p>On a target reactor that also serves NVMe/TCP, the reactor blocks in its selector instead
 * ({@link #joinSelector}): every channel, and every one added later, joins the selector's epoll set
 * ({@link CompletionChannel#joinSelector}, one shot); before each select {@link #enterSelect()} takes the pending
 * events without blocking (a wait of 0, which re-arms the joins of the channels it found readable) and routes
 * {@link #wakeup()} to the selector until {@link #leaveSelect()}.
 */
public final class DeviceWaiter implements CompletionWaiter {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceWaiter.class);
    /** Events taken per wait at most: one per armed completion queue; more stay pending for the next wait. */
    static final int MAX_EVENTS = 32;
    /** After a failed wait (a channel's fd gone bad): park this long, so that a broken channel is not spun on. */
    private static final long FAILED_WAIT_PARK_NANOS = 1_000_000;
    /** Why a selector cannot be joined is said once per JVM (every reactor would say the same). */
    private static final AtomicBoolean UNJOINABLE_SAID = new AtomicBoolean();

    private final CompletionChannelSet channels = new CompletionChannelSet(MAX_EVENTS);
    /** The channels added, to join a selector given later (control path, under this). */
    private final List<CompletionChannel> members = new ArrayList<>();
    private volatile Thread parked;
    private volatile boolean woken;
    /** The selector every channel joined, or null. Written under this. */
    private volatile Selector selector;
    /** True between enterSelect and leaveSelect: wake-ups go to the selector. */
    private volatile boolean inSelect;

    /** Adds the channel of a device the group now serves (control path: the set's layout is rebuilt). */
    public void add(CompletionChannel channel) {
        synchronized (this) {
            channels.add(channel);
            members.add(channel);
            Selector s = selector;
            if (s != null) {
                int rc = channel.joinSelector(s);
                if (rc != 0) {
                    LOG.warn("{} cannot join the reactor's selector ({}): its completions are noticed at the reactor's "
                        + "idle bound only", channel, Errno.describe(-rc));
                }
            }
        }
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t); // wait on the channels from now on
        }
    }

    @Override
    public synchronized boolean joinSelector(Selector s) {
        if (selector != null) {
            return selector == s;
        }
        int rc = CompletionChannel.joinable(s);
        if (rc != 0) {
            if (UNJOINABLE_SAID.compareAndSet(false, true)) {
                LOG.info("RDMA completion channels cannot join the NVMe/TCP selector ({}: {}): a reactor serving both "
                    + "wakes every millisecond to look at the other", Errno.describe(-rc),
                    rc == -Errno.EOPNOTSUPP ? "not the JDK's epoll selector" : "selector closed");
            }
            return false;
        }
        for (CompletionChannel c : members) {
            if (c.isClosed()) {
                continue;
            }
            rc = c.joinSelector(s);
            if (rc != 0) {
                LOG.warn("{} cannot join the reactor's selector ({}): the reactor keeps a bounded wait", c,
                    Errno.describe(-rc));
                return false;
            }
        }
        selector = s;
        return true;
    }

    @Override
    public Selector joinedSelector() {
        return selector;
    }

    @Override
    public void enterSelect() {
        inSelect = true; // before the poll group raises its sleeping flag: a producer seeing that sees this
        if (channels.size() == 0) {
            return;
        }
        try {
            acknowledge(channels.await(0));
        } catch (NativeIoException | IllegalStateException e) {
            LOG.debug("taking the events of {} completion channel(s) failed: {}", channels.size(), e.getMessage());
        }
    }

    @Override
    public void leaveSelect() {
        inSelect = false;
    }

    @Override
    public void await(long timeoutNanos) {
        if (channels.size() == 0) {
            parked = Thread.currentThread();
            try {
                if (!woken) {
                    LockSupport.parkNanos(this, timeoutNanos);
                }
            } finally {
                parked = null;
                woken = false;
            }
            return;
        }
        woken = false;
        try {
            acknowledge(channels.await(timeoutNanos));
        } catch (NativeIoException | IllegalStateException e) {
            LOG.debug("waiting on {} completion channel(s) failed: {}", channels.size(), e.getMessage());
            LockSupport.parkNanos(this, Math.min(timeoutNanos, FAILED_WAIT_PARK_NANOS));
        }
    }

    private void acknowledge(int events) {
        for (int i = 0; i < events; i++) {
            CompletionQueue cq = channels.queue(i);
            if (cq != null) {
                cq.ackEvents();
            }
        }
    }

    @Override
    public void wakeup() {
        Selector s = selector;
        if (s != null && inSelect) {
            s.wakeup();
            return;
        }
        woken = true;
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t);
        }
        channels.wakeup();
    }

    @Override
    public void close() {
        // The channels are closed with their devices' resources (each leaves the selector's epoll set then).
    }
}
