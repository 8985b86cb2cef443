package io.nvmeof4j.target.config;

import java.io.IOException;

/**
 * A configuration the daemon cannot serve. The message starts with the JSON path of the offending field, e.g.
 * {@code subsystems[0].namespaces[1].device.size: "12Q" is not a size}, so an operator can find it in the file.
 * <p>An {@link IOException} so that {@code TargetDaemon.start} can report problems it finds in the environment at
 * start (a file removed since the configuration was loaded) the same way; callers that care catch it first.
 */
public final class ConfigException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String path;

    /**
     * @param path    JSON path of the field ({@code ports[1].addr.trsvcid}); empty for the document itself
     * @param problem what is wrong with it, in words an operator understands
     */
    public ConfigException(String path, String problem) {
        super(path == null || path.isEmpty() ? problem : path + ": " + problem);
        this.path = path == null ? "" : path;
    }

    public ConfigException(String path, String problem, Throwable cause) {
        this(path, problem);
        initCause(cause);
    }

    /** The JSON path of the field at fault ({@code ""} for the whole document). */
    public String path() {
        return path;
    }
}
