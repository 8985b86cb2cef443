package io.nvmeof4j.it.tls;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A host's TLS PSK rotated and removed while the target runs, through the HTTP management API, with our initiator
 * over real sockets: a controller connected with the old key keeps serving verified I/O, new connections need the
 * new key (the old one is refused at the handshake, with either identity version), the change is in the
 * configuration file (a restarted daemon takes the new key), and no answer or log line carries a key.
 */
class TlsKeyRotationIT {
    private static final String SUBNQN = "nqn.2026-11.io.nvmeof4j:tls-rotation";
    private static final HostIdentity HOST = HostIdentity.of("nqn.2014-08.org.nvmexpress:uuid:"
        + "3d0f5a2e-6c1b-4e8a-9b7d-1f2e3a4b5c6d", UUID.fromString("3d0f5a2e-6c1b-4e8a-9b7d-1f2e3a4b5c6d"));
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static String newKey(int hash) {
        byte[] secret = new byte[hash == 1 ? 32 : 48];
        new SecureRandom().nextBytes(secret);
        return ConfiguredPsk.of(hash, secret).toInterchangeFormat();
    }

    private static ConnectOptions tls(String key, int identityVersion) {
        return ConnectOptions.defaults().withIoQueues(1).withConnectTimeout(TIMEOUT)
            .withReconnect(Duration.ofMillis(200), Duration.ofMillis(200), Duration.ZERO)
            .withTls(new ConnectOptions.Tls(key, identityVersion, false));
    }

    @Test
    void shouldRotateAndRemoveAHostsTlsKeyLiveThroughTheHttpApi() throws Exception {
        String first = newKey(1);
        String second = newKey(1); // the same hash: only the binder (and a version-1 digest) tells them apart
        String third = newKey(2); // another hash: the cipher suite changes with it
        Path config = dir.resolve("target.json");
        Files.writeString(config, """
            {
              "hosts": [{"nqn": "%2$s", "tls_key": "%3$s", "tls_psk_derivation": "rfc8446"}],
              "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                         "trsvcid": "0", "treq": "required", "tsas": "tls1.3"}, "subsystems": ["%1$s"]}],
              "subsystems": [{"nqn": "%1$s", "attr": {"allow_any_host": "0"}, "allowed_hosts": ["%2$s"],
                  "namespaces": [{"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "16M",
                                                                     "block_size": 4096}}]}],
              "nvmeof4j": {"reactors": 1, "http": "127.0.0.1:0", "buffer_pool_mib": 16}
            }
            """.formatted(SUBNQN, HOST.hostNqn().value(), first), StandardCharsets.UTF_8);
        String host = HOST.hostNqn().value();
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             NvmeofHost initiator = NvmeofHost.create(HOST, 1)) {
            TransportAddress address = tlsPort(daemon);
            Api api = new Api(daemon);
            try (NvmeofController old = initiator.connect(address, SUBNQN, tls(first, 1))) {
                writeAndVerify(old.namespace(1), 0, 1);

                Api.Answer rotated = api.send("POST", "/api/v1/hosts/" + host + "/tls_key",
                    "{\"key\": \"" + second + "\", \"psk_derivation\": \"rfc8446\"}");
                assertThat(rotated.status()).isEqualTo(200);
                assertThat(rotated.json().at("/tls/hash").asText()).isEqualTo("sha256");
                assertThat(rotated.json().at("/tls/psk_derivation").asText()).isEqualTo("rfc8446");
                assertThat(rotated.body()).doesNotContain(second.substring(16, 40)).doesNotContain("NVMeTLSkey");

                // The old key: refused at the handshake, whichever identity version the host offers (version 0
                // names no key: the PSK binder fails; version 1 carries a digest of another key).
                assertThatThrownBy(() -> initiator.connect(address, SUBNQN, tls(first, 0)).close())
                    .hasMessageContaining("TLS handshake").hasMessageContaining("decrypt_error");
                assertThatThrownBy(() -> initiator.connect(address, SUBNQN, tls(first, 1)).close())
                    .hasMessageContaining("TLS handshake").hasMessageContaining("did not accept PSK identity NVMe1R01");
                // The connection made with the old key goes on: its session keys came from its handshake.
                writeAndVerify(old.namespace(1), 512, 2);
                try (NvmeofController fresh = initiator.connect(address, SUBNQN, tls(second, 0));
                     NvmeofController fresh1 = initiator.connect(address, SUBNQN, tls(second, 1))) {
                    writeAndVerify(fresh.namespace(1), 1024, 3);
                    writeAndVerify(fresh1.namespace(1), 1536, 4);
                }
                writeAndVerify(old.namespace(1), 2048, 5);
            }

            // Persisted: the file names the new key (the daemon writes it in the interchange format).
            TargetConfig reloaded = TargetConfig.load(config);
            assertThat(reloaded.tlsKeys().get(host).key().sameKey(ConfiguredPsk.parse(second))).isTrue();
            assertThat(reloaded.tlsKeys().get(host).version0Derivation()).isEqualTo(NvmeTlsKeys.Derivation.RFC8446);
            assertThat(api.send("GET", "/api/v1/hosts", null).json().toString()).contains("sha256")
                .doesNotContain(second.substring(16, 40));

            // A malformed key is refused with 400, naming the field, never the key; nothing changes.
            String broken = second.substring(0, second.length() - 6) + "AAAA=:";
            String before = Files.readString(config);
            Api.Answer refused = api.send("POST", "/api/v1/hosts/" + host + "/tls_key",
                "{\"key\": \"" + broken + "\"}");
            assertThat(refused.status()).isEqualTo(400);
            assertThat(refused.body()).contains("tls_key").doesNotContain(broken.substring(16, 40));
            assertThat(Files.readString(config)).isEqualTo(before);
            try (NvmeofController still = initiator.connect(address, SUBNQN, tls(second, 1))) {
                writeAndVerify(still.namespace(1), 2560, 6);
            }

            // Removed: no TLS handshake of that host succeeds any more; a second removal is 404.
            assertThat(api.send("DELETE", "/api/v1/hosts/" + host + "/tls_key", null).status()).isEqualTo(200);
            assertThatThrownBy(() -> initiator.connect(address, SUBNQN, tls(second, 1)).close())
                .hasMessageContaining("TLS");
            assertThat(api.send("DELETE", "/api/v1/hosts/" + host + "/tls_key", null).status()).isEqualTo(404);
            assertThat(TargetConfig.load(config).tlsKeys()).doesNotContainKey(host);

            // Set again (a host that had none), a SHA-384 key, the derivation left to its default.
            JsonNode set = api.send("POST", "/api/v1/hosts/" + host + "/tls_key", "{\"key\": \"" + third + "\"}")
                .json();
            assertThat(set.at("/tls/psk_derivation").asText()).isEqualTo("compat");
            assertThat(set.at("/tls/hash").asText()).isEqualTo("sha384");
            try (NvmeofController again = initiator.connect(address, SUBNQN, tls(third, 1))) {
                writeAndVerify(again.namespace(1), 3072, 7);
            }
        }
        // A restarted daemon serves the key last set.
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config));
             NvmeofHost initiator = NvmeofHost.create(HOST, 1);
             NvmeofController c = initiator.connect(tlsPort(daemon), SUBNQN, tls(third, 1))) {
            writeAndVerify(c.namespace(1), 3584, 8);
        }
    }

    private static TransportAddress tlsPort(TargetDaemon daemon) {
        for (Port port : daemon.model().ports()) {
            if (port.portId() == 1) {
                return port.address();
            }
        }
        throw new AssertionError("no port 1");
    }

    /** 32 writes of 1-16 blocks, read back and compared. */
    private static void writeAndVerify(NvmeofNamespace ns, long firstLba, long seed) throws Exception {
        Random random = new Random(seed);
        long lba = firstLba;
        for (int i = 0; i < 32; i++) {
            int blocks = 1 << (i % 5);
            byte[] data = new byte[blocks * ns.blockSize()];
            random.nextBytes(data);
            ns.write(lba, ByteBuffer.allocateDirect(data.length).put(data).flip()).get(30, TimeUnit.SECONDS);
            assertThat(ns.read(lba, blocks).get(30, TimeUnit.SECONDS)).as("read-back at LBA %d", lba)
                .isEqualTo(ByteBuffer.wrap(data));
            lba += blocks;
        }
    }

    /** The daemon's HTTP API with its token; every call bounded. */
    private static final class Api {
        record Answer(int status, String body) {
            JsonNode json() throws Exception {
                return JSON.readTree(body);
            }
        }

        private final HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        private final String base;
        private final String token;

        Api(TargetDaemon daemon) throws Exception {
            this.base = "http://127.0.0.1:" + daemon.httpAddress().getPort();
            this.token = Files.readString(daemon.apiTokenFile()).strip();
        }

        Answer send(String method, String path, String body) throws Exception {
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(TIMEOUT)
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body));
            HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
            return new Answer(response.statusCode(), response.body());
        }
    }
}
