package io.nvmeof4j.tcp.tls;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Vectors: the interchange strings and version-1 identities are libnvme's own ({@code test/psk.c}); the TLS PSKs
 * were computed independently with OpenSSL 3's HKDF ({@code openssl kdf ... HKDF}) from the same inputs, and the
 * guest test checks them against the Linux host's keyring.
 */
class NvmeTlsKeysTest {
    private static final byte[] KEY32 = HexFormat.of().parseHex(
        "5512DBB6737D0106F65975B773DFB011FFC344BCF442E2DD6D8BC4870B5D5B03");
    private static final byte[] KEY48 = HexFormat.of().parseHex(
        "5512DBB6737D0106F65975B773DFB011FFC344BCF442E2DD6D8BC4870B5D5B03FFC344BCF442E2DD6D8BC4870B5D5B03");
    private static final String HOST = "nqn.psk-test-host";
    private static final String SUBSYS = "nqn.psk-test-subsys";

    @Test
    void shouldExportAndImportLibnvmeInterchangeVectors() {
        assertThat(ConfiguredPsk.of(0, KEY32).toInterchangeFormat())
            .isEqualTo("NVMeTLSkey-1:00:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:");
        assertThat(ConfiguredPsk.of(1, KEY32).toInterchangeFormat())
            .isEqualTo("NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:");
        assertThat(ConfiguredPsk.of(2, KEY48).toInterchangeFormat())
            .isEqualTo("NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:");

        ConfiguredPsk parsed = ConfiguredPsk.parse(
            "NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:");
        assertThat(parsed.transform()).isEqualTo(2);
        assertThat(parsed.keyBytes()).isEqualTo(KEY48);
        assertThat(parsed.cipherHash()).isEqualTo(PskHash.SHA384);
        assertThat(parsed.toString()).doesNotContain("VRLb").contains("48 bytes");
    }

    @Test
    void shouldRejectMalformedInterchangeKeysWithoutQuotingThem() {
        String good = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
        String badCrc = good.replace("Nf9LrZ", "Nf9LrY");
        assertThatThrownBy(() -> ConfiguredPsk.parse(badCrc))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CRC-32").hasMessageNotContaining("VRLb");
        assertThatThrownBy(() -> ConfiguredPsk.parse(good.replace(":01:", ":02:")))
            .hasMessageContaining("32 bytes does not fit hash specifier 02");
        assertThatThrownBy(() -> ConfiguredPsk.parse(good.replace(":01:", ":03:")))
            .hasMessageContaining("not 00, 01 or 02");
        assertThatThrownBy(() -> ConfiguredPsk.parse(good.replace("NVMeTLSkey-1", "NVMeTLSkey-2")))
            .hasMessageContaining("NVMeTLSkey-1:hh:");
        assertThatThrownBy(() -> ConfiguredPsk.parse("NVMeTLSkey-1:01:!!!!:")).hasMessageContaining("base64");
        assertThatThrownBy(() -> ConfiguredPsk.parse(good.substring(0, good.length() - 1)))
            .hasMessageContaining("NVMeTLSkey-1:hh:");
    }

    @Test
    void shouldDeriveLibnvmeVersion1IdentitiesAndTheTlsPsk() {
        DerivedPsk sha256 = NvmeTlsKeys.derive(ConfiguredPsk.of(1, KEY32), HOST, SUBSYS, 1);
        assertThat(sha256.identity().toString()).isEqualTo(
            "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=");
        assertThat(HexFormat.of().withUpperCase().formatHex(sha256.tlsPsk()))
            .isEqualTo("8FC3C0BADFD4C0C66FA3CA33AADD0314F85536CC9BC47338B60F3E6E563786CA");

        DerivedPsk sha384 = NvmeTlsKeys.derive(ConfiguredPsk.of(2, KEY48), HOST, SUBSYS, 1);
        assertThat(sha384.identity().toString()).isEqualTo("NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys "
            + "QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a");
        assertThat(HexFormat.of().withUpperCase().formatHex(sha384.tlsPsk())).isEqualTo(
            "A2B2F943F479FC682555CEC89857C80ED004CE92F32A973D5764155BB7E36B17"
                + "A85368A0666D250AFAC9282DDA2E62CA");
        assertThat(sha384.toString()).doesNotContain("A2B2F9");
    }

    @Test
    void shouldDeriveLibnvmeCompatIdentitiesAsOlderLibnvmeAndNvmeCli213Do() {
        // libnvme's test_data_identity_compat; nvme-cli 2.13 (Debian trixie) prints the SHA-256 one for this key.
        assertThat(NvmeTlsKeys.derive(ConfiguredPsk.of(1, KEY32), HOST, SUBSYS, 1,
            NvmeTlsKeys.Derivation.LIBNVME_COMPAT).identity().toString()).isEqualTo(
            "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys 66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=");
        assertThat(NvmeTlsKeys.derive(ConfiguredPsk.of(2, KEY48), HOST, SUBSYS, 1,
            NvmeTlsKeys.Derivation.LIBNVME_COMPAT).identity().toString()).isEqualTo(
            "NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys "
                + "RsKmYJ3nAn1ApjjMloJFbAkLPivONDAX/xW327YBUsn2eGShXSjCZvBaOxscLqmz");
    }

    @Test
    void shouldDeriveVersion0IdentityFromAnUntransformedKey() {
        DerivedPsk derived = NvmeTlsKeys.derive(ConfiguredPsk.of(0, KEY32), HOST, SUBSYS, 0);
        assertThat(derived.identity().toString()).isEqualTo("NVMe0R01 nqn.psk-test-host nqn.psk-test-subsys");
        assertThat(HexFormat.of().withUpperCase().formatHex(derived.tlsPsk()))
            .isEqualTo("EC85300BA827726BD3BC4FC07F3A34AEC5FE7C8CCAC05FEFC2F021C74E0DF9EF");
    }

    @Test
    void shouldParseIdentitiesAndRefuseOthers() {
        PskIdentity v1 = PskIdentity.parse("NVMe1R02 nqn.h nqn.s abc=");
        assertThat(v1.version()).isEqualTo(1);
        assertThat(v1.hash()).isEqualTo(PskHash.SHA384);
        assertThat(v1.hostNqn()).isEqualTo("nqn.h");
        assertThat(v1.subsystemNqn()).isEqualTo("nqn.s");
        assertThat(v1.digest()).isEqualTo("abc=");
        assertThat(PskIdentity.parse("NVMe0R01 nqn.h nqn.s").toString()).isEqualTo("NVMe0R01 nqn.h nqn.s");

        assertThatThrownBy(() -> PskIdentity.parse("client")).hasMessageContaining("not an NVMe PSK identity");
        assertThat(PskIdentity.parse("NVMe1G01 nqn.h nqn.s abc=").generated()).isTrue();
        assertThat(PskIdentity.parse("NVMe1G01 nqn.h nqn.s abc=").toString()).isEqualTo("NVMe1G01 nqn.h nqn.s abc=");
        assertThat(v1.generated()).isFalse();
        assertThatThrownBy(() -> PskIdentity.parse("NVMe0G01 nqn.h nqn.s")).hasMessageContaining("generated");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe1X01 nqn.h nqn.s abc=")).hasMessageContaining("type X");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe2R01 nqn.h nqn.s")).hasMessageContaining("version 2");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe0R03 nqn.h nqn.s")).hasMessageContaining("hash 03");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe1R01 nqn.h nqn.s")).hasMessageContaining("4 space-separated");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe0R01 nqn.h  nqn.s")).hasMessageContaining("3 space-separated");
        assertThatThrownBy(() -> PskIdentity.parse("NVMe0R01 " + "x".repeat(700))).hasMessageContaining("too long");
    }
}
