package io.nvmeof4j.protocol.spi;

/**
 * Reads nvmeof4j's JVM options ({@code -Dnvmeof4j.*} system properties) as strictly as the configuration file: an
 * absent option gives its default, a malformed or out-of-range one is refused with an
 * {@link IllegalArgumentException} naming the option, the value and what is allowed
 * ({@code -Dnvmeof4j.io_uring.entries=abc: not a whole number; must be 1..32768}). {@link Integer#getInteger},
 * {@link Long#getLong} and {@link Boolean#parseBoolean}, which this replaces, put the default in place of a typo
 * without a word, so an operator measured or ran something other than what they set.
 * <p>Numbers are decimal (no {@code 0x}, and no leading {@code 0} read as octal as {@link Integer#decode} does);
 * surrounding blanks are ignored. Booleans are {@code true} or {@code false}, and choices one of theirs, in any case.
 * <p>The daemon reads every option it uses while it checks its configuration, so a bad one stops it before anything
 * listens; a library reads them when the thing they tune is made.
 */
public final class JvmOptions {
    private JvmOptions() {
    }

    /** {@code name}'s value in {@code min..max}, or {@code defaultValue} when it is not set. */
    public static int intOption(String name, int defaultValue, int min, int max) {
        return (int) longOption(name, defaultValue, min, max);
    }

    /** {@code name}'s value in {@code min..max}, or {@code defaultValue} when it is not set. */
    public static long longOption(String name, long defaultValue, long min, long max) {
        String raw = System.getProperty(name);
        if (raw == null) {
            return defaultValue;
        }
        long value;
        try {
            value = Long.parseLong(raw.strip());
        } catch (NumberFormatException e) {
            throw refused(name, raw, "not a whole number; must be " + range(min, max));
        }
        if (value < min || value > max) {
            throw refused(name, raw, "must be " + range(min, max));
        }
        return value;
    }

    /** {@code name}'s value ({@code true} or {@code false}, any case), or {@code defaultValue} when it is not set. */
    public static boolean booleanOption(String name, boolean defaultValue) {
        String raw = System.getProperty(name);
        if (raw == null) {
            return defaultValue;
        }
        String value = raw.strip();
        if ("true".equalsIgnoreCase(value)) {
            return true;
        }
        if ("false".equalsIgnoreCase(value)) {
            return false;
        }
        throw refused(name, raw, "must be true or false");
    }

    /**
     * {@code name}'s value as spelled in {@code choices} (compared in any case), or {@code defaultValue} when it is not
     * set.
     */
    public static String choiceOption(String name, String defaultValue, String... choices) {
        String raw = System.getProperty(name);
        if (raw == null) {
            return defaultValue;
        }
        for (String choice : choices) {
            if (choice.equalsIgnoreCase(raw.strip())) {
                return choice;
            }
        }
        throw refused(name, raw, "must be one of " + String.join(", ", choices));
    }

    /**
     * The refusal of {@code -Dname=value}, for a rule the range cannot say (the caller's own validation):
     * {@code -Dname=value: problem}.
     */
    public static IllegalArgumentException refused(String name, String value, String problem) {
        return new IllegalArgumentException("-D" + name + "=" + value + ": " + problem);
    }

    private static String range(long min, long max) {
        if (max == Long.MAX_VALUE) {
            return min + " or more";
        }
        return max == Integer.MAX_VALUE ? min + " or more (up to " + max + ")" : min + ".." + max;
    }
}
