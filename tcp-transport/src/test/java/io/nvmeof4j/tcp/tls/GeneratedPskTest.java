package io.nvmeof4j.tcp.tls;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * PSKs that DH-HMAC-CHAP generated (secure channel concatenation): their identity and TLS PSK against values
 * computed outside Java, the store's lifecycle, and a TLS handshake under one.
 */
class GeneratedPskTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:concat-test-host";
    private static final String SUBSYS = "nqn.2026-11.io.nvmeof4j:concat-test";
    private static final long HOUR = TimeUnit.HOURS.toNanos(1);

    /** The generated PSK of the known answer: 32 (SHA-256) or 48 (SHA-384) bytes 0x00, 0x01, ... */
    private static byte[] counting(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) i;
        }
        return b;
    }

    /**
     * Known answers, computed with Python's hmac/hashlib (OpenSSL) from the formulas the kernel implements
     * (nvme_auth_generate_digest; nvme_auth_derive_tls_psk with RFC 8446's HkdfLabel, the kernel since 6.18):
     * digest = base64(HMAC(PSK, hostnqn " " subnqn " NVMe-over-Fabrics")), TLS PSK = HKDF-Expand(HKDF-Extract(
     * 0^L, PSK), L16 || len "tls13 nvme-tls-psk" || len "hh digest", L).
     */
    @Test
    void shouldDeriveTheIdentityAndTlsPskAsTheKernel() {
        DerivedPsk sha256 = NvmeTlsKeys.deriveGenerated(PskHash.SHA256, counting(32), HOST, SUBSYS);
        assertThat(sha256.identity().toString()).isEqualTo("NVMe1G01 " + HOST + " " + SUBSYS + " " + KAT_DIGEST_256);
        assertThat(sha256.identity().generated()).isTrue();
        assertThat(HexFormat.of().formatHex(sha256.tlsPsk())).isEqualTo(KAT_TLS_PSK_256);

        DerivedPsk sha384 = NvmeTlsKeys.deriveGenerated(PskHash.SHA384, counting(48), HOST, SUBSYS);
        assertThat(sha384.identity().toString()).isEqualTo("NVMe1G02 " + HOST + " " + SUBSYS + " " + KAT_DIGEST_384);
        assertThat(HexFormat.of().formatHex(sha384.tlsPsk())).isEqualTo(KAT_TLS_PSK_384);
        assertThat(sha384.toString()).doesNotContain(KAT_TLS_PSK_384.substring(0, 16));

        assertThatThrownBy(() -> NvmeTlsKeys.deriveGenerated(PskHash.SHA384, counting(32), HOST, SUBSYS))
            .hasMessageContaining("32 bytes");
    }

    static final String KAT_DIGEST_256 = "5b1YqbCLmgPdzhJhc7KTRMlJkqHo2g5I8mCpl1U+F7g=";
    static final String KAT_TLS_PSK_256 = "d8b9f3faccc73019baf4a302f9572424507cda29416e944ce9ab151bdf937412";
    static final String KAT_DIGEST_384 = "zpQlB3clEInrNrxsioZ1LbcvSpi5lhUVUQ5zUUB/JThjUXkMgoSd8uYPv/QSQALD";
    static final String KAT_TLS_PSK_384 = "30fdadd489f3b024bd4a003aaf1df03bb2a413a84cb8e897175d2c651afeeb6f2aed8bf7cdddbfa1aaf0996d15923f79";

    private static DerivedPsk generated(int seed) {
        byte[] psk = counting(32);
        psk[0] = (byte) seed;
        return NvmeTlsKeys.deriveGenerated(PskHash.SHA256, psk, HOST, SUBSYS);
    }

    private static PskIdentity id(String identity) {
        return PskIdentity.parse(identity);
    }

    @Test
    void shouldHandOutCopiesOfAGeneratedPskUntilItsControllerGoes() {
        HostPskStore store = new HostPskStore(Map.of());
        DerivedPsk psk = generated(1);
        byte[] expected = psk.tlsPsk();
        String name = store.addGenerated(psk, HOUR);
        assertThat(name).startsWith("NVMe1G01 " + HOST + " " + SUBSYS + " ");
        DerivedPsk first = store.resolve(id(name));
        assertThat(first.tlsPsk()).isEqualTo(expected);
        first.clear(); // what a handshake does with it
        assertThat(store.resolve(id(name)).tlsPsk()).isEqualTo(expected);
        assertThat(store.generatedOwners()).containsEntry(name, null);

        Object controller = new Object();
        assertThat(store.bindGenerated(name, controller)).isTrue();
        assertThat(store.bindGenerated(name, controller)).as("the same controller again").isTrue();
        assertThat(store.bindGenerated(name, new Object())).as("a second association").isFalse();
        assertThat(store.generatedOwner(name)).isSameAs(controller);
        // A configured key of the host is another matter: not touched, not consulted.
        assertThat(store.get(HOST)).isNull();

        store.releaseGenerated(new Object());
        assertThat(store.resolve(id(name))).isNotNull();
        store.releaseGenerated(controller);
        assertThat(store.resolve(id(name))).isNull();
        assertThat(store.generatedOwners()).isEmpty();
        assertThat(store.bindGenerated(name, controller)).isFalse();
    }

    @Test
    void shouldDropAnUnusedPskAfterItsTimeoutOrWhenANewerOneComes() {
        HostPskStore store = new HostPskStore(Map.of());
        String expired = store.addGenerated(generated(1), -1);
        assertThat(store.resolve(id(expired))).isNull();
        assertThat(store.bindGenerated(expired, new Object())).isFalse();

        String older = store.addGenerated(generated(2), HOUR);
        String newer = store.addGenerated(generated(3), HOUR);
        assertThat(newer).isNotEqualTo(older);
        assertThat(store.resolve(id(older))).as("one unbound PSK per host and subsystem").isNull();
        assertThat(store.resolve(id(newer))).isNotNull();
        assertThat(store.generatedOwners()).containsOnlyKeys(newer);

        // A bound one stays when the host generates the next (a second association to the subsystem).
        Object controller = new Object();
        assertThat(store.bindGenerated(newer, controller)).isTrue();
        String third = store.addGenerated(generated(4), HOUR);
        assertThat(store.generatedOwners()).containsOnlyKeys(newer, third);
    }

    @Test
    void shouldReplaceAGeneratedPskForTheSameController() {
        HostPskStore store = new HostPskStore(Map.of());
        String old = store.addGenerated(generated(5), HOUR);
        Object controller = new Object();
        store.bindGenerated(old, controller);
        DerivedPsk replacement = generated(6);
        String replacementName = replacement.identity().toString();
        assertThat(store.replaceGenerated(old, replacement)).isTrue();
        assertThat(store.resolve(id(old))).isNull();
        assertThat(store.resolve(id(replacementName))).isNotNull();
        assertThat(store.generatedOwner(replacementName)).isSameAs(controller);
        assertThat(store.replaceGenerated(old, generated(7))).as("the old one is gone").isFalse();
        assertThatThrownBy(() -> store.addGenerated(NvmeTlsKeys.derive(ConfiguredPsk.of(1, counting(32)), HOST,
            SUBSYS, 1), HOUR)).hasMessageContaining("not a generated PSK");
    }

    private LoopbackPair pair;
    private ServerSocketChannel listener;
    private SocketChannel hostSide;
    private SocketChannel controllerSide;

    @BeforeEach
    void connect() throws IOException {
        pair = LoopbackPair.open();
        listener = pair.listener;
        hostSide = pair.hostSide;
        controllerSide = pair.controllerSide;
    }

    @AfterEach
    void close() throws IOException {
        pair.close();
    }

    private static void handshake(TlsStream client, TlsStream server) throws IOException {
        long start = System.nanoTime();
        boolean clientDone = false;
        boolean serverDone = false;
        while (!(clientDone && serverDone)) {
            if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(10)) {
                throw new IOException("handshake did not finish in 10 s");
            }
            serverDone = server.handshake();
            clientDone = client.handshake();
        }
    }

    @Test
    void shouldAcceptAHandshakeUnderAGeneratedPskTheStoreHolds() throws IOException {
        HostPskStore store = new HostPskStore(Map.of());
        byte[] psk = counting(48);
        String name = store.addGenerated(NvmeTlsKeys.deriveGenerated(PskHash.SHA384, psk, HOST, SUBSYS), HOUR);
        TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.deriveGenerated(PskHash.SHA384, psk, HOST, SUBSYS));
        TlsStream server = TlsStream.server(controllerSide, store);
        handshake(client, server);
        assertThat(server.identity().toString()).isEqualTo(name);
        assertThat(server.identity().generated()).isTrue();
        assertThat(server.security()).isEqualTo("TLS 1.3 (TLS_AES_256_GCM_SHA384)");
    }

    @Test
    void shouldRefuseAGeneratedIdentityTheStoreDoesNotHold() throws IOException {
        HostPskStore store = new HostPskStore(Map.of());
        byte[] psk = counting(32);
        store.addGenerated(NvmeTlsKeys.deriveGenerated(PskHash.SHA256, psk, HOST, SUBSYS), HOUR);
        // The same host and subsystem, another PSK (say, one from an earlier transaction): another digest.
        byte[] other = Arrays.copyOf(psk, 32);
        other[31] ^= 1;
        TlsStream client = TlsStream.client(hostSide, NvmeTlsKeys.deriveGenerated(PskHash.SHA256, other, HOST, SUBSYS));
        TlsStream server = TlsStream.server(controllerSide, store);
        assertThatThrownBy(() -> handshake(client, server))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("no generated PSK")
            .hasMessageContaining("NVMe1G01 " + HOST);
    }
}
