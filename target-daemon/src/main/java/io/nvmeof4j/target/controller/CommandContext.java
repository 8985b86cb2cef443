package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.backend.ReactorBackends;
import io.nvmeof4j.target.io.IoContext;
import io.nvmeof4j.target.metrics.MeteredRequest;

/**
 * The command layer's context of one queue slot, typed (what nvmet keeps in its {@code nvmet_req} and SPDK in its
 * {@code spdk_nvmf_request}): the transport's request of the slot and, made once with it, everything the command
 * layers keep per slot. The queue handler holds one per slot in an array indexed by {@link Request#slot()}, made the
 * first time the slot carries a command after Connect and reused by every later command of the slot: nothing is
 * allocated per command, and no layer has to find its part by type in a shared slot.
 */
final class CommandContext {
    /** The transport's request of this slot: the context serves that object only. */
    final Request transportRequest;
    /** I/O queues: the slot's in-flight count (Preempt and Abort waits on it); null on the admin queue. */
    final InFlightRequest inFlight;
    /**
     * I/O queues: the NVM executor's I/O context of the slot, bound to the block-I/O resources its queue's reactor
     * gave the queue at Connect; null on the admin queue.
     */
    final IoContext io;
    /**
     * The slot's metering around the command (around {@link #inFlight} on an I/O queue, around an uncounted
     * {@link InFlightRequest} over the transport's request on the admin queue); null when metrics are off.
     */
    final MeteredRequest metered;

    /** @param backends the I/O queue's, from its Connect on its reactor; null on the admin queue or off the reactors */
    CommandContext(Request transportRequest, boolean ioQueue, boolean metrics, ReactorBackends backends) {
        this.transportRequest = transportRequest;
        this.inFlight = ioQueue ? new InFlightRequest(transportRequest) : null;
        this.io = ioQueue ? new IoContext() : null;
        if (io != null && backends != null) {
            backends.bind(io);
        }
        // The admin queue's delegate is an InFlightRequest too, never begun (nothing counts admin commands): so the
        // calls MeteredRequest makes on its delegate meet one class on every queue, and the first Keep Alives after
        // I/O do not trap the code the JIT compiled for the I/O queues (a recompilation each, docs/benchmarks.md).
        this.metered = metrics ? new MeteredRequest(ioQueue ? inFlight : new InFlightRequest(transportRequest)) : null;
    }
}
