package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.protocol.Nqn;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The typed values of a configuration, read the one way every section reads them: nvmetcli writes every attribute
 * as a string, people write numbers and booleans, and every error names the JSON path of the value.
 */
final class ConfigValues {
    private ConfigValues() {
    }

    static String printable(String text) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < text.length() && i < 240; i++) {
            char c = text.charAt(i);
            sb.append(c < 0x20 || c == 0x7F ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        }
        return text.length() > 240 ? sb + "..." : sb.toString();
    }

    static boolean isEmpty(JsonNode node) {
        return node.isNull() || (node.isContainerNode() && node.isEmpty())
            || (node.isTextual() && (node.asText().isEmpty() || node.asText().equals("0")))
            || (node.isNumber() && node.asLong() == 0);
    }

    static String at(String where, String key) {
        return where.isEmpty() ? key : where + "." + key;
    }

    static String quote(String text) {
        return "\"" + text + "\"";
    }

    static JsonNode required(JsonNode object, String where, String key) throws ConfigException {
        JsonNode v = object.get(key);
        if (v == null || v.isNull()) {
            throw new ConfigException(at(where, key), "is required");
        }
        return v;
    }

    static void requireObject(JsonNode node, String where) throws ConfigException {
        if (node == null || !node.isObject()) {
            throw new ConfigException(where, "must be a JSON object, not " + describe(node));
        }
    }

    static void requireArray(JsonNode node, String where) throws ConfigException {
        if (!node.isArray()) {
            throw new ConfigException(where, "must be a JSON array, not " + describe(node));
        }
    }

    static String describe(JsonNode node) {
        if (node == null || node.isMissingNode()) {
            return "nothing";
        }
        String type = node.getNodeType().name().toLowerCase(Locale.ROOT);
        return node.isContainerNode() ? type : type + " " + node;
    }

    /** A scalar as text (nvmetcli writes every attribute as a string; people write numbers too). */
    static String text(JsonNode node, String where) throws ConfigException {
        if (node.isTextual()) {
            return node.asText();
        }
        if (node.isNumber() || node.isBoolean()) {
            return node.asText();
        }
        throw new ConfigException(where, "must be a string, not " + describe(node));
    }

    static String nqn(JsonNode node, String where) throws ConfigException {
        String text = text(node, where);
        try {
            return checkNqn(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where, e.getMessage());
        }
    }

    /**
     * An NQN as {@link Nqn#of} takes it, and without control characters, '/' or '\\': nvmet's NQNs are configfs
     * directory names, which cannot hold '/', and the management API carries NQNs in URL paths and log lines.
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    static String checkNqn(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7F || c == '/' || c == '\\') {
                throw new IllegalArgumentException("NQN " + printable(text) + " contains "
                    + (c < 0x20 || c == 0x7F ? "the control character U+" + String.format("%04X", (int) c)
                    : "'" + c + "'") + " at index " + i);
            }
        }
        return Nqn.of(text).value();
    }

    static String ascii(JsonNode attr, String aw, String key, int max, String fallback)
        throws ConfigException {
        if (!attr.has(key)) {
            return fallback;
        }
        String w = at(aw, key);
        String v = text(attr.get(key), w);
        if (v.isEmpty() || v.length() > max) {
            throw new ConfigException(w, quote(v) + " must be 1 to " + max + " characters");
        }
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new ConfigException(w, quote(v) + " must be printable ASCII (NVMe Base 1.5)");
            }
        }
        return v;
    }

    /** 0/1, true/false and the strings nvmet's kstrtobool takes ("0", "1", "y", "n", "on", "off", ...). */
    static boolean bool(JsonNode node, String where) throws ConfigException {
        if (node.isBoolean()) {
            return node.asBoolean();
        }
        if (node.isIntegralNumber() && (node.asLong() == 0 || node.asLong() == 1)) {
            return node.asLong() == 1;
        }
        if (node.isTextual()) {
            switch (node.asText().trim().toLowerCase(Locale.ROOT)) {
                case "1": case "y": case "yes": case "on": case "true":
                    return true;
                case "0": case "n": case "no": case "off": case "false":
                    return false;
                default:
                    break;
            }
        }
        throw new ConfigException(where, node + " is not a boolean (expected 0 or 1)");
    }

    static long optionalInteger(JsonNode object, String where, String key, long min, long max,
                                        long fallback) throws ConfigException {
        JsonNode v = object.get(key);
        return v == null || v.isNull() ? fallback : integer(v, at(where, key), min, max);
    }

    /** An integer given as a JSON number or a decimal (or 0x-hex) string, within [min, max]. */
    static long integer(JsonNode node, String where, long min, long max) throws ConfigException {
        Long value = integerValue(node);
        if (value == null) {
            throw new ConfigException(where, node + " is not an integer");
        }
        if (value < min || value > max) {
            throw new ConfigException(where, value + " is outside " + min + ".." + max);
        }
        return value;
    }

    static long integerOrNegative(JsonNode node) {
        Long v = integerValue(node);
        return v == null ? -1 : v;
    }

    static Long integerValue(JsonNode node) {
        if (node.isIntegralNumber()) {
            return node.canConvertToLong() ? node.asLong() : null;
        }
        if (!node.isTextual()) {
            return null;
        }
        String t = node.asText().strip(); // not trim(): that drops control characters too
        try {
            if (t.startsWith("0x") || t.startsWith("0X")) {
                return Long.parseLong(t.substring(2), 16);
            }
            return Long.parseLong(t);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** 16 bytes of MD5 over {@code name}: stable identifiers derived from names. */
    static byte[] md5(String name) {
        try {
            return MessageDigest.getInstance("MD5").digest(name.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 is a required JDK algorithm", e);
        }
    }

    static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }

    /** No NUL byte or other control character: such text is an attack or a mistake, never a name. */
    static void requirePlainText(String text, String where) throws ConfigException {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7F) {
                throw new ConfigException(where, "contains the control character U+" + String.format("%04X", (int) c)
                    + " at index " + i);
            }
        }
    }
}
