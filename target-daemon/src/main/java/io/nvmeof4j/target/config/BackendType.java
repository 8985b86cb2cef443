package io.nvmeof4j.target.config;

import java.util.Locale;

/** What stores a namespace's blocks (configuration {@code device.backend}, an nvmeof4j extension). */
public enum BackendType {
    /** A regular file or a block device at {@code device.path}: the default when a path is given. */
    FILE("file"),
    /** Memory, thin-provisioned ({@code device.size} required). */
    RAM("ram"),
    /** Stores nothing, reads zeros, like null_blk ({@code device.size} required). */
    NULL("null");

    private final String configName;

    BackendType(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    /** The backend named {@code name}, or null. */
    static BackendType fromConfigName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        for (BackendType b : values()) {
            if (b.configName.equals(lower)) {
                return b;
            }
        }
        return null;
    }
}
