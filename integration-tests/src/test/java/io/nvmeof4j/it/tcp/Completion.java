package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;

/**
 * What the controller answered to one command: the CQE fields (wire reference 1.2) plus the data a
 * controller-to-host command returned. {@code status} is an {@link NvmeStatus} code with its DNR/M flags.
 *
 * @param viaSuccessFlag true when no CapsuleResp came because the last C2HData carried SUCCESS (wire reference 5);
 *                       the CQE fields are then synthesised: status 0, SQHD 0xFFFF
 * @param data           bytes the controller sent for this command (its C2HData payload), never null
 * @param r2ts           R2T PDUs the controller sent for this command
 * @param h2cPdus        H2CData PDUs this host sent for this command
 */
public record Completion(int cid, int sqid, int sqhd, int dw0, int dw1, int statusField, byte[] data,
                         boolean viaSuccessFlag, int r2ts, int h2cPdus) {

    /** Status code with DNR/M flags ({@code SCT << 8 | SC}, bit 15 DNR). */
    public int status() {
        return NvmeStatus.fromStatusField(statusField);
    }

    /** Status code without flags. */
    public int code() {
        return NvmeStatus.code(status());
    }

    public boolean dnr() {
        return NvmeStatus.isDnr(status());
    }

    public boolean isSuccess() {
        return code() == NvmeStatus.SUCCESS;
    }

    /** DW0 and DW1 as one 64-bit value (8-byte Property Get). */
    public long result64() {
        return (dw0 & 0xFFFF_FFFFL) | ((long) dw1 << 32);
    }

    @Override
    public String toString() {
        return String.format("Completion[cid=%d sqid=%d sqhd=%d status=%s dw0=0x%08x dw1=0x%08x data=%d B%s%s]",
            cid, sqid, sqhd, NvmeStatus.describe(status()), dw0, dw1, data.length,
            viaSuccessFlag ? " via C2H SUCCESS" : "", r2ts > 0 ? " r2t=" + r2ts + " h2c=" + h2cPdus : "");
    }
}
