package io.nvmeof4j.protocol.admin;

/**
 * The completion DW0 of an Asynchronous Event Request (opcode 0Ch; NVMe Base 2.0, 5.2 Figure 146;
 * wire reference 2.9).
 *
 * <pre>
 *  31        24 23          16 15          8 7     3 2      0
 * +------------+--------------+-------------+-------+--------+
 * | reserved   | LOG PAGE ID  | EVENT INFO  | rsvd  | TYPE   |
 * +------------+--------------+-------------+-------+--------+
 * </pre>
 * The host reads the named log page to learn more and to re-arm the event (with RAE = 0).
 */
public final class AsyncEvent {
    private AsyncEvent() {
    }

    public static final int TYPE_ERROR = 0;
    public static final int TYPE_SMART_HEALTH = 1;
    public static final int TYPE_NOTICE = 2;
    public static final int TYPE_IMMEDIATE = 3;
    public static final int TYPE_IO_COMMAND_SET = 6;
    public static final int TYPE_VENDOR = 7;

    /** Notice: namespace attribute changed (log 04h). */
    public static final int NOTICE_NAMESPACE_ATTRIBUTE_CHANGED = 0x00;
    public static final int NOTICE_FIRMWARE_ACTIVATION_STARTING = 0x01;
    public static final int NOTICE_TELEMETRY_LOG_CHANGED = 0x02;
    /** Notice: ANA change (log 0Ch). */
    public static final int NOTICE_ANA_CHANGE = 0x03;
    /** Notice: discovery log page changed (log 70h). */
    public static final int NOTICE_DISCOVERY_LOG_CHANGED = 0xF0;

    /** Composes DW0 from the event type, info and log page id. */
    public static int dw0(int type, int info, int logPageId) {
        return (type & 0x7) | (info & 0xFF) << 8 | (logPageId & 0xFF) << 16;
    }

    /** Namespace attribute changed: notice, info 00h, log 04h. */
    public static final int NAMESPACE_ATTRIBUTE_CHANGED_DW0 =
        dw0(TYPE_NOTICE, NOTICE_NAMESPACE_ATTRIBUTE_CHANGED, LogPageIdentifier.CHANGED_NAMESPACE_LIST);
    /** ANA change: notice, info 03h, log 0Ch (enabled by Async Event Configuration bit 11). */
    public static final int ANA_CHANGE_DW0 = dw0(TYPE_NOTICE, NOTICE_ANA_CHANGE, LogPageIdentifier.ANA);
    /** I/O command specific event info 00h: a reservation notification log page is available. */
    public static final int IO_RESERVATION_LOG_AVAILABLE = 0x00;
    /** Reservation log page available: type 6, info 00h, log 80h (masked per namespace by feature 82h). */
    public static final int RESERVATION_LOG_AVAILABLE_DW0 =
        dw0(TYPE_IO_COMMAND_SET, IO_RESERVATION_LOG_AVAILABLE, LogPageIdentifier.RESERVATION_NOTIFICATION);
    /** Discovery log changed: notice, info F0h, log 70h. */
    public static final int DISCOVERY_LOG_CHANGED_DW0 =
        dw0(TYPE_NOTICE, NOTICE_DISCOVERY_LOG_CHANGED, LogPageIdentifier.DISCOVERY);

    public static int type(int dw0) {
        return dw0 & 0x7;
    }

    public static int info(int dw0) {
        return (dw0 >>> 8) & 0xFF;
    }

    public static int logPageId(int dw0) {
        return (dw0 >>> 16) & 0xFF;
    }
}
