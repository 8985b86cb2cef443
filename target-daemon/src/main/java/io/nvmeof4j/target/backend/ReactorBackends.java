package io.nvmeof4j.target.backend;

import io.nvmeof4j.target.reactor.Reactor;

/**
 * What an I/O queue's block I/O runs on, on the reactor that serves the queue: the reactor's io_uring
 * ({@link BdevChannels}, with one channel per device) and its QoS waits ({@link QosWaits}). Resolved once, when the
 * queue connects on that reactor, which is also when the devices of the queue's subsystem get their channels on the
 * reactor's ring ({@link #open}); each of the queue's slot descriptors is then bound to it as it is made
 * ({@link #bind}). No I/O looks anything up or opens anything, the queue's first included (SPDK: a subsystem's
 * namespaces have their I/O channels on a poll group before a qpair of that group sends its first I/O).
 * <p>A queue holds nothing of its own here: the ring, its channels and the QoS waits are the reactor's, shared by
 * every queue on it, and closed with the reactor (or, one device's channel, by {@link UringBlockDevice#detach}).
 * A queue that disconnects lets go of references only; the next queue on the reactor finds the channels open.
 * <p>Reactor thread.
 */
public final class ReactorBackends {
    /** Null on a reactor without io_uring (refused at start): its file namespaces answer Namespace Not Ready. */
    private final BdevChannels ring;
    private final QosWaits qos;

    private ReactorBackends(BdevChannels ring, QosWaits qos) {
        this.ring = ring;
        this.qos = qos;
    }

    /** The calling reactor's, or null off the reactors (tools, tests): their descriptors bind at first submission. */
    public static ReactorBackends current() {
        Reactor reactor = Reactor.current();
        if (reactor == null) {
            return null;
        }
        BdevChannels ring = reactor.pollGroup(BdevChannels.class);
        QosWaits qos = reactor.pollGroup(QosWaits.class);
        Thread self = Thread.currentThread();
        if (ring != null) {
            ring.ownedBy(self);
        }
        if (qos != null) {
            qos.ownedBy(self);
        }
        return new ReactorBackends(ring, qos);
    }

    /**
     * Opens {@code device}'s channel on this reactor's ring unless it has one: an io_uring device only, and not one
     * taken out of service. A channel that cannot be opened is tried again by the first I/O, which answers Namespace
     * Not Ready if it still cannot.
     */
    public void open(BlockDevice device) {
        if (ring != null && device instanceof UringBlockDevice uring) {
            uring.openChannel(ring);
        }
    }

    /** {@code io} (a slot's descriptor of a queue on this reactor) runs on this reactor's ring and QoS waits. */
    public void bind(BlockIo io) {
        io.boundRing = ring;
        io.boundDevice = null;
        io.boundChannel = null;
        io.boundQos = qos;
    }
}
