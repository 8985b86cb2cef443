package io.nvmeof4j.protocol.admin;

/** Log page identifiers, Get Log Page CDW10 bits 7:0 (NVMe Base 2.0, 5.16 Figure 202; wire reference 2.8). */
public final class LogPageIdentifier {
    private LogPageIdentifier() {
    }

    public static final int SUPPORTED_LOG_PAGES = 0x00;
    public static final int ERROR_INFORMATION = 0x01;
    public static final int SMART_HEALTH = 0x02;
    public static final int FIRMWARE_SLOT = 0x03;
    public static final int CHANGED_NAMESPACE_LIST = 0x04;
    public static final int COMMANDS_SUPPORTED_AND_EFFECTS = 0x05;
    public static final int DEVICE_SELF_TEST = 0x06;
    public static final int ENDURANCE_GROUP = 0x09;
    public static final int ANA = 0x0C;
    public static final int DISCOVERY = 0x70;
    public static final int RESERVATION_NOTIFICATION = 0x80;
}
