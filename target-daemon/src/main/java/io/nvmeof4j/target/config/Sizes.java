package io.nvmeof4j.target.config;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Byte sizes as people write them: {@code "4096"}, {@code "64M"}, {@code "1G"}, {@code "1GiB"} (binary units). */
public final class Sizes {
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgtpe]?)(i?b)?", Pattern.CASE_INSENSITIVE);
    private static final String UNITS = "kmgtpe";

    private Sizes() {
    }

    /**
     * Parses a size: digits, then optionally K, M, G, T, P or E (powers of 1024, case-insensitive), optionally
     * followed by "B" or "iB". Returns -1 for text that is not a size or overflows a long.
     */
    public static long parse(String text) {
        // strip(), not trim(): trim() would also drop NUL and other control characters, and take "1M\0" as "1M".
        Matcher m = SIZE.matcher(text.strip());
        if (!m.matches()) {
            return -1;
        }
        if (m.group(3) != null && m.group(2).isEmpty() && m.group(3).length() > 1) {
            return -1; // "12iB"
        }
        try {
            long value = Long.parseLong(m.group(1));
            String unit = m.group(2).toLowerCase(Locale.ROOT);
            int shift = unit.isEmpty() ? 0 : 10 * (UNITS.indexOf(unit.charAt(0)) + 1);
            if (shift > 0 && value > (Long.MAX_VALUE >> shift)) {
                return -1;
            }
            return value << shift;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** "1 GiB", "64 MiB", "4096 B": the largest binary unit that divides the size. */
    public static String format(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int unit = 0;
        long value = bytes;
        while (unit < units.length - 1 && value >= 1024 && value % 1024 == 0) {
            value /= 1024;
            unit++;
        }
        return value + " " + units[unit];
    }
}
