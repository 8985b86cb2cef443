package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CompletionChannel;
import io.nvmeof4j.jni.rdma.CompletionChannelSet;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.locks.LockSupport;

/**
 * A poll group's {@link CompletionWaiter} over the JNI completion channels of the devices it serves, the target's
 * and the host's alike: one {@code ppoll} over every channel and its wake-up eventfd ({@link CompletionChannelSet}),
 * so a completion on any device ends the wait at once; the events it took are acknowledged before it returns.
 * Before the first queue arrives (no channel yet) the thread parks.
 */
public final class DeviceWaiter implements CompletionWaiter {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceWaiter.class);
    /** Events taken per wait at most: one per armed completion queue; more stay pending for the next wait. */
    static final int MAX_EVENTS = 32;
    /** After a failed wait (a channel's fd gone bad): park this long, so that a broken channel is not spun on. */
    private static final long FAILED_WAIT_PARK_NANOS = 1_000_000;

    private final CompletionChannelSet channels = new CompletionChannelSet(MAX_EVENTS);
    private volatile Thread parked;
    private volatile boolean woken;

    /** Adds the channel of a device the group now serves (control path: the set's layout is rebuilt). */
    public void add(CompletionChannel channel) {
        channels.add(channel);
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t); // wait on the channels from now on
        }
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
            int events = channels.await(timeoutNanos);
            for (int i = 0; i < events; i++) {
                CompletionQueue cq = channels.queue(i);
                if (cq != null) {
                    cq.ackEvents();
                }
            }
        } catch (NativeIoException | IllegalStateException e) {
            LOG.debug("waiting on {} completion channel(s) failed: {}", channels.size(), e.getMessage());
            LockSupport.parkNanos(this, Math.min(timeoutNanos, FAILED_WAIT_PARK_NANOS));
        }
    }

    @Override
    public void wakeup() {
        woken = true;
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t);
        }
        channels.wakeup();
    }

    @Override
    public void close() {
        // The channels are closed with their devices' resources.
    }
}
