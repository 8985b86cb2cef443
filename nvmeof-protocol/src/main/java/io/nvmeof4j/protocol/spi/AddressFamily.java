package io.nvmeof4j.protocol.spi;

import java.util.Locale;

/** Address families with their ADRFAM codes (discovery log entry byte 1; wire reference 2.8). */
public enum AddressFamily {
    IPV4(1, "ipv4"),
    IPV6(2, "ipv6"),
    IB(3, "ib"),
    FC(4, "fc");

    private final int code;
    private final String configName;

    AddressFamily(int code, String configName) {
        this.code = code;
        this.configName = configName;
    }

    public int code() {
        return code;
    }

    public String configName() {
        return configName;
    }

    public static AddressFamily fromConfigName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (AddressFamily f : values()) {
            if (f.configName.equals(lower)) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown address family '" + name + "' (expected ipv4 or ipv6)");
    }
}
