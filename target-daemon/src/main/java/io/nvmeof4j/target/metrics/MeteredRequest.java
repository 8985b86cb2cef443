package io.nvmeof4j.target.metrics;

import io.nvmeof4j.protocol.spi.ForwardingRequest;
import io.nvmeof4j.protocol.spi.Request;


/**
 * A transport's request with the command layer's metering around it: everything delegates, except that
 * {@link #complete(int)} notes the status, {@link #responseSent(long)} (the transport's "response sent", through
 * {@link io.nvmeof4j.protocol.spi.QueueHandler#onResponseSent}) then records the latency
 * ({@link Request#receivedNanos()} to the transport's sent stamp), the bytes and the status into the meters resolved
 * for the command.
 * <p>One per queue slot, held by the command layer's per-slot context: nothing is allocated per command. Set up on the reactor thread before the command
 * is handed on; {@link #complete} may run on any thread (the hand-off to a backend thread publishes the fields).
 * <p>The latency ends when the response has left: NVMe/TCP wrote it to the socket, NVMe-oF/RDMA's SEND completed.
 * Both stamps come from the transport's round clocks (one read per poll round for arrivals, one per batch of sent
 * responses), so recording reads no clock. A command whose queue went away before its response was sent is not
 * recorded.
 */
public final class MeteredRequest extends ForwardingRequest {
    private NamespaceMeters namespace;
    private SubsystemMeters subsystem;
    private int op;
    private int transport;
    /** Set by complete(), cleared when recorded: a response is owed to the meters. */
    private boolean pending;
    private int status;

    /** @param delegate the request behind it: the transport's, or the layer the command layer put around it */
    public MeteredRequest(Request delegate) {
        super(delegate);
    }

    /** Meters an I/O command on a namespace. */
    public MeteredRequest io(NamespaceMeters meters, int op, int transport) {
        this.namespace = meters;
        this.subsystem = null;
        this.op = op;
        this.transport = transport;
        this.pending = false;
        return this;
    }

    /** Meters an admin command. */
    public MeteredRequest admin(SubsystemMeters meters, int transport) {
        this.namespace = null;
        this.subsystem = meters;
        this.op = TargetMeterNames.OP_ADMIN;
        this.transport = transport;
        this.pending = false;
        return this;
    }

    @Override
    public void complete(int nvmeStatus) {
        // Plain fields: the transport's completion hand-off (to the reactor that sends the response) publishes them.
        status = nvmeStatus;
        pending = true;
        delegate.complete(nvmeStatus);
    }

    /**
     * The transport sent this command's response by {@code sentNanos} (reactor thread): records latency, bytes and
     * status. Does nothing
     * when no metered completion is owed (a command of this slot that was not metered, or one already recorded).
     */
    public void responseSent(long sentNanos) {
        if (!pending) {
            return;
        }
        pending = false;
        long latency = sentNanos - delegate.receivedNanos();
        NamespaceMeters ns = namespace;
        if (ns != null) {
            ns.record(transport, op, latency, status, delegate.dataLength());
        } else {
            SubsystemMeters s = subsystem;
            if (s != null) {
                s.recordAdmin(transport, latency, status);
            }
        }
    }
}
