package io.nvmeof4j.it.tcp;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.auth.Dhchap;
import io.nvmeof4j.protocol.auth.DhchapException;
import io.nvmeof4j.protocol.auth.DhchapFailure;
import io.nvmeof4j.protocol.auth.DhchapGroup;
import io.nvmeof4j.protocol.auth.DhchapHash;
import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.protocol.auth.GeneratedPsk;
import io.nvmeof4j.protocol.auth.HostAuthentication;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import io.nvmeof4j.target.metrics.TargetMeterNames;
import io.nvmeof4j.target.model.Port;
import io.nvmeof4j.tcp.tls.DerivedPsk;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;
import io.nvmeof4j.tcp.tls.PskHash;
import io.nvmeof4j.tcp.tls.TlsStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Secure channel concatenation end to end in one JVM (127.0.0.1): our initiator with {@code --concat} against our
 * target (DH-HMAC-CHAP with SC_C NEWTLSPSK on a plain admin queue, then admin and I/O queues again under TLS with
 * the generated PSK), the PSK's life on the target, and the refusals: a port without TLS, a TLS-only port, a host
 * without a key, SC_C on an I/O queue, a generated identity the target does not hold. The Linux 6.12 guest has no
 * concatenation (its host and nvmet gained it later), so no guest run covers it.
 */
class SecureConcatIT {
    static final String NQN = "nqn.2026-11.io.nvmeof4j:concat";
    static final SecureRandom RANDOM = new SecureRandom();
    /** Configured with ffdhe2048. */
    static final io.nvmeof4j.initiator.HostIdentity HOST = io.nvmeof4j.initiator.HostIdentity.generate();
    /** Configured with nvmet's defaults (hmac(sha256), the null group): concatenation takes the host's ffdhe offer. */
    static final io.nvmeof4j.initiator.HostIdentity NULL_GROUP_HOST = io.nvmeof4j.initiator.HostIdentity.generate();
    static final io.nvmeof4j.initiator.HostIdentity KEYLESS_HOST = io.nvmeof4j.initiator.HostIdentity.generate();
    /** A raw host (its own NQN, so the PSK it leaves waiting does not meet the other tests'); ffdhe2048. */
    static final HostIdentity RAW_HOST = HostIdentity.random();
    static final String HOST_KEY = DhchapSecret.generate(32, 1, RANDOM);
    static final String NULL_GROUP_KEY = DhchapSecret.generate(48, 2, RANDOM);
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    static TargetDaemon daemon;
    /** tsas tls1.3, treq "not required": what libnvme pairs with --concat. */
    static TransportAddress tlsOptional;
    static TransportAddress plain;
    static TransportAddress tlsRequired;

    @BeforeAll
    static void start() throws Exception {
        String json = """
            {"hosts": [{"nqn": "%1$s", "dhchap": {"key": "%2$s", "hash": "hmac(sha256)", "dhgroup": "ffdhe2048"}},
                       {"nqn": "%3$s", "dhchap": {"key": "%4$s"}},
                       {"nqn": "%5$s"},
                       {"nqn": "%7$s", "dhchap": {"key": "%2$s", "dhgroup": "ffdhe2048"}}],
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0", "tsas": "tls1.3", "treq": "not required"}, "subsystems": ["%6$s"]},
                       {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "subsystems": ["%6$s"]},
                       {"portid": 3, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0", "tsas": "tls1.3", "treq": "required"}, "subsystems": ["%6$s"]}],
             "subsystems": [{"nqn": "%6$s", "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "32M",
                                                                   "block_size": 4096}}]}]}
            """.formatted(HOST.hostNqn().value(), HOST_KEY, NULL_GROUP_HOST.hostNqn().value(), NULL_GROUP_KEY,
            KEYLESS_HOST.hostNqn().value(), NQN, RAW_HOST.hostnqn());
        daemon = TargetDaemon.start(TargetConfig.parse(json));
        for (Port p : daemon.model().ports()) {
            switch (p.portId()) {
                case 1 -> tlsOptional = p.address();
                case 2 -> plain = p.address();
                default -> tlsRequired = p.address();
            }
        }
    }

    @AfterAll
    static void stop() {
        if (daemon != null) {
            daemon.close();
        }
    }

    private static ConnectOptions concat(String key) {
        return ConnectOptions.defaults().withIoQueues(2).withConnectTimeout(TIMEOUT)
            .withReconnect(Duration.ofMillis(200), Duration.ofMillis(200), Duration.ZERO)
            .withDhchap(key, null).withSecureChannelConcat(true);
    }

    private static double authentications(String result, DhchapHash hash, DhchapGroup group) {
        var counter = daemon.metrics().registry().find(TargetMeterNames.AUTHENTICATIONS)
            .tag(TargetMeterNames.TAG_RESULT, result).tag(TargetMeterNames.TAG_HASH, hash.name().toLowerCase())
            .tag(TargetMeterNames.TAG_DHGROUP, group.linuxName()).counter();
        return counter == null ? 0 : counter.count();
    }

    private static double failures() {
        return daemon.metrics().registry().find(TargetMeterNames.AUTHENTICATIONS)
            .tag(TargetMeterNames.TAG_RESULT, "failure").counters().stream()
            .mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
    }

    /** The generated PSKs the target holds for {@code host}, by identity, with the CNTLID each serves (0: none). */
    private static Map<String, Integer> generatedFor(io.nvmeof4j.initiator.HostIdentity host) {
        return generatedFor(host.hostNqn().value());
    }

    private static Map<String, Integer> generatedFor(String hostNqn) {
        Map<String, Integer> all = new java.util.TreeMap<>(daemon.generatedTlsPsks());
        all.keySet().removeIf(identity -> !identity.contains(" " + hostNqn + " "));
        return all;
    }

    private static void awaitNoGeneratedPsk(io.nvmeof4j.initiator.HostIdentity host) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!generatedFor(host).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(generatedFor(host)).as("generated PSKs of a host whose controller is gone").isEmpty();
    }

    /** 32 writes of 4 to 128 KiB in flight over both queues, then every one read back and compared. */
    private static void writeAndVerify(NvmeofNamespace ns, long firstLba, long seed) throws Exception {
        Random random = new Random(seed);
        List<ByteBuffer> written = new ArrayList<>();
        List<Long> lbas = new ArrayList<>();
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        long lba = firstLba;
        for (int i = 0; i < 32; i++) {
            int blocks = 1 << (i % 6);
            byte[] data = new byte[blocks * ns.blockSize()];
            random.nextBytes(data);
            written.add(ByteBuffer.wrap(data));
            lbas.add(lba);
            writes.add(ns.write(lba, ByteBuffer.allocateDirect(data.length).put(data).flip()));
            lba += blocks;
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        for (int i = 0; i < written.size(); i++) {
            assertThat(ns.read(lbas.get(i), written.get(i).capacity() / ns.blockSize()).get(30, TimeUnit.SECONDS))
                .as("read-back of write %d", i).isEqualTo(written.get(i));
        }
    }

    @Test
    void shouldServeVerifiedIoOverTlsUnderThePskDhHmacChapGenerated() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 2)) {
            double before = authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048);
            String first;
            try (NvmeofController c = host.connect(tlsOptional, NQN, concat(HOST_KEY))) {
                writeAndVerify(c.namespace(1), 0, 1);
                // The identity the TLS queues offered, as the target holds it: NVMe1G01 (SHA-256), bound to this
                // controller (its TLS admin Connect bound it; its I/O Connects were checked against it).
                Map<String, Integer> generated = generatedFor(HOST);
                assertThat(generated).hasSize(1);
                first = generated.keySet().iterator().next();
                assertThat(first).startsWith("NVMe1G01 " + HOST.hostNqn().value() + " " + NQN + " ");
                assertThat(first.substring(first.lastIndexOf(' ') + 1)).as("base64 SHA-256 digest").hasSize(44);
                assertThat(generated.get(first)).isEqualTo(c.controllerId());
            }
            // One transaction: the plain admin queue. The TLS queues under the generated PSK need none (no ATR).
            assertThat(authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048) - before).isEqualTo(1);
            // The PSK served one association: gone with its controller, and the next connect generates another.
            awaitNoGeneratedPsk(HOST);
            try (NvmeofController c = host.connect(tlsOptional, NQN, concat(HOST_KEY))) {
                writeAndVerify(c.namespace(1), 1024, 2);
                assertThat(generatedFor(HOST)).hasSize(1).doesNotContainKey(first);
            }
            awaitNoGeneratedPsk(HOST);
        }
    }

    @Test
    void shouldReplaceTheGeneratedPskWhenTheHostReauthenticates() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 1);
             NvmeofController c = host.connect(tlsOptional, NQN, concat(HOST_KEY))) {
            Map<String, Integer> before = generatedFor(HOST);
            assertThat(before).hasSize(1);
            double replaced = authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048);
            // REPLACETLSPSK on the TLS admin queue under the generated PSK (the queue needed no authentication).
            c.reauthenticate();
            Map<String, Integer> after = generatedFor(HOST);
            assertThat(after).hasSize(1).doesNotContainKeys(before.keySet().toArray(String[]::new));
            assertThat(after.values()).containsExactly(c.controllerId());
            assertThat(authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048) - replaced).isEqualTo(1);
            writeAndVerify(c.namespace(1), 5120, 5);
        }
        awaitNoGeneratedPsk(HOST);
    }

    @Test
    void shouldTakeAnFfdheGroupForAHostConfiguredWithTheNullGroup() throws Exception {
        double before = authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048);
        try (NvmeofHost host = NvmeofHost.create(NULL_GROUP_HOST, 1);
             NvmeofController c = host.connect(tlsOptional, NQN, concat(NULL_GROUP_KEY))) {
            writeAndVerify(c.namespace(1), 2048, 3);
            assertThat(generatedFor(NULL_GROUP_HOST).keySet()).singleElement().asString().startsWith("NVMe1G01 ");
        }
        assertThat(authentications("success", DhchapHash.SHA256, DhchapGroup.FFDHE2048) - before).isEqualTo(1);
        awaitNoGeneratedPsk(NULL_GROUP_HOST);
    }

    @Test
    void shouldRefuseConcatenationWhereTheTargetCannotServeIt() throws Exception {
        try (NvmeofHost host = NvmeofHost.create(HOST, 1);
             NvmeofHost keyless = NvmeofHost.create(KEYLESS_HOST, 1)) {
            double failuresBefore = failures();
            // A port without TLS: the host could not come back under the PSK. Failure1 03h, as nvmet without TLS.
            assertThatThrownBy(() -> host.connect(plain, NQN, concat(HOST_KEY)).close())
                .isInstanceOf(IOException.class)
                .hasMessageContaining("secure channel concatenation mismatch")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(HOST_KEY.substring(10, 30)));
            // A port that requires TLS does not take the first connection without it.
            assertThatThrownBy(() -> host.connect(tlsRequired, NQN, concat(HOST_KEY)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("ICReq");
            // No key for the host on the target: no ATR, no transaction, no PSK.
            assertThatThrownBy(() -> keyless.connect(tlsOptional, NQN, concat(HOST_KEY)).close())
                .isInstanceOf(IOException.class).hasMessageContaining("no ATR");
            assertThat(generatedFor(HOST)).isEmpty();
            assertThat(generatedFor(KEYLESS_HOST)).isEmpty();
            // Counted: the refused transaction on the plain port (the others never started one).
            assertThat(failures() - failuresBefore).isEqualTo(1);
            // The target still serves.
            try (NvmeofController c = host.connect(tlsOptional, NQN, concat(HOST_KEY))) {
                writeAndVerify(c.namespace(1), 3072, 4);
            }
        }
        awaitNoGeneratedPsk(HOST);
    }

    private static InetSocketAddress socket(TransportAddress a) {
        return new InetSocketAddress(a.traddr(), a.port());
    }

    /** A raw host's plain admin queue: Connect, then DH-HMAC-CHAP with NEWTLSPSK; the generated PSK. */
    private static GeneratedPsk newTlsPsk(RawNvmeTcpHost admin) throws Exception {
        admin.initialize(false, false);
        Completion connect = admin.connectAdmin(NQN, RAW_HOST, 5000);
        assertThat(connect.isSuccess()).isTrue();
        assertThat(connect.dw0() & (1 << 17)).as("ATR").isNotZero();
        HostAuthentication.Result r = new HostAuthentication(DhchapSecret.parse(HOST_KEY), null, RAW_HOST.hostnqn(),
            NQN, RANDOM, Dhchap.SC_C_NEWTLSPSK).authenticate(AuthenticationIT.raw(admin), 1);
        assertThat(r.group()).isEqualTo(DhchapGroup.FFDHE2048);
        return r.generatedPsk();
    }

    /** A TLS 1.3 handshake from a new connection to {@code a} under {@code psk}, bounded by 10 s. */
    private static String handshake(TransportAddress a, DerivedPsk psk) throws IOException {
        try (SocketChannel channel = SocketChannel.open(socket(a)); Selector selector = Selector.open()) {
            channel.configureBlocking(false);
            TlsStream tls = TlsStream.client(channel, psk);
            SelectionKey key = channel.register(selector, 0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!tls.handshake()) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("TLS handshake not done within 10 s");
                }
                key.interestOps(tls.hasPendingOutput() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                selector.select(100);
                selector.selectedKeys().clear();
            }
            return tls.security();
        }
    }

    @Test
    void shouldAcceptTheGeneratedIdentityAndNoOther() throws Exception {
        GeneratedPsk generated;
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.open(socket(tlsOptional), TIMEOUT)) {
            generated = newTlsPsk(admin);
        }
        DerivedPsk psk = NvmeTlsKeys.deriveGenerated(PskHash.SHA256, generated.key(), RAW_HOST.hostnqn(), NQN);
        String identity = psk.identity().toString();
        // Unbound (0) until a TLS admin Connect under it: the plain controller that made it has gone, the PSK stays.
        assertThat(daemon.generatedTlsPsks()).containsEntry(identity, 0);

        // Another PSK of the same host and subsystem: another digest, an identity the target does not hold.
        byte[] other = generated.key().clone();
        other[0] ^= 1;
        DerivedPsk forged = NvmeTlsKeys.deriveGenerated(PskHash.SHA256, other, RAW_HOST.hostnqn(), NQN);
        assertThatThrownBy(() -> handshake(tlsOptional, forged)).isInstanceOf(IOException.class)
            .hasMessageContaining("did not accept PSK identity NVMe1G01 " + RAW_HOST.hostnqn());
        // The generated identity with its PSK.
        assertThat(handshake(tlsOptional, NvmeTlsKeys.deriveGenerated(PskHash.SHA256, generated.key(),
            RAW_HOST.hostnqn(), NQN))).isEqualTo("TLS 1.3 (TLS_AES_128_GCM_SHA256)");
        generated.clear();
        psk.clear();
        forged.clear();
        // A handshake alone binds nothing: still waiting for an admin Connect.
        assertThat(daemon.generatedTlsPsks()).containsEntry(identity, 0);
    }

    @Test
    void shouldRefuseSecureChannelConcatenationOnAnIoQueue() throws Exception {
        Map<String, Integer> before = generatedFor(RAW_HOST.hostnqn());
        try (RawNvmeTcpHost admin = RawNvmeTcpHost.open(socket(tlsOptional), TIMEOUT)) {
            admin.initialize(false, false);
            Completion connect = admin.connectAdmin(NQN, RAW_HOST, 5000);
            new HostAuthentication(DhchapSecret.parse(HOST_KEY), null, RAW_HOST.hostnqn(), NQN, RANDOM)
                .authenticate(AuthenticationIT.raw(admin), 1);
            assertThat(admin.enableController(Duration.ofSeconds(5))).isNotZero();
            assertThat(admin.setFeatures(0x07, 0x00000000).isSuccess()).isTrue();
            try (RawNvmeTcpHost io = RawNvmeTcpHost.open(socket(tlsOptional), TIMEOUT)) {
                io.initialize(false, false);
                Completion ioConnect = io.connectIo(NQN, RAW_HOST, 1, connect.dw0() & 0xFFFF, 31, 0);
                assertThat(ioConnect.dw0() & (1 << 17)).as("ATR").isNotZero();
                assertThatThrownBy(() -> new HostAuthentication(DhchapSecret.parse(HOST_KEY), null,
                    RAW_HOST.hostnqn(), NQN, RANDOM, Dhchap.SC_C_NEWTLSPSK).authenticate(AuthenticationIT.raw(io), 1))
                    .isInstanceOfSatisfying(DhchapException.class, e -> {
                        assertThat(e.reportedByController()).isTrue();
                        assertThat(e.explanation()).isEqualTo(DhchapFailure.CONCAT_MISMATCH);
                    });
                // Failure1 takes the controller down, both connections with it.
                assertThat(io.awaitPeerClose(Duration.ofSeconds(5)).closed()).isTrue();
                assertThat(admin.awaitPeerClose(Duration.ofSeconds(5)).closed()).isTrue();
            }
        }
        assertThat(generatedFor(RAW_HOST.hostnqn())).as("no PSK generated").isEqualTo(before);
    }
}
