package io.nvmeof4j.initiator.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.util.Locale;

/** Byte counts with binary suffixes, as fio and SPDK perf take them: {@code 4096}, {@code 4K}, {@code 128KiB}, {@code 1M}. */
final class Sizes implements ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
        return parse(value);
    }

    static long parse(String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        if (v.endsWith("IB")) {
            v = v.substring(0, v.length() - 2);
        } else if (v.endsWith("B")) {
            v = v.substring(0, v.length() - 1);
        }
        int shift = 0;
        if (!v.isEmpty()) {
            switch (v.charAt(v.length() - 1)) {
                case 'K': shift = 10; break;
                case 'M': shift = 20; break;
                case 'G': shift = 30; break;
                case 'T': shift = 40; break;
                default: break;
            }
        }
        if (shift != 0) {
            v = v.substring(0, v.length() - 1);
        }
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a size (bytes, or with K, M, G, T: 4K, 1M)");
        }
        if (n < 0 || (shift > 0 && n > (Long.MAX_VALUE >> shift))) {
            throw new TypeConversionException("'" + value + "' is out of range");
        }
        return n << shift;
    }
}
