package io.nvmeof4j.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * An NVMe Qualified Name (NVMe Base 2.0, 4.5): {@code nqn.yyyy-mm.reverse-domain[:suffix]}, or the UUID form
 * {@code nqn.2014-08.org.nvmexpress:uuid:<uuid>}. At most 223 bytes of UTF-8; on the wire a 256-byte field,
 * NUL-terminated and NUL-padded (Connect data, Identify Controller SUBNQN, discovery log entries).
 */
public final class Nqn {
    /** Largest NQN in bytes (NVMF_NQN_SIZE). */
    public static final int MAX_LENGTH = 223;
    /** Size of an NQN field on the wire. */
    public static final int FIELD_LENGTH = 256;
    public static final String UUID_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:";

    private static final Pattern DATED = Pattern.compile("nqn\\.[0-9]{4}-(0[1-9]|1[0-2])\\.[^\\s:]+(:.*)?");

    private final String value;

    private Nqn(String value) {
        this.value = value;
    }

    /**
     * Parses and validates an NQN given by a person (configuration, command line).
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static Nqn of(String value) {
        Objects.requireNonNull(value, "nqn");
        int bytes = value.getBytes(StandardCharsets.UTF_8).length;
        if (bytes == 0 || bytes > MAX_LENGTH) {
            throw new IllegalArgumentException("NQN '" + value + "' is " + bytes + " bytes; 1 to " + MAX_LENGTH + " allowed");
        }
        if (!DATED.matcher(value).matches() || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("NQN '" + value
                + "' is not of the form nqn.yyyy-mm.reverse.domain[:name] (NVMe Base 4.5)");
        }
        if (value.startsWith(UUID_PREFIX)) {
            try {
                UUID.fromString(value.substring(UUID_PREFIX.length()));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("NQN '" + value + "' has a malformed UUID", e);
            }
        }
        return new Nqn(value);
    }

    /** The UUID form of a host NQN: {@code nqn.2014-08.org.nvmexpress:uuid:<uuid>}. */
    public static Nqn ofUuid(UUID uuid) {
        return new Nqn(UUID_PREFIX + uuid);
    }

    /** True when {@link #of(String)} would accept the value. */
    public static boolean isValid(String value) {
        try {
            of(value);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * Reads a NUL-terminated NQN field of {@code fieldLength} bytes at {@code offset} (absolute; buffer position
     * untouched). Returns the raw text without validating it, so the caller can reject it with the right status.
     */
    public static String readField(ByteBuffer buffer, int offset, int fieldLength) {
        int end = offset;
        int limit = offset + fieldLength;
        while (end < limit && buffer.get(end) != 0) {
            end++;
        }
        byte[] bytes = new byte[end - offset];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = buffer.get(offset + i);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Writes {@code text} NUL-padded into a {@code fieldLength}-byte field (absolute). */
    public static void writeField(ByteBuffer buffer, int offset, int fieldLength, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (bytes.length >= fieldLength) {
            throw new IllegalArgumentException("'" + text + "' does not fit a " + fieldLength + "-byte NUL-terminated field");
        }
        for (int i = 0; i < fieldLength; i++) {
            buffer.put(offset + i, i < bytes.length ? bytes[i] : 0);
        }
    }

    public String value() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Nqn && ((Nqn) o).value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    @Override
    public String toString() {
        return value;
    }
}
