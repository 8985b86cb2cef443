package io.nvmeof4j.it.tcp;

import java.io.IOException;

/** The controller broke an NVMe/TCP rule the Linux host enforces (wire reference 5); the message names the rule. */
public final class NvmeTcpProtocolException extends IOException {
    public NvmeTcpProtocolException(String message) {
        super(message);
    }
}
