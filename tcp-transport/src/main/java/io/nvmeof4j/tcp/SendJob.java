package io.nvmeof4j.tcp;

import io.nvmeof4j.tcp.pdu.PduSendJob;

/**
 * The controller's command slots as send jobs of the PDU engine ({@link PduSendJob}): {@link TcpRequest}'s job arms
 * its CapsuleResp, R2T and C2HData PDUs through {@link #segment} and {@link #arm} and answers the package-private
 * calls, which only forward the engine's own. A slot's job could extend {@link PduSendJob} directly and this class go;
 * it stayed so that {@code TcpRequest} (reworked in parallel, issue 12 item 1) did not have to change with the engine.
 * <p>Reactor thread only.
 */
abstract class SendJob extends PduSendJob {
    /** Whether more PDUs follow the armed ones; the connection then sends nothing else until they are armed. */
    abstract boolean hasMorePdus();

    /** Arms the next PDU once the current one is written; false when the job is complete. */
    abstract boolean armNextPdu();

    /** Everything was written. */
    abstract void onSent();

    /** The connection is closing or terminating and the job will not be (fully) sent: release what it holds. */
    abstract void onDropped();

    /** Sets range {@code i} of the PDU(s) being armed (the engine's {@code segments}, for the slot that owns this job). */
    final void segment(int i, java.nio.ByteBuffer buffer) {
        segments[i] = buffer;
    }

    /** Arms ranges {@code 0..count)} set by {@link #segment}. */
    final void arm(int count) {
        armSegments(count);
    }

    @Override
    protected final boolean hasNextPdu() {
        return hasMorePdus();
    }

    @Override
    protected final boolean armNext() {
        return armNextPdu();
    }

    @Override
    protected final void sent() {
        onSent();
    }

    @Override
    protected final void dropped() {
        onDropped();
    }
}
