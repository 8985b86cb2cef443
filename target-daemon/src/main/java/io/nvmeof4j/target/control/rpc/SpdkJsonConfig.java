package io.nvmeof4j.target.control.rpc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code bin/nvmeof-target --json FILE}: starts from an SPDK JSON configuration (what {@code save_config} and
 * {@code rpc.py save_config} write, what {@code nvmf_tgt --json} reads) by calling its methods in order, section by
 * section, through the same code as the RPC socket. Methods that only tune SPDK's own framework ({@code *_set_options},
 * {@code *_set_config}, {@code framework_*}, {@code bdev_wait_for_examine}, ...) are skipped with a note; any other
 * method we do not serve, and any call that fails, fails the start naming the section, the index and the error.
 */
public final class SpdkJsonConfig {
    private static final Logger LOG = LoggerFactory.getLogger(SpdkJsonConfig.class);

    /**
     * What {@code --json} starts from without {@code --config}: discovery on 127.0.0.1:8009 and nothing else; the SPDK
     * file adds the rest.
     */
    public static final String BASE_JSON = """
        {"ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "8009"},
                    "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}],
         "subsystems": []}
        """;

    private SpdkJsonConfig() {
    }

    /** Replays {@code file} into a started daemon; returns the number of calls made. */
    public static int replay(TargetDaemon daemon, Path file) throws IOException {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(Files.readString(file));
        } catch (JsonProcessingException e) {
            throw new ConfigException("", file + " is not JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject() || !root.path("subsystems").isArray()) {
            throw new ConfigException("subsystems", file + " is not an SPDK JSON configuration (expected "
                + "{\"subsystems\": [{\"subsystem\": ..., \"config\": [...]}]})");
        }
        SpdkRpcMethods methods = SpdkRpcMethods.of(daemon);
        int calls = 0;
        JsonNode sections = root.get("subsystems");
        for (int i = 0; i < sections.size(); i++) {
            JsonNode section = sections.get(i);
            JsonNode config = section.path("config");
            if (config.isNull() || config.isMissingNode()) {
                continue;
            }
            if (!config.isArray()) {
                throw new ConfigException("subsystems[" + i + "].config", "is not an array");
            }
            for (int j = 0; j < config.size(); j++) {
                String where = "subsystems[" + i + "].config[" + j + "]";
                JsonNode call = config.get(j);
                String method = call.path("method").asText("");
                SpdkRpcMethods.Method m = methods.method(method);
                if (m == null) {
                    if (isFrameworkTuning(method)) {
                        LOG.info("{} ({}): {} skipped (SPDK framework tuning, nothing to do here)", file, where,
                            method);
                        continue;
                    }
                    throw new ConfigException(where, "method " + method + " is not served by nvmeof4j");
                }
                try {
                    m.call("--json " + file.getFileName(), call.get("params"));
                } catch (RpcError e) {
                    throw new ConfigException(where, method + " failed: " + e.code() + " " + e.getMessage());
                }
                calls++;
            }
        }
        LOG.info("{}: {} SPDK configuration call(s) replayed", file, calls);
        return calls;
    }

    private static boolean isFrameworkTuning(String method) {
        return method.endsWith("_set_options") || method.endsWith("_set_config") || method.startsWith("framework_")
            || method.equals("bdev_wait_for_examine") || method.startsWith("iobuf_") || method.startsWith("accel_")
            || method.startsWith("sock_") || method.startsWith("vmd_") || method.startsWith("keyring_")
            || method.equals("nvmf_set_max_subsystems") || method.startsWith("scheduler_")
            || method.equals("bdev_nvme_set_hotplug");
    }
}
