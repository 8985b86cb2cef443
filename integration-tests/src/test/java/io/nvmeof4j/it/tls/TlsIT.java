package io.nvmeof4j.it.tls;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.DiscoveryEntry;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Our initiator against our target over NVMe/TCP with TLS 1.3 (in one JVM, 127.0.0.1): a port that requires
 * TLS, one where it is optional, discovery reporting both, verified I/O, and the refusals (wrong PSK, a host
 * without TLS on the required port, a host without a key) while an established TLS controller keeps working.
 */
class TlsIT {
    private static final String SUBNQN = "nqn.2026-11.io.nvmeof4j:tls";
    private static final HostIdentity HOST = HostIdentity.of("nqn.2014-08.org.nvmexpress:uuid:"
        + "6b1c3e1a-3f7e-4b0a-9a51-7c8f1f2d9e01", UUID.fromString("6b1c3e1a-3f7e-4b0a-9a51-7c8f1f2d9e01"));
    private static final HostIdentity KEYLESS_HOST = HostIdentity.of("nqn.2014-08.org.nvmexpress:uuid:"
        + "0e9a1d44-5c7b-4f71-8d1e-3a2b6c9f0a11", UUID.fromString("0e9a1d44-5c7b-4f71-8d1e-3a2b6c9f0a11"));
    private static final String KEY = ConfiguredPsk.of(1, HexFormat.of().parseHex(
        "c5a1d1f2e3b4a5968778695a4b3c2d1e0f1e2d3c4b5a69788796a5b4c3d2e1f0")).toInterchangeFormat();
    private static final String KEY_384 = ConfiguredPsk.of(2, HexFormat.of().parseHex(
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"))
        .toInterchangeFormat();
    private static final String WRONG_KEY = ConfiguredPsk.of(1, new byte[32]).toInterchangeFormat();
    private static final HostIdentity HOST_384 = HostIdentity.of("nqn.2014-08.org.nvmexpress:uuid:"
        + "9f2e7a10-1b2c-4d3e-8f4a-5b6c7d8e9f00", UUID.fromString("9f2e7a10-1b2c-4d3e-8f4a-5b6c7d8e9f00"));
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @TempDir
    static Path dir;
    private static TargetDaemon daemon;
    private static TransportAddress required;
    private static TransportAddress optional;
    private static TransportAddress discovery;

    @BeforeAll
    static void start() throws Exception {
        String json = """
            {
              "hosts": [{"nqn": "%2$s", "tls_key": "%4$s", "tls_psk_derivation": "rfc8446"}, {"nqn": "%3$s"}, {"nqn": "%6$s", "tls_key": "%5$s"}],
              "ports": [
                {"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0",
                                       "treq": "required", "tsas": "tls1.3"}, "subsystems": ["%1$s"]},
                {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0",
                                       "treq": "not required", "tsas": "tls1.3"}, "subsystems": ["%1$s"]},
                {"portid": 3, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "0"},
                 "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}
              ],
              "subsystems": [
                {"nqn": "%1$s", "attr": {"allow_any_host": "1"},
                 "namespaces": [{"nsid": 1, "enable": 1, "device": {"backend": "ram", "size": "64M", "block_size": 4096}}]}
              ]
            }
            """.formatted(SUBNQN, HOST.hostNqn().value(), KEYLESS_HOST.hostNqn().value(), KEY, KEY_384,
            HOST_384.hostNqn().value());
        Path config = dir.resolve("tls.json");
        Files.writeString(config, json, StandardCharsets.UTF_8);
        daemon = TargetDaemon.start(TargetConfig.load(config));
        for (Port port : daemon.model().ports()) {
            TransportAddress a = port.address();
            switch (port.portId()) {
                case 1 -> required = a;
                case 2 -> optional = a;
                default -> discovery = a;
            }
        }
    }

    @AfterAll
    static void stop() {
        if (daemon != null) {
            daemon.close();
        }
    }

    private static ConnectOptions tls(String key, int identityVersion) {
        return tls(key, identityVersion, false);
    }

    private static ConnectOptions tls(String key, int identityVersion, boolean compat) {
        return ConnectOptions.defaults().withIoQueues(2).withConnectTimeout(TIMEOUT)
            .withReconnect(Duration.ofMillis(200), Duration.ofMillis(200), Duration.ZERO)
            .withTls(new ConnectOptions.Tls(key, identityVersion, compat));
    }

    @Test
    void shouldServeVerifiedIoOverTlsWithEitherIdentityVersionAndSuite() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 1);
             NvmeofHost host384 = NvmeofHost.create(HOST_384, 1)) {
            try (NvmeofController v1 = host.connect(required, SUBNQN, tls(KEY, 1))) {
                writeAndVerify(v1.namespace(1), 0, 7);
            }
            try (NvmeofController v0 = host.connect(optional, SUBNQN, tls(KEY, 0))) {
                writeAndVerify(v0.namespace(1), 2000, 8);
            }
            try (NvmeofController sha384 = host384.connect(required, SUBNQN, tls(KEY_384, 1))) {
                writeAndVerify(sha384.namespace(1), 4000, 9);
            }
            // As a Linux host with nvme-cli < 2.16 derives: detected from the v1 digest, configured (the default)
            // for v0.
            try (NvmeofController compat = host384.connect(required, SUBNQN, tls(KEY_384, 1, true))) {
                writeAndVerify(compat.namespace(1), 12_000, 10);
            }
            try (NvmeofController compat = host384.connect(optional, SUBNQN, tls(KEY_384, 0, true))) {
                writeAndVerify(compat.namespace(1), 14_000, 11);
            }
        }
    }

    /**
     * 64 commands in flight at once over two queues, sizes from 4 KiB (in-capsule) to 256 KiB (R2T, several
     * C2HData PDUs and TLS records each), then everything read back and compared.
     */
    private static void writeAndVerify(NvmeofNamespace ns, long firstLba, long seed) throws Exception {
        Random random = new Random(seed);
        List<ByteBuffer> written = new ArrayList<>();
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        long lba = firstLba;
        List<Long> lbas = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            int blocks = 1 << (i % 7); // 1..64 blocks of 4 KiB
            byte[] data = new byte[blocks * ns.blockSize()];
            random.nextBytes(data);
            ByteBuffer src = ByteBuffer.allocateDirect(data.length).put(data).flip();
            written.add(ByteBuffer.wrap(data));
            lbas.add(lba);
            writes.add(ns.write(lba, src));
            lba += blocks;
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        List<CompletableFuture<ByteBuffer>> reads = new ArrayList<>();
        for (int i = 0; i < written.size(); i++) {
            reads.add(ns.read(lbas.get(i), written.get(i).capacity() / ns.blockSize()));
        }
        for (int i = 0; i < reads.size(); i++) {
            assertThat(reads.get(i).get(30, TimeUnit.SECONDS)).as("read-back of write %d", i).isEqualTo(written.get(i));
        }
    }

    @Test
    void shouldRefuseWrongPskPlainAndKeylessHostsWhileServingAnEstablishedOne() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 1);
             NvmeofHost keyless = NvmeofHost.create(KEYLESS_HOST, 1);
             NvmeofController established = host.connect(required, SUBNQN, tls(KEY, 1))) {
            NvmeofNamespace ns = established.namespace(1);
            writeAndVerify(ns, 6000, 1);

            assertThatThrownBy(() -> host.connect(required, SUBNQN, tls(WRONG_KEY, 1)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("TLS handshake")
                .satisfies(e -> assertThat(String.valueOf(e.getMessage())).doesNotContain(WRONG_KEY.substring(16, 40)));
            assertThatThrownBy(() -> host.connect(required, SUBNQN, tls(WRONG_KEY, 0)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("TLS handshake");
            // A plain host on the port that requires TLS: the target closes the connection before ICResp.
            assertThatThrownBy(() -> host.connect(required, SUBNQN, ConnectOptions.defaults()
                .withConnectTimeout(TIMEOUT).withReconnect(Duration.ofMillis(200), Duration.ofMillis(200),
                    Duration.ZERO)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("ICReq");
            // A host the target has no key for.
            assertThatThrownBy(() -> keyless.connect(required, SUBNQN, tls(KEY, 1)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("TLS handshake");

            writeAndVerify(ns, 8000, 2);
        }
    }

    @Test
    void shouldServePlainHostsOnThePortWhereTlsIsNotRequired() throws Exception {
        try (NvmeofHost keyless = NvmeofHost.create(KEYLESS_HOST, 1);
             NvmeofController plain = keyless.connect(optional, SUBNQN, ConnectOptions.defaults().withIoQueues(1)
                 .withConnectTimeout(TIMEOUT))) {
            writeAndVerify(plain.namespace(1), 10_000, 3);
        }
    }

    @Test
    void shouldReportTreqAndTsasInDiscovery() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 1)) {
            List<DiscoveryEntry> entries = host.discover(discovery);
            DiscoveryEntry req = entries.stream().filter(e -> e.portId() == 1).findFirst().orElseThrow();
            DiscoveryEntry opt = entries.stream().filter(e -> e.portId() == 2).findFirst().orElseThrow();
            assertThat(req.transportRequirements() & 3).isEqualTo(1);
            assertThat(req.tls()).isTrue();
            assertThat(opt.transportRequirements() & 3).isEqualTo(2);
            assertThat(opt.tls()).isTrue();
            DiscoveryEntry self = entries.stream().filter(e -> e.portId() == 3).findFirst().orElseThrow();
            assertThat(self.tls()).isFalse();
            assertThat(self.transportRequirements() & 3).isZero();
        }
    }
}
