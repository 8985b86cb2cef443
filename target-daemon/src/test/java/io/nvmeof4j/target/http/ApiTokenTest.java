package io.nvmeof4j.target.http;

import io.nvmeof4j.target.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The API token file: made 0600 with 256 random bits, read back, compared exactly, refused when unsafe or bad. */
class ApiTokenTest {
    @TempDir
    Path dir;

    @Test
    void shouldCreateAnOwnerOnlyFileWith256RandomBitsInAMissingDirectory() throws Exception {
        Path file = dir.resolve("state/nvmeof4j/api-token");
        ApiToken token = ApiToken.loadOrCreate(file);
        assertThat(token.created()).isTrue();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())))
            .isEqualTo("rwx------");
        String text = Files.readString(file, StandardCharsets.US_ASCII);
        assertThat(text).endsWith("\n").hasSize(44);
        String value = text.strip();
        assertThat(value).matches("[A-Za-z0-9_-]{43}");
        assertThat(Base64.getUrlDecoder().decode(value)).hasSize(32);
        assertThat(token.matches(value)).isTrue();
        // The id is the first 8 hex digits of SHA-256(token): what the audit log shows.
        assertThat(token.id()).isEqualTo(HexFormat.of().formatHex(
            MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8))).substring(0, 8));
        // No temporary file is left behind.
        try (var files = Files.list(file.getParent())) {
            assertThat(files).containsExactly(file);
        }
        // Two starts make two different tokens.
        Path other = dir.resolve("other-token");
        ApiToken.loadOrCreate(other);
        assertThat(Files.readString(other)).isNotEqualTo(text);
    }

    @Test
    void shouldReadAnExistingTokenAndCompareItExactly() throws Exception {
        Path file = dir.resolve("api-token");
        String value = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        Files.writeString(file, value + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r-----"));
        ApiToken token = ApiToken.loadOrCreate(file);
        assertThat(token.created()).isFalse();
        assertThat(Files.readString(file)).isEqualTo(value + "\n");
        assertThat(token.matches(value)).isTrue();
        assertThat(token.matches(value + "0")).isFalse();
        assertThat(token.matches(value.substring(1))).isFalse();
        assertThat(token.matches(value.toUpperCase())).isFalse();
        assertThat(token.matches(value + "\n")).isFalse();
        assertThat(token.matches("")).isFalse();
        assertThat(token.matches(null)).isFalse();
    }

    @Test
    void shouldRefuseATokenFileOthersCanReadOrThatHoldsNoToken() throws Exception {
        Path file = dir.resolve("api-token");
        Files.writeString(file, "x".repeat(40) + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> ApiToken.loadOrCreate(file)).isInstanceOf(ConfigException.class)
            .hasMessageContaining("nvmeof4j.api_token_file").hasMessageContaining(file.toString())
            .hasMessageContaining("readable or writable by every user").hasMessageContaining("chmod 600");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        for (String bad : new String[] {"", "short\n", "x".repeat(40) + " y\n", "x".repeat(40) + "\nsecond line\n",
            "x".repeat(1100)}) {
            Files.writeString(file, bad);
            assertThatThrownBy(() -> ApiToken.loadOrCreate(file)).as("token file holding '%s'", bad)
                .isInstanceOf(ConfigException.class).hasMessageContaining("does not hold a token");
            assertThat(Files.readString(file)).isEqualTo(bad);
        }
        Path directory = dir.resolve("a-directory");
        Files.createDirectory(directory);
        assertThatThrownBy(() -> ApiToken.loadOrCreate(directory)).hasMessageContaining("is a directory");
    }

    @Test
    void shouldFailClearlyWhenTheFileCannotBeMade() throws Exception {
        Path readOnly = dir.resolve("ro");
        Files.createDirectory(readOnly);
        Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("r-x------"));
        try {
            // root ignores directory permissions; only assert what an unprivileged user sees
            if (!Files.isWritable(readOnly)) {
                assertThatThrownBy(() -> ApiToken.loadOrCreate(readOnly.resolve("api-token")))
                    .isInstanceOf(ConfigException.class).hasMessageContaining("cannot create the API token file");
            }
        } finally {
            Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("rwx------"));
        }
        Path underAFile = dir.resolve("plain-file");
        Files.writeString(underAFile, "x");
        assertThatThrownBy(() -> ApiToken.loadOrCreate(underAFile.resolve("api-token")))
            .isInstanceOf(ConfigException.class).hasMessageContaining(underAFile.resolve("api-token").toString());
    }
}
