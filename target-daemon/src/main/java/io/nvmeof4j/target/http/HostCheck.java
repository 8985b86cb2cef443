package io.nvmeof4j.target.http;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The {@code Host} header check that defeats DNS rebinding: a web page at {@code http://evil.example} whose name
 * an attacker re-points to 127.0.0.1 makes the browser send {@code Host: evil.example}. Only names a client on
 * this machine or the operator chose pass: the address the client connected to (an IP literal, with or without a
 * port), {@code localhost} when that address is loopback, and the configured {@code http_allowed_hosts}.
 */
final class HostCheck {
    private static final Set<String> LOOPBACK_NAMES = Set.of("localhost", "localhost.localdomain", "ip6-localhost");

    private final List<String> allowedNames;

    /** @param allowedNames lower-case names (or bracketed IPv6 literals) the operator allows besides the above */
    HostCheck(List<String> allowedNames) {
        this.allowedNames = List.copyOf(allowedNames);
    }

    /**
     * @param host  the Host header as sent (null when absent)
     * @param local the local address the connection arrived at
     * @return null when the header may be served, else why not (for the 421 answer)
     */
    String refusal(String host, InetAddress local) {
        if (host == null || host.isEmpty()) {
            return "a Host header is required";
        }
        String h = host.trim().toLowerCase(Locale.ROOT);
        String name;
        if (h.startsWith("[")) {
            int close = h.indexOf(']');
            if (close < 0 || !validPort(h.substring(close + 1))) {
                return "malformed Host header";
            }
            name = h.substring(0, close + 1);
        } else {
            int colon = h.indexOf(':');
            if (colon >= 0 && !validPort(h.substring(colon))) {
                return "malformed Host header";
            }
            name = colon >= 0 ? h.substring(0, colon) : h;
        }
        if (name.endsWith(".") && !name.startsWith("[")) {
            name = name.substring(0, name.length() - 1);
        }
        if (name.equals(literal(local)) || allowedNames.contains(name)) {
            return null;
        }
        if (local.isLoopbackAddress() && (LOOPBACK_NAMES.contains(name) || name.equals("127.0.0.1")
            || name.equals("[::1]"))) {
            return null;
        }
        return "Host '" + host + "' is not served here (allowed: the address connected to, " + literal(local)
            + (local.isLoopbackAddress() ? ", localhost" : "")
            + (allowedNames.isEmpty() ? "" : ", " + String.join(", ", allowedNames))
            + "; more names: \"http_allowed_hosts\" in the \"nvmeof4j\" section)";
    }

    /** Empty or ":digits". */
    private static boolean validPort(String rest) {
        return rest.isEmpty() || (rest.length() >= 2 && rest.length() <= 6 && rest.charAt(0) == ':'
            && rest.substring(1).chars().allMatch(c -> c >= '0' && c <= '9'));
    }

    /** "127.0.0.1", "[::1]" (without a scope id: a browser never sends one). */
    static String literal(InetAddress a) {
        if (a instanceof Inet6Address six) {
            String text = six.getHostAddress();
            int scope = text.indexOf('%');
            String bare = scope >= 0 ? text.substring(0, scope) : text;
            try {
                // The compressed form ("::1", not "0:0:0:0:0:0:0:1"), as people and browsers write it.
                return "[" + compress(InetAddress.getByName(bare).getAddress()) + "]";
            } catch (java.net.UnknownHostException e) {
                return "[" + bare + "]";
            }
        }
        return a.getHostAddress();
    }

    /** RFC 5952 text of a 16-byte IPv6 address: lower case, the longest run of zero groups as "::". */
    static String compress(byte[] b) {
        int[] g = new int[8];
        for (int i = 0; i < 8; i++) {
            g[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLen = 1;
        for (int i = 0; i < 8; ) {
            if (g[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && g[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(g[i]));
        }
        return sb.toString();
    }
}
