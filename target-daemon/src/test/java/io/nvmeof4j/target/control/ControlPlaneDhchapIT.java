package io.nvmeof4j.target.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** DH-HMAC-CHAP credentials set live (management API) are written to the configuration file and survive a restart. */
class ControlPlaneDhchapIT {
    private static final String HOST = "nqn.2014-08.org.example:host1";
    private static final String OTHER = "nqn.2014-08.org.example:host2";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void shouldPersistRotatedAndRemovedCredentials() throws Exception {
        String first = DhchapSecret.generate(32, 0, new SecureRandom());
        String second = DhchapSecret.generate(48, 0, new SecureRandom());
        Path file = dir.resolve("target.json");
        Files.writeString(file, """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "shutdown_timeout_ms": 1000},
             "hosts": [{"nqn": "%s", "dhchap_key": "%s"}],
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}],
             "subsystems": []}
            """.formatted(HOST, first));
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(file))) {
            ControlPlane control = daemon.controlPlane();
            assertThat(daemon.registry().hostKeys().get(HOST).hostKey().sameAs(DhchapSecret.parse(first))).isTrue();

            control.setDhchap("test", HOST, JSON.readTree("{\"key\": \"" + second + "\", \"hash\": \"hmac(sha384)\"}"));
            control.setDhchap("test", OTHER, JSON.readTree("{\"key\": \"" + first + "\"}"));
            assertThat(daemon.registry().hostKeys().get(HOST).hostKey().sameAs(DhchapSecret.parse(second))).isTrue();
            TargetConfig reloaded = TargetConfig.load(file);
            assertThat(reloaded.hostCredentials().get(HOST).hostKey().sameAs(DhchapSecret.parse(second))).isTrue();
            assertThat(reloaded.hostCredentials().get(HOST).hash()).isEqualTo(DhchapHash.SHA384);
            assertThat(reloaded.hostCredentials().get(OTHER).hostKey().sameAs(DhchapSecret.parse(first))).isTrue();
            JsonNode written = JSON.readTree(file.toFile());
            assertThat(written.at("/hosts/0/dhchap_key").isMissingNode()).isTrue(); // one place for the key

            // A refused change leaves the file and the live credentials as they were.
            String before = Files.readString(file);
            assertThatThrownBy(() -> control.setDhchap("test", HOST, JSON.readTree("{\"key\": \"DHHC-1:00:x:\"}")))
                .isInstanceOf(ControlException.class);
            assertThat(Files.readString(file)).isEqualTo(before);
            assertThat(daemon.registry().hostKeys().get(HOST).hostKey().sameAs(DhchapSecret.parse(second))).isTrue();

            control.setDhchap("test", HOST, null);
            assertThat(daemon.registry().hostKeys().get(HOST)).isNull();
            assertThat(TargetConfig.load(file).hostCredentials()).containsOnlyKeys(OTHER);
        }
    }
}
