package io.nvmeof4j.target.config;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The nvmeof4j version this build carries (Maven filters it into {@code version.properties}). */
public final class BuildVersion {
    private static final String RESOURCE = "/io/nvmeof4j/target/version.properties";
    private static final String VERSION = load();

    private BuildVersion() {
    }

    /** {@code "0.1.0-SNAPSHOT"}, or {@code "unknown"} when the resource is missing (an IDE build). */
    public static String version() {
        return VERSION;
    }

    private static String load() {
        try (InputStream in = BuildVersion.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version", "unknown").trim();
            return v.isEmpty() || v.startsWith("${") ? "unknown" : v;
        } catch (IOException e) {
            return "unknown";
        }
    }
}
