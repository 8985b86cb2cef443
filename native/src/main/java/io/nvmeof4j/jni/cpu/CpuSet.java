package io.nvmeof4j.jni.cpu;

import java.util.Arrays;

/**
 * A set of CPUs, immutable: what {@code taskset -c} takes (a Linux cpu list, {@code "0-3,8"}) or SPDK's core mask
 * ({@code -m 0x3}), parsed in this one place for the daemon's {@code reactor_cpus} and perf's
 * {@code --cpus}/{@code -c}.
 * Parsing is bounded by the machine: a CPU at or above its CPU count is refused with a message before anything is
 * sized by it, so {@code "0-99999999"} allocates nothing.
 */
public final class CpuSet {
    /** Linux's largest NR_CPUS on x86-64 (CONFIG_NR_CPUS_RANGE_END): no machine has more. */
    public static final int MAX_CPUS = 8192;
    /** Longer text is refused before it is looked at (a list of every CPU of the largest machine is ~40 KiB). */
    static final int MAX_TEXT = 65_536;

    private static final CpuSet EMPTY = new CpuSet(new long[0]);

    /** Bit c of word c / 64 is CPU c; no trailing zero words. */
    private final long[] bits;

    private CpuSet(long[] bits) {
        int words = bits.length;
        while (words > 0 && bits[words - 1] == 0) {
            words--;
        }
        this.bits = words == bits.length ? bits : Arrays.copyOf(bits, words);
    }

    public static CpuSet empty() {
        return EMPTY;
    }

    /** The set of these CPUs (each 0..{@value #MAX_CPUS} - 1). */
    public static CpuSet of(int... cpus) {
        int highest = -1;
        for (int c : cpus) {
            if (c < 0 || c >= MAX_CPUS) {
                throw new IllegalArgumentException("CPU " + c + " outside 0.." + (MAX_CPUS - 1));
            }
            highest = Math.max(highest, c);
        }
        long[] b = new long[(highest + 64) / 64];
        for (int c : cpus) {
            b[c >>> 6] |= 1L << c;
        }
        return new CpuSet(b);
    }

    /** CPUs 0..count - 1. */
    public static CpuSet firstCpus(int count) {
        if (count < 0 || count > MAX_CPUS) {
            throw new IllegalArgumentException("CPU count " + count + " outside 0.." + MAX_CPUS);
        }
        long[] b = new long[(count + 63) / 64];
        for (int c = 0; c < count; c++) {
            b[c >>> 6] |= 1L << c;
        }
        return new CpuSet(b);
    }

    /** The set whose bitmap is {@code bits} (bit c of word c / 64 is CPU c), copied. */
    public static CpuSet fromBits(long[] bits) {
        if (bits.length > MAX_CPUS / 64) {
            throw new IllegalArgumentException("a bitmap of " + bits.length * 64 + " CPUs, more than " + MAX_CPUS);
        }
        return new CpuSet(bits.clone());
    }

    /**
     * Parses a cpu list ({@code "1"}, {@code "0-3,8"}, as {@code taskset -c} and /proc's Cpus_allowed_list write it)
     * or a core mask ({@code "0x3"}, hex, as SPDK's {@code -m} and {@code -c} take it).
     *
     * @param cpuCount the machine's CPUs ({@link CpuAffinity#possibleCpus()}): a CPU at or above it is refused
     * @throws IllegalArgumentException saying what is wrong, quoting {@code text}
     */
    public static CpuSet parse(String text, int cpuCount) {
        if (cpuCount < 1 || cpuCount > MAX_CPUS) {
            throw new IllegalArgumentException("CPU count " + cpuCount + " outside 1.." + MAX_CPUS);
        }
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("\"" + (text == null ? "" : text) + "\" is empty: expected a CPU list "
                + "such as \"0-3,8\" or a core mask such as \"0x3\"");
        }
        if (text.length() > MAX_TEXT) {
            throw new IllegalArgumentException("a CPU list of " + text.length() + " characters is too long (at most "
                + MAX_TEXT + ")");
        }
        String t = text.trim();
        CpuSet set = t.startsWith("0x") || t.startsWith("0X") ? parseMask(text, t.substring(2), cpuCount)
            : parseList(text, t, cpuCount);
        if (set.isEmpty()) {
            throw new IllegalArgumentException("core mask \"" + text + "\" selects no CPU");
        }
        return set;
    }

    private static CpuSet parseList(String text, String t, int cpuCount) {
        long[] b = new long[(cpuCount + 63) / 64];
        for (String part : t.split(",", -1)) {
            int dash = part.indexOf('-');
            int first = cpuNumber(text, dash < 0 ? part : part.substring(0, dash), part, cpuCount);
            int last = dash < 0 ? first : cpuNumber(text, part.substring(dash + 1), part, cpuCount);
            if (last < first) {
                throw new IllegalArgumentException("CPU list \"" + text + "\": range " + part + " runs backwards");
            }
            for (int c = first; c <= last; c++) {
                b[c >>> 6] |= 1L << c;
            }
        }
        return new CpuSet(b);
    }

    /** One CPU number of a list: decimal digits only, below {@code cpuCount}. */
    private static int cpuNumber(String text, String number, String part, int cpuCount) {
        boolean digits = !number.isEmpty() && number.length() <= 10;
        for (int i = 0; digits && i < number.length(); i++) {
            digits = number.charAt(i) >= '0' && number.charAt(i) <= '9';
        }
        if (!digits) {
            if (!number.isEmpty() && number.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                throw beyond("CPU list", text, number, cpuCount);
            }
            throw new IllegalArgumentException("CPU list \"" + text + "\": \"" + part + "\" is not a CPU number "
                + "or range (examples: \"3\", \"0-3\")");
        }
        long cpu = Long.parseLong(number);
        if (cpu >= cpuCount) {
            throw beyond("CPU list", text, number, cpuCount);
        }
        return (int) cpu;
    }

    private static CpuSet parseMask(String text, String hex, int cpuCount) {
        if (hex.isEmpty()) {
            throw new IllegalArgumentException("core mask \"" + text + "\" has no hex digits (example: \"0x3\")");
        }
        int start = 0;
        while (start < hex.length() - 1 && hex.charAt(start) == '0') {
            start++;
        }
        for (int i = start; i < hex.length(); i++) {
            if (Character.digit(hex.charAt(i), 16) < 0) {
                throw new IllegalArgumentException("core mask \"" + text + "\": '" + hex.charAt(i)
                    + "' is not a hex digit");
            }
        }
        int firstDigit = Character.digit(hex.charAt(start), 16);
        long highest = 4L * (hex.length() - 1 - start) + 31 - Integer.numberOfLeadingZeros(firstDigit);
        if (highest >= cpuCount) {
            throw beyond("core mask", text, Long.toString(highest), cpuCount);
        }
        long[] b = new long[(cpuCount + 63) / 64];
        for (int i = hex.length() - 1, bit = 0; i >= start; i--, bit += 4) {
            long nibble = Character.digit(hex.charAt(i), 16);
            b[bit >>> 6] |= nibble << (bit & 63);
        }
        return new CpuSet(b);
    }

    private static IllegalArgumentException beyond(String kind, String text, String cpu, int cpuCount) {
        return new IllegalArgumentException(kind + " \"" + text + "\": CPU " + cpu + " is beyond this machine's "
            + cpuCount + " CPU(s) (" + firstCpus(cpuCount) + ")");
    }

    public boolean contains(int cpu) {
        return cpu >= 0 && (cpu >>> 6) < bits.length && (bits[cpu >>> 6] & (1L << cpu)) != 0;
    }

    public boolean containsAll(CpuSet other) {
        for (int w = 0; w < other.bits.length; w++) {
            long mine = w < bits.length ? bits[w] : 0;
            if ((other.bits[w] & ~mine) != 0) {
                return false;
            }
        }
        return true;
    }

    public CpuSet minus(CpuSet other) {
        long[] b = bits.clone();
        for (int w = 0; w < b.length && w < other.bits.length; w++) {
            b[w] &= ~other.bits[w];
        }
        return new CpuSet(b);
    }

    public boolean isEmpty() {
        return bits.length == 0;
    }

    public int size() {
        int n = 0;
        for (long w : bits) {
            n += Long.bitCount(w);
        }
        return n;
    }

    /** The CPUs in ascending order. */
    public int[] toArray() {
        int[] cpus = new int[size()];
        int i = 0;
        for (int w = 0; w < bits.length; w++) {
            for (long rest = bits[w]; rest != 0; rest &= rest - 1) {
                cpus[i++] = w * 64 + Long.numberOfTrailingZeros(rest);
            }
        }
        return cpus;
    }

    /** The bitmap in {@code words} words (the kernel's mask size for the machine), zero-padded. */
    long[] toBits(int words) {
        if (words < bits.length) {
            throw new IllegalArgumentException(this + " does not fit a mask of " + words * 64 + " CPUs");
        }
        return Arrays.copyOf(bits, words);
    }

    /** As /proc's Cpus_allowed_list writes it: {@code "0-3,8"}; {@code ""} for the empty set. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        int[] cpus = toArray();
        for (int i = 0; i < cpus.length; ) {
            int j = i;
            while (j + 1 < cpus.length && cpus[j + 1] == cpus[j] + 1) {
                j++;
            }
            s.append(s.length() == 0 ? "" : ",").append(cpus[i]);
            if (j > i) {
                s.append('-').append(cpus[j]);
            }
            i = j + 1;
        }
        return s.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CpuSet c && Arrays.equals(bits, c.bits);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bits);
    }
}
