package io.nvmeof4j.protocol.spi.host;

/** Learns that a {@link HostQueue} is gone. */
@FunctionalInterface
public interface HostQueueListener {
    /**
     * The queue closed: the controller closed the connection, a protocol error or C2HTermReq, a local
     * {@link HostQueue#close}. Called once, on the poll-group thread, after every command still outstanding was
     * completed with {@link HostStatus#HOST_PATH_ERROR}.
     *
     * @param reason what happened, naming the peer (and for a C2HTermReq its FES and FEI)
     */
    void onClosed(HostQueue queue, String reason);
}
