package io.nvmeof4j.protocol.ana;

import io.nvmeof4j.protocol.command.NvmeStatus;

/**
 * Asymmetric Namespace Access states (NVMe Base 2.0, 8.1.3 and 5.16.1.12 Figure 229; wire reference 2.8), the values
 * of the ANA log page's per-group STATE byte (bits 3:0), with the names nvmet's configfs and nvmetcli use
 * ({@code optimized}, {@code non-optimized}, {@code inaccessible}, {@code persistent-loss}, {@code change}).
 */
public final class AnaState {
    private AnaState() {
    }

    public static final int OPTIMIZED = 0x1;
    public static final int NON_OPTIMIZED = 0x2;
    public static final int INACCESSIBLE = 0x3;
    public static final int PERSISTENT_LOSS = 0x4;
    public static final int CHANGE = 0xF;

    /**
     * The status an I/O command gets on a path in {@code state}, or {@link NvmeStatus#SUCCESS} when the path may serve
     * it (optimized and non-optimized). The host's multipath code retries these SCT 3 statuses on another path, so DNR
     * stays clear.
     */
    public static int ioStatus(int state) {
        switch (state) {
            case OPTIMIZED:
            case NON_OPTIMIZED:
                return NvmeStatus.SUCCESS;
            case INACCESSIBLE:
                return NvmeStatus.ANA_INACCESSIBLE;
            case PERSISTENT_LOSS:
                return NvmeStatus.ANA_PERSISTENT_LOSS;
            default:
                return NvmeStatus.ANA_TRANSITION;
        }
    }

    public static boolean isValid(int state) {
        return state == OPTIMIZED || state == NON_OPTIMIZED || state == INACCESSIBLE
            || state == PERSISTENT_LOSS || state == CHANGE;
    }

    /** nvmetcli's name of a state: {@code "optimized"}, {@code "non-optimized"}, ... */
    public static String name(int state) {
        switch (state) {
            case OPTIMIZED: return "optimized";
            case NON_OPTIMIZED: return "non-optimized";
            case INACCESSIBLE: return "inaccessible";
            case PERSISTENT_LOSS: return "persistent-loss";
            case CHANGE: return "change";
            default: return String.format("0x%x", state);
        }
    }

    /** The state for an nvmetcli name (case-insensitive; {@code _} accepted for {@code -}), or -1 if unknown. */
    public static int parse(String name) {
        if (name == null) {
            return -1;
        }
        switch (name.trim().toLowerCase(java.util.Locale.ROOT).replace('_', '-')) {
            case "optimized": return OPTIMIZED;
            case "non-optimized": return NON_OPTIMIZED;
            case "inaccessible": return INACCESSIBLE;
            case "persistent-loss": return PERSISTENT_LOSS;
            case "change": return CHANGE;
            default: return -1;
        }
    }
}
