package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.nvmeof4j.target.config.ConfigValues.requireObject;


/**
 * Turns the JSON tree of a configuration into a validated {@link TargetConfig}, or throws a
 * {@link ConfigException} naming the JSON path of the first problem. Nothing is opened here; the only contact
 * with the machine is looking at the files file namespaces name ({@link TargetConfig#checkEnvironment()}).
 * <p>Values are accepted the way nvmetcli writes them (every attribute a string: {@code "allow_any_host": "1"},
 * {@code "inline_data_size": "16384"}) and the way people write them (numbers and booleans).
 * Keys nvmetcli writes that nvmeof4j does not use are accepted and reported as notices (logged at info); keys
 * nobody knows are reported too (logged at warn), except in the {@code "nvmeof4j"} object, which is ours and
 * strict.
 */
final class ConfigParser {
    private final Path baseDirectory;
    private final Path defaultTokenFile;
    private final ConfigNotices notices;

    ConfigParser(Path baseDirectory) {
        this(baseDirectory, HttpSecurity.stateDirectoryTokenFile(), false);
    }

    ConfigParser(Path baseDirectory, boolean strict) {
        this(baseDirectory, HttpSecurity.stateDirectoryTokenFile(), strict);
    }

    /** @param defaultTokenFile the API token file when {@code api_token_file} is not given */
    ConfigParser(Path baseDirectory, Path defaultTokenFile) {
        this(baseDirectory, defaultTokenFile, false);
    }

    private ConfigParser(Path baseDirectory, Path defaultTokenFile, boolean strict) {
        this.baseDirectory = baseDirectory.toAbsolutePath().normalize();
        this.defaultTokenFile = defaultTokenFile.toAbsolutePath().normalize();
        this.notices = new ConfigNotices(strict);
    }

    TargetConfig parse(JsonNode root, Path source) throws ConfigException {
        requireObject(root, "");
        DaemonJvmOptions.check();
        SettingsSection settingsSection = new SettingsSection(baseDirectory, defaultTokenFile, notices);
        HostsSection hostsSection = new HostsSection(notices);
        DaemonSettings settings = settingsSection.daemonSettings(root.get("nvmeof4j"), "nvmeof4j");
        List<String> hosts = hostsSection.hosts(root.get("hosts"), "hosts");
        List<SubsystemConfig> subsystems = new SubsystemsSection(baseDirectory, notices)
            .subsystems(root.get("subsystems"), "subsystems");
        List<PortConfig> ports = new PortsSection(notices).ports(root.get("ports"), "ports", subsystems, settings);
        notices.reportKeys(root, "", Set.of("nvmeof4j", "hosts", "subsystems", "ports"), Map.of());
        settingsSection.checkBufferPool(settings);
        settingsSection.checkQueueBufferBudget(settings, ports);
        settingsSection.checkConnectionLimits(settings, subsystems);
        reportUnreachable(subsystems, ports, hosts);
        TargetConfig config = new TargetConfig(source, hosts, hostsSection.credentials(), ports, subsystems, settings,
            notices.list(), hostsSection.tlsKeys());
        config.checkEnvironment();
        return config;
    }

    NamespaceConfig standaloneNamespace(JsonNode n, String where, String subsystemNqn) throws ConfigException {
        return new SubsystemsSection(baseDirectory, notices).standaloneNamespace(n, where, subsystemNqn);
    }

    private void reportUnreachable(List<SubsystemConfig> subsystems, List<PortConfig> ports, List<String> hosts) {
        for (int i = 0; i < subsystems.size(); i++) {
            SubsystemConfig s = subsystems.get(i);
            boolean exported = ports.stream().anyMatch(p -> p.isServable() && p.subsystems().contains(s.nqn()));
            if (!exported) {
                notices.notice(true, "subsystems[" + i + "]: " + s.nqn() + " is not exported by any port");
            }
            if (!s.allowAnyHost() && s.allowedHosts().isEmpty()) {
                notices.notice(true, "subsystems[" + i + "]: " + s.nqn() + " allows no host (attr.allow_any_host is 0 "
                    + "and allowed_hosts is empty)");
            }
            for (String h : s.allowedHosts()) {
                if (!hosts.contains(h)) {
                    notices.notice(false, "subsystems[" + i + "].allowed_hosts: " + h + " is not listed in hosts[] "
                        + "(nvmet would need it there; nvmeof4j does not)");
                }
            }
        }
    }
}
