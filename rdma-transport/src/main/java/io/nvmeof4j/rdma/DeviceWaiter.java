package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CompletionChannel;
import io.nvmeof4j.jni.rdma.CompletionQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * A poll group's {@link CompletionWaiter} over the JNI completion channels of the devices it serves (usually one).
 * With one channel the wait is {@code poll} on the channel and its wake-up eventfd; before the first queue arrives
 * (no channel yet) the thread parks; with several devices it waits on the first channel for at most a millisecond,
 * since a thread blocks on one primitive only.
 */
public final class DeviceWaiter implements CompletionWaiter {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceWaiter.class);
    private static final long SEVERAL_CHANNELS_MAX_WAIT_NANOS = 1_000_000;

    private volatile CompletionChannel[] channels = new CompletionChannel[0];
    private volatile Thread parked;
    private volatile boolean woken;

    /** Adds the channel of a device the group now serves. */
    public synchronized void add(CompletionChannel channel) {
        CompletionChannel[] next = Arrays.copyOf(channels, channels.length + 1);
        next[next.length - 1] = channel;
        channels = next;
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t); // wait on the channel from now on
        }
    }

    @Override
    public void await(long timeoutNanos) {
        CompletionChannel[] ch = channels;
        if (ch.length == 0) {
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
        long wait = ch.length == 1 ? timeoutNanos : Math.min(timeoutNanos, SEVERAL_CHANNELS_MAX_WAIT_NANOS);
        try {
            CompletionQueue cq = ch[0].await(wait);
            if (cq != null) {
                cq.ackEvents();
            }
        } catch (NativeIoException | IllegalStateException e) {
            LOG.debug("waiting on a completion channel failed: {}", e.getMessage());
            LockSupport.parkNanos(this, Math.min(wait, SEVERAL_CHANNELS_MAX_WAIT_NANOS));
        }
    }

    @Override
    public void wakeup() {
        woken = true;
        Thread t = parked;
        if (t != null) {
            LockSupport.unpark(t);
        }
        for (CompletionChannel c : channels) {
            try {
                c.wakeup();
            } catch (IllegalStateException closed) {
                // the group is closing
            }
        }
    }

    @Override
    public void close() {
        // The channels are closed with their devices' resources.
    }
}
