package io.nvmeof4j.protocol.tcp;

/**
 * The 8-byte common header alone, for reading any received PDU before its type is known (layout in
 * {@link PduFlyweight}; NVMe/TCP Transport Specification 1.0, 3.6.1).
 */
public final class CommonHeader extends PduFlyweight<CommonHeader> {
    public static final int LENGTH = COMMON_HEADER_LENGTH;
}
