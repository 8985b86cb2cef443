package io.nvmeof4j.protocol.spi.host;

import java.io.IOException;

/**
 * A host queue could not be opened at the transport level. The message names the peer, the step and the cause:
 * {@code "tcp://10.0.0.5:4420: TCP connect: Connection refused"}.
 */
public class TransportConnectException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Connect steps, as they appear in messages. */
    public static final String STEP_RESOLVE = "resolve address";
    public static final String STEP_CONNECT = "TCP connect";
    public static final String STEP_TLS = "TLS handshake";
    public static final String STEP_ICREQ = "ICReq/ICResp";
    public static final String STEP_REGISTER = "register with poll group";

    private final String peer;
    private final String step;
    private final String detail;

    public TransportConnectException(String peer, String step, String detail, Throwable cause) {
        super(peer + ": " + step + ": " + detail, cause);
        this.peer = peer;
        this.step = step;
        this.detail = detail;
    }

    /** What went wrong, without peer and step: {@code "Connection refused"}. */
    public String detail() {
        return detail;
    }

    public String peer() {
        return peer;
    }

    public String step() {
        return step;
    }
}
