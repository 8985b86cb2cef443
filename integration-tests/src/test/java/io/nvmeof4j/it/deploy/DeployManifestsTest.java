package io.nvmeof4j.it.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.nvmeof4j.target.config.DaemonSettings;
import io.nvmeof4j.target.config.PortConfig;
import io.nvmeof4j.target.config.TargetConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deployment files in {@code deploy/} are part of the build: every Kubernetes manifest parses and has the
 * structure the target needs (host network, the ports of its configuration, probes on them, the mounts the image
 * needs), the configurations they carry parse with the daemon's own parser, and the systemd unit and the
 * Dockerfile keep the settings the README promises. A broken manifest fails {@code mvn verify}, not a rollout.
 */
class DeployManifestsTest {
    private static final Path DEPLOY = repoRoot().resolve("deploy");
    private static final Path KUBERNETES = DEPLOY.resolve("kubernetes");
    private static final YAMLMapper YAML = new YAMLMapper(new YAMLFactory());
    private static final ObjectMapper JSON = JsonMapper.builder().build();
    /** The port of the daemon's default HTTP address. */
    private static final int HTTP_PORT = Integer.parseInt(DaemonSettings.HTTP_DEFAULT.replaceAll(".*:", ""));
    /** A node name to render the ConfigMap with, as the DaemonSet's init container does. */
    private static final String NODE_NAME = "storage-1.example";
    /** The node's directory for file namespaces (the DaemonSet's hostPath volume). */
    private static final String DATA_DIR = "/var/lib/nvmeof4j";

    @TempDir
    Path dataDir;

    @Test
    void shouldParseEveryKubernetesManifestWithKindAndName() throws IOException {
        Map<Path, List<JsonNode>> manifests = manifests();
        assertThat(manifests.keySet()).extracting(p -> p.getFileName().toString())
            .contains("namespace.yaml", "configmap.yaml", "daemonset.yaml", "kustomization.yaml", "block-devices-patch.yaml");
        for (Map.Entry<Path, List<JsonNode>> e : manifests.entrySet()) {
            assertThat(e.getValue()).as("documents in %s", e.getKey()).isNotEmpty();
            for (JsonNode doc : e.getValue()) {
                assertThat(doc.path("apiVersion").asText()).as("apiVersion in %s", e.getKey()).isNotBlank();
                assertThat(doc.path("kind").asText()).as("kind in %s", e.getKey()).isNotBlank();
                if (!doc.path("kind").asText().equals("Kustomization")) {
                    assertThat(doc.path("metadata").path("name").asText()).as("metadata.name in %s", e.getKey())
                        .isNotBlank();
                }
            }
        }
        // The kustomization lists every resource file, and only existing ones.
        JsonNode kustomization = single("kustomization.yaml");
        List<String> resources = new ArrayList<>();
        kustomization.path("resources").forEach(r -> resources.add(r.asText()));
        assertThat(resources).containsExactlyInAnyOrder("namespace.yaml", "configmap.yaml", "daemonset.yaml");
        // Everything lives in the one namespace the manifests create.
        String namespace = single("namespace.yaml").path("metadata").path("name").asText();
        assertThat(single("configmap.yaml").path("metadata").path("namespace").asText()).isEqualTo(namespace);
        assertThat(single("daemonset.yaml").path("metadata").path("namespace").asText()).isEqualTo(namespace);
    }

    @Test
    void shouldRunOneHostNetworkTargetPerNodeOnTheConfiguredPorts() throws Exception {
        JsonNode ds = single("daemonset.yaml");
        assertThat(ds.path("apiVersion").asText()).isEqualTo("apps/v1");
        assertThat(ds.path("kind").asText()).isEqualTo("DaemonSet");
        JsonNode template = ds.path("spec").path("template");
        assertThat(ds.path("spec").path("selector").path("matchLabels"))
            .as("selector matches the pod labels").isNotEmpty()
            .allSatisfy(v -> assertThat(v).isNotNull());
        ds.path("spec").path("selector").path("matchLabels").fields().forEachRemaining(l ->
            assertThat(template.path("metadata").path("labels").path(l.getKey()).asText())
                .as("pod label %s", l.getKey()).isEqualTo(l.getValue().asText()));
        JsonNode pod = template.path("spec");
        assertThat(pod.path("hostNetwork").asBoolean()).as("hostNetwork").isTrue();
        assertThat(pod.path("dnsPolicy").asText()).isEqualTo("ClusterFirstWithHostNet");
        assertThat(pod.path("securityContext").path("runAsNonRoot").asBoolean()).isTrue();
        assertThat(pod.path("securityContext").path("runAsUser").asInt()).isEqualTo(10001);

        JsonNode target = container(pod.path("containers"), "target");
        TargetConfig config = renderedConfig();
        Set<Integer> configPorts = new HashSet<>();
        for (PortConfig p : config.servablePorts()) {
            configPorts.add(Integer.parseInt(p.address().trsvcid()));
        }
        assertThat(configPorts).containsExactlyInAnyOrder(4420, 8009);

        // The container ports are those of the configuration plus the HTTP server's (--http wins over the config)
        // and the metrics-only listener's (--metrics-http).
        List<String> args = strings(target.path("args"));
        String http = argAfter(args, "--http");
        assertThat(http).as("--http in %s: the management API stays on loopback", args)
            .isEqualTo("127.0.0.1:" + HTTP_PORT);
        String metricsHttp = argAfter(args, "--metrics-http");
        int metricsPort = Integer.parseInt(metricsHttp.substring(metricsHttp.lastIndexOf(':') + 1));
        assertThat(metricsHttp).as("--metrics-http in %s: on the node's address for Prometheus and the kubelet", args)
            .isEqualTo("$(NODE_IP):" + metricsPort);
        List<String> env = new ArrayList<>();
        target.path("env").forEach(e -> env.add(e.path("name").asText()));
        assertThat(env).as("NODE_IP is defined for $(NODE_IP)").contains("NODE_IP");
        Map<String, Integer> ports = new HashMap<>();
        target.path("ports").forEach(p -> ports.put(p.path("name").asText(), p.path("containerPort").asInt()));
        assertThat(new HashSet<>(ports.values())).containsExactlyInAnyOrder(4420, 8009, HTTP_PORT, metricsPort);
        target.path("ports").forEach(p -> assertThat(p.path("protocol").asText("TCP")).isEqualTo("TCP"));
        JsonNode annotations = template.path("metadata").path("annotations");
        assertThat(annotations.path("prometheus.io/port").asText()).isEqualTo(Integer.toString(metricsPort));
        assertThat(annotations.path("prometheus.io/path").asText()).isEqualTo("/metrics");

        // Probes: the NVMe/TCP port for start-up and readiness, GET /metrics on the metrics listener for liveness
        // (no host: the kubelet uses the pod's, i.e. the node's, address, the one the listener is bound to).
        assertThat(target.path("startupProbe").path("tcpSocket").path("port").asInt()).isEqualTo(4420);
        assertThat(target.path("readinessProbe").path("tcpSocket").path("port").asInt()).isIn(configPorts);
        JsonNode liveness = target.path("livenessProbe").path("httpGet");
        assertThat(liveness.path("path").asText()).isEqualTo("/metrics");
        assertThat(liveness.path("port").asInt()).isEqualTo(metricsPort);
        assertThat(liveness.has("host")).isFalse();
        for (String probe : List.of("startupProbe", "readinessProbe", "livenessProbe")) {
            assertThat(target.path(probe).path("periodSeconds").asInt()).as("%s.periodSeconds", probe).isPositive();
        }

        // Security context: non-root, read-only root file system, only IPC_LOCK (RDMA registered memory).
        JsonNode sc = target.path("securityContext");
        assertThat(sc.path("readOnlyRootFilesystem").asBoolean()).isTrue();
        assertThat(sc.path("allowPrivilegeEscalation").asBoolean(true)).isFalse();
        assertThat(strings(sc.path("capabilities").path("drop"))).containsExactly("ALL");
        assertThat(strings(sc.path("capabilities").path("add"))).containsExactly("IPC_LOCK");
        assertThat(target.path("resources").path("limits").path("memory").asText()).isNotBlank();

        // Mounts: the rendered configuration where --config points, the data directory the namespaces use, a
        // writable /tmp for the JNI libraries; each mount names a volume of the pod.
        Map<String, JsonNode> volumes = new LinkedHashMap<>();
        pod.path("volumes").forEach(v -> volumes.put(v.path("name").asText(), v));
        Map<String, String> mounts = mounts(target);
        Path configPath = Path.of(argAfter(args, "--config"));
        assertThat(mounts).containsKey(configPath.getParent().toString());
        assertThat(mounts).containsEntry("/tmp", "tmp");
        assertThat(volumes.get("tmp").has("emptyDir")).isTrue();
        String dataVolume = mounts.get("/var/lib/nvmeof4j");
        assertThat(dataVolume).isNotNull();
        assertThat(volumes.get(dataVolume).path("hostPath").path("path").asText()).isEqualTo("/var/lib/nvmeof4j");
        for (String v : mounts.values()) {
            assertThat(volumes).as("volume %s", v).containsKey(v);
        }
        // The API token comes from a Secret, readable by the daemon's group only (the daemon refuses others' bits).
        Path tokenFile = Path.of(argAfter(args, "--api-token-file"));
        String tokenVolume = mounts.get(tokenFile.getParent().toString());
        assertThat(tokenVolume).as("a volume mounted at %s", tokenFile.getParent()).isNotNull();
        JsonNode secret = volumes.get(tokenVolume).path("secret");
        assertThat(secret.path("secretName").asText()).isNotBlank();
        assertThat(secret.path("defaultMode").asInt()).as("token file mode").isEqualTo(0440);
        assertThat(secret.path("items").get(0).path("path").asText()).isEqualTo(tokenFile.getFileName().toString());
        assertThat(pod.path("securityContext").path("fsGroup").asInt()).as("fsGroup: the daemon's group reads the token")
            .isEqualTo(10001);
        for (var ns : config.subsystems().get(0).namespaces()) {
            assertThat(ns.path().startsWith(dataDir)).as("namespace %d (%s) lives on the data volume", ns.nsid(), ns.path()).isTrue();
        }

        // The init container renders the ConfigMap into the volume the daemon reads it from.
        JsonNode init = container(pod.path("initContainers"), "render-config");
        Map<String, String> initMounts = mounts(init);
        assertThat(initMounts.get(configPath.getParent().toString())).isEqualTo(mounts.get(configPath.getParent().toString()));
        String script = strings(init.path("command")).get(2);
        assertThat(script).contains("@NODE_NAME@").contains("> " + configPath);
        String templateDir = initMounts.entrySet().stream().filter(m -> volumes.get(m.getValue()).has("configMap"))
            .map(Map.Entry::getKey).findFirst().orElseThrow();
        assertThat(script).contains(templateDir + "/target.json");
        assertThat(volumes.get(initMounts.get(templateDir)).path("configMap").path("name").asText())
            .isEqualTo(single("configmap.yaml").path("metadata").path("name").asText());
    }

    @Test
    void shouldParseTheConfigMapsConfigurationWithTheDaemonsParser() throws Exception {
        TargetConfig config = renderedConfig();
        assertThat(config.subsystems()).hasSize(1);
        assertThat(config.subsystems().get(0).nqn()).isEqualTo("nqn.2014-08.io.nvmeof4j:node-" + NODE_NAME);
        assertThat(config.notices()).as("notices").noneMatch(TargetConfig.Notice::warning);
        for (PortConfig p : config.servablePorts()) {
            assertThat(p.address().traddr()).as("listen address: every node, one configuration").isEqualTo("0.0.0.0");
        }
        assertThat(config.daemon().http()).isEqualTo(DaemonSettings.HTTP_DEFAULT);
    }

    @Test
    void shouldPrivilegeOnlyTheBlockDevicePatchAndMountTheNodesDev() throws IOException {
        JsonNode patch = single("block-devices-patch.yaml");
        JsonNode ds = single("daemonset.yaml");
        assertThat(patch.path("kind").asText()).isEqualTo(ds.path("kind").asText());
        assertThat(patch.path("metadata").path("name").asText()).isEqualTo(ds.path("metadata").path("name").asText());
        JsonNode pod = patch.path("spec").path("template").path("spec");
        JsonNode target = container(pod.path("containers"), "target");
        assertThat(target.path("securityContext").path("privileged").asBoolean()).isTrue();
        assertThat(target.path("securityContext").path("allowPrivilegeEscalation").asBoolean())
            .as("Kubernetes refuses privileged with allowPrivilegeEscalation false").isTrue();
        assertThat(mounts(target)).containsEntry("/dev", "dev");
        assertThat(pod.path("volumes").get(0).path("hostPath").path("path").asText()).isEqualTo("/dev");
        assertThat(container(ds.path("spec").path("template").path("spec").path("containers"), "target")
            .path("securityContext").path("privileged").asBoolean(false)).as("the DaemonSet itself").isFalse();
    }

    @Test
    void shouldParseTheImagesExampleConfiguration() throws Exception {
        TargetConfig config = TargetConfig.parse(Files.readString(DEPLOY.resolve("config/target.json")));
        assertThat(config.servablePorts()).extracting(p -> p.address().trsvcid()).containsExactlyInAnyOrder("4420", "8009");
        assertThat(config.notices()).noneMatch(TargetConfig.Notice::warning);
    }

    @Test
    void shouldKeepTheSystemdUnitsRdmaBlockDeviceAndRestartSettings() throws IOException {
        Map<String, List<String>> unit = systemdUnit(DEPLOY.resolve("systemd/nvmeof4j-target.service"));
        assertThat(unit.get("Service.LimitMEMLOCK")).containsExactly("infinity");
        assertThat(unit.get("Service.Restart")).containsExactly("on-failure");
        assertThat(unit.get("Service.RestartPreventExitStatus")).as("no restart loop on a bad configuration (exit 2)")
            .containsExactly("2");
        assertThat(unit.get("Service.KillSignal")).containsExactly("SIGTERM");
        assertThat(unit.get("Service.ExecStart")).singleElement().asString()
            .as("the live configuration in the state directory: live changes are written there")
            .contains("--config /var/lib/nvmeof4j/target.json")
            .as("the API token in the state directory, the one place the service may write")
            .contains("--api-token-file /var/lib/nvmeof4j/api-token");
        assertThat(unit.get("Service.User")).singleElement().isNotEqualTo("root");
        // Hardening that still lets RDMA and block devices through.
        assertThat(unit.get("Service.PrivateDevices")).containsExactly("no");
        assertThat(unit.get("Service.DevicePolicy")).containsExactly("closed");
        assertThat(unit.get("Service.DeviceAllow")).contains("char-infiniband_verbs rw", "/dev/infiniband/rdma_cm rw",
            "block-blkext rw", "block-sd rw");
        assertThat(unit.get("Service.AmbientCapabilities")).containsExactly("CAP_IPC_LOCK");
        assertThat(unit.get("Service.RestrictAddressFamilies")).singleElement().asString().contains("AF_NETLINK");
        assertThat(unit.get("Service.PrivateTmp")).as("a writable /tmp for the JNI libraries").containsExactly("yes");
        assertThat(unit.get("Service.ProtectSystem")).containsExactly("strict");
        assertThat(unit.get("Service.StateDirectory")).containsExactly("nvmeof4j");
        assertThat(unit).doesNotContainKey("Service.MemoryDenyWriteExecute");
        assertThat(unit.get("Install.WantedBy")).containsExactly("multi-user.target");
    }

    /**
     * ProtectSystem=strict keeps /etc/nvmeof4j read-only to the service, so the configuration the daemon rewrites
     * after every live change lives in the state directory, seeded once from /etc/nvmeof4j/target.json: the unit's
     * ExecStartPre is run here (paths moved to a temporary directory) and must copy the seed when there is no live
     * configuration, never overwrite one, and fail the start when there is neither.
     */
    @Test
    void shouldSeedTheLiveConfigurationInTheStateDirectoryOnce(@org.junit.jupiter.api.io.TempDir Path tmp)
        throws Exception {
        Map<String, List<String>> unit = systemdUnit(DEPLOY.resolve("systemd/nvmeof4j-target.service"));
        assertThat(unit.get("Service.StateDirectory")).containsExactly("nvmeof4j");
        assertThat(unit.get("Service.ProtectSystem")).containsExactly("strict");
        assertThat(unit.getOrDefault("Service.ReadWritePaths", List.of())).noneMatch(p -> p.contains("/etc"));
        String pre = unit.get("Service.ExecStartPre").get(0);
        assertThat(pre).startsWith("/bin/sh -c '").endsWith("'");
        Path etc = Files.createDirectories(tmp.resolve("etc"));
        Path state = Files.createDirectories(tmp.resolve("state"));
        String script = pre.substring("/bin/sh -c '".length(), pre.length() - 1)
            .replace("/etc/nvmeof4j", etc.toString()).replace("/var/lib/nvmeof4j", state.toString());
        assertThat(runShell(script)).as("no seed, no live configuration: the start fails").isNotZero();
        Files.copy(DEPLOY.resolve("config/target.json"), etc.resolve("target.json"));
        assertThat(runShell(script)).isZero();
        Path live = state.resolve("target.json");
        assertThat(Files.readString(live)).isEqualTo(Files.readString(etc.resolve("target.json")));
        assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(live)))
            .isEqualTo("rw-r-----");
        TargetConfig.parse(Files.readString(live));
        // A live configuration the daemon changed is never overwritten by the seed.
        Files.writeString(live, "{\"changed\": \"live\"}");
        assertThat(runShell(script)).isZero();
        assertThat(Files.readString(live)).isEqualTo("{\"changed\": \"live\"}");
    }

    private static int runShell(String script) throws Exception {
        Process p = new ProcessBuilder("/bin/sh", "-c", script).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assertThat(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).as("sh -c finished").isTrue();
        return p.exitValue();
    }

    @Test
    void shouldBuildOnABaseImageArgumentAndExposeTheTargetsPorts() throws IOException {
        List<String> lines = dockerfileInstructions(DEPLOY.resolve("Dockerfile"));
        int from = indexOf(lines, "FROM ");
        assertThat(lines.get(from)).isEqualTo("FROM ${BASE_IMAGE}");
        assertThat(lines.subList(0, from)).anyMatch(l -> l.matches("ARG BASE_IMAGE=\\S+:\\S+"));
        assertThat(lines).contains("ARG HTTP_PORT=" + HTTP_PORT);
        String expose = lines.get(indexOf(lines, "EXPOSE "));
        assertThat(expose.split("\\s+")).containsExactlyInAnyOrder("EXPOSE", "4420/tcp", "8009/tcp", "${HTTP_PORT}/tcp");
        String user = lines.get(indexOf(lines, "USER "));
        assertThat(user).isNotIn("USER root", "USER 0");
        assertThat(lines).contains("STOPSIGNAL SIGTERM");
        assertThat(lines).anyMatch(l -> l.startsWith("CMD ") && l.contains("/etc/nvmeof4j/target.json"));
        String entrypoint = lines.get(indexOf(lines, "ENTRYPOINT "));
        assertThat(entrypoint).contains("/opt/nvmeof4j/bin/nvmeof-target");
        assertThat(Files.readString(DEPLOY.resolve("docker/nvmeof-target")))
            .contains("exec java").contains("-Djava.io.tmpdir=/tmp").contains("io.nvmeof4j.target.daemon.Main")
            .contains("--api-token-file=${NVMEOF4J_API_TOKEN_FILE}");
        // The token goes to the daemon user's state directory: /etc/nvmeof4j is not writable for it.
        assertThat(lines).anyMatch(l -> l.startsWith("ENV ") && l.contains("NVMEOF4J_API_TOKEN_FILE=/var/lib/nvmeof4j/"));
    }

    // ---- helpers -------------------------------------------------------------------------------------------------

    /**
     * The ConfigMap's target.json rendered for {@link #NODE_NAME} (the init container's sed), then parsed. The
     * parser checks that a file namespace's directory exists (it creates the file at start): the node's data
     * directory, {@value #DATA_DIR}, is mapped to {@link #dataDir} here, as the hostPath volume maps it in the pod.
     */
    private TargetConfig renderedConfig() throws Exception {
        JsonNode cm = single("configmap.yaml");
        assertThat(cm.path("kind").asText()).isEqualTo("ConfigMap");
        String json = cm.path("data").path("target.json").asText();
        assertThat(json).as("ConfigMap data target.json").contains("@NODE_NAME@");
        JSON.readTree(json);   // plain JSON, as nvmetcli writes it: no comments
        return TargetConfig.parse(json.replace("@NODE_NAME@", NODE_NAME).replace("\"" + DATA_DIR + "/", "\"" + dataDir + "/"));
    }

    private static Map<Path, List<JsonNode>> manifests() throws IOException {
        Map<Path, List<JsonNode>> all = new LinkedHashMap<>();
        try (Stream<Path> files = Files.list(KUBERNETES)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml") || p.toString().endsWith(".yml"))
                .sorted().toList()) {
                List<JsonNode> docs = new ArrayList<>();
                try (var parser = YAML.getFactory().createParser(f.toFile())) {
                    var it = YAML.readValues(parser, JsonNode.class);
                    while (it.hasNext()) {
                        JsonNode d = it.next();
                        if (d != null && !d.isNull() && !d.isMissingNode()) {
                            docs.add(d);
                        }
                    }
                }
                all.put(f, docs);
            }
        }
        return all;
    }

    private static JsonNode single(String file) throws IOException {
        List<JsonNode> docs = manifests().get(KUBERNETES.resolve(file));
        assertThat(docs).as(file).hasSize(1);
        return docs.get(0);
    }

    private static JsonNode container(JsonNode containers, String name) {
        for (JsonNode c : containers) {
            if (name.equals(c.path("name").asText())) {
                return c;
            }
        }
        throw new AssertionError("no container " + name + " in " + containers);
    }

    /** mountPath → volume name. */
    private static Map<String, String> mounts(JsonNode container) {
        Map<String, String> m = new LinkedHashMap<>();
        container.path("volumeMounts").forEach(v -> m.put(v.path("mountPath").asText(), v.path("name").asText()));
        return m;
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    private static String argAfter(List<String> args, String flag) {
        int i = args.indexOf(flag);
        assertThat(i).as("%s in %s", flag, args).isNotNegative();
        return args.get(i + 1);
    }

    /** "Section.Key" → values in order (keys such as DeviceAllow repeat). Comments and blank lines are skipped. */
    static Map<String, List<String>> systemdUnit(Path file) throws IOException {
        Map<String, List<String>> out = new LinkedHashMap<>();
        String section = "";
        for (String raw : Files.readAllLines(file)) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#") || line.startsWith(";")) {
                continue;
            }
            if (line.startsWith("[") && line.endsWith("]")) {
                section = line.substring(1, line.length() - 1);
                continue;
            }
            int eq = line.indexOf('=');
            assertThat(eq).as("systemd line '%s' in %s", line, file).isPositive();
            out.computeIfAbsent(section + "." + line.substring(0, eq).strip(), k -> new ArrayList<>())
                .add(line.substring(eq + 1).strip());
        }
        return out;
    }

    private static final Pattern CONTINUATION = Pattern.compile("\\\\\\s*$");

    /** Dockerfile instructions, one per element, continuation lines joined and comments dropped. */
    static List<String> dockerfileInstructions(Path file) throws IOException {
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String raw : Files.readAllLines(file)) {
            String line = raw.strip();
            if (line.startsWith("#") || (line.isEmpty() && current.length() == 0)) {
                continue;
            }
            Matcher m = CONTINUATION.matcher(line);
            if (m.find()) {
                current.append(line, 0, m.start()).append(' ');
                continue;
            }
            current.append(line);
            out.add(current.toString().strip().replaceAll("\\s+", " "));
            current.setLength(0);
        }
        return out;
    }

    private static int indexOf(List<String> lines, String prefix) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(prefix)) {
                return i;
            }
        }
        throw new AssertionError("no " + prefix.strip() + " instruction in " + lines);
    }

    private static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path d = p; d != null; d = d.getParent()) {
            if (Files.exists(d.resolve("deploy/Dockerfile"))) {
                return d;
            }
        }
        throw new IllegalStateException("no folder containing deploy/Dockerfile above " + p);
    }
}
