package io.nvmeof4j.protocol.spi;

import java.util.Locale;

/** NVMe-oF transport types with their TRTYPE codes (discovery log entry byte 0; wire reference 2.8). */
public enum TransportType {
    RDMA(1, "rdma"),
    FC(2, "fc"),
    TCP(3, "tcp"),
    LOOP(0xFE, "loop");

    private final int code;
    private final String configName;

    TransportType(int code, String configName) {
        this.code = code;
        this.configName = configName;
    }

    /** TRTYPE as on the wire. */
    public int code() {
        return code;
    }

    /** The name nvmetcli and nvme-cli use ({@code addr.trtype}, {@code -t}). */
    public String configName() {
        return configName;
    }

    public static TransportType fromConfigName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (TransportType t : values()) {
            if (t.configName.equals(lower)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown transport type '" + name + "' (expected tcp or rdma)");
    }
}
