package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.host.HostStatus;

/** Helpers for the status ints an {@link IoCallback} receives. */
public final class IoStatus {
    private IoStatus() {
    }

    public static final int SUCCESS = 0;

    public static boolean isSuccess(int status) {
        return NvmeStatus.isSuccess(status);
    }

    /** {@code "0x080 LBA_OUT_OF_RANGE, DNR"}, host codes included. */
    public static String describe(int status) {
        return HostStatus.describe(status);
    }
}
