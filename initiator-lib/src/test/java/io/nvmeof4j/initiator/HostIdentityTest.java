package io.nvmeof4j.initiator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostIdentityTest {
    @TempDir
    Path dir;

    @Test
    void shouldGenerateOnceAndReuse() throws Exception {
        Path config = dir.resolve("nvmeof4j");
        HostIdentity first = HostIdentity.loadOrCreate(config);
        HostIdentity second = HostIdentity.loadOrCreate(config);
        assertThat(second).isEqualTo(first);
        assertThat(first.hostNqn().value()).isEqualTo("nqn.2014-08.org.nvmexpress:uuid:" + first.hostId());
        assertThat(Files.readString(config.resolve("hostnqn")).trim()).isEqualTo(first.hostNqn().value());
        assertThat(Files.readString(config.resolve("hostid")).trim()).isEqualTo(first.hostId().toString());
        try (var files = Files.list(config)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("hostnqn", "hostid");
        }
    }

    @Test
    void shouldReadFilesWrittenByHand() throws Exception {
        Files.writeString(dir.resolve("hostnqn"), "nqn.2014-08.com.example:host-1\n");
        Files.writeString(dir.resolve("hostid"), "11111111-2222-3333-4444-555555555555\n");
        HostIdentity id = HostIdentity.loadOrCreate(dir);
        assertThat(id).isEqualTo(HostIdentity.of("nqn.2014-08.com.example:host-1",
            UUID.fromString("11111111-2222-3333-4444-555555555555")));
    }

    @Test
    void shouldRejectAnInvalidFile() throws Exception {
        Files.writeString(dir.resolve("hostnqn"), "not an nqn\n");
        Files.writeString(dir.resolve("hostid"), UUID.randomUUID() + "\n");
        assertThatThrownBy(() -> HostIdentity.loadOrCreate(dir)).hasMessageContaining(dir.toString());
    }

    @Test
    void shouldUseTheConfiguredDefaultDirectory() {
        String old = System.getProperty(HostIdentity.CONFIG_DIR_PROP_NAME);
        System.setProperty(HostIdentity.CONFIG_DIR_PROP_NAME, dir.resolve("conf").toString());
        try {
            assertThat(HostIdentity.defaultDirectory()).isEqualTo(dir.resolve("conf"));
            assertThat(HostIdentity.defaultIdentity()).isEqualTo(HostIdentity.loadOrCreate(dir.resolve("conf")));
        } finally {
            if (old == null) {
                System.clearProperty(HostIdentity.CONFIG_DIR_PROP_NAME);
            } else {
                System.setProperty(HostIdentity.CONFIG_DIR_PROP_NAME, old);
            }
        }
    }
}
