package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof4j.protocol.ana.AnaState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class ConfigWriterTest {
    @TempDir
    Path dir;

    @Test
    void shouldParseWhatItWritesToTheSameConfiguration() throws Exception {
        Files.writeString(dir.resolve("ns.img"), "x".repeat(8192));
        String json = """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off", "allowed_paths": ["."]},
             "hosts": [{"nqn": "nqn.2014-08.org.example:host1"}],
             "ports": [{"portid": 3, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "4420"}, "param": {"inline_data_size": "8192"},
                        "ana_groups": [{"grpid": 1}, {"grpid": 3, "ana": {"state": "inaccessible"}},
                                       {"grpid": 4, "ana": {"state": "change"}}],
                        "subsystems": ["nqn.2014-08.org.example:a"]},
                       {"portid": 7, "addr": {"trtype": "tcp", "adrfam": "ipv6", "traddr": "::1", "trsvcid": "0"},
                        "subsystems": ["nqn.2014-08.org.nvmexpress.discovery"]}],
             "subsystems": [
               {"nqn": "nqn.2014-08.org.example:a", "attr": {"allow_any_host": "0", "serial": "S1", "model": "M",
                "cntlid_min": "5", "cntlid_max": "9", "qid_max": "4"},
                "allowed_hosts": ["nqn.2014-08.org.example:host1"],
                "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "16M", "block_size": 4096}},
                               {"nsid": 9, "enable": 0, "ana_grpid": 3, "ana": {"grpid": 3},
                                "device": {"path": "ns.img", "buffered_io": 1, "shared": 1}},
                               {"nsid": 1024, "device": {"backend": "null", "size": "1T"}}]},
               {"nqn": "nqn.2014-08.org.example:b", "attr": {"allow_any_host": "1"}}]}
            """;
        TargetConfig first = TargetConfig.parse(json, dir);
        JsonNode written = ConfigWriter.write(first, new ObjectMapper().readTree(json));
        TargetConfig second = TargetConfig.parse(ConfigWriter.text(written), dir);

        assertThat(second.hosts()).isEqualTo(first.hosts());
        assertThat(second.ports()).isEqualTo(first.ports());
        assertThat(second.subsystems()).isEqualTo(first.subsystems());
        assertThat(second.daemon()).isEqualTo(first.daemon());
        // What the model has no field for is kept: the settings object, nvmetcli's keys.
        assertThat(written.get("nvmeof4j")).isEqualTo(new ObjectMapper().readTree(json).get("nvmeof4j"));
        // What HA adds to the configuration: ANA groups per port, a namespace's group, shared devices, cntlid ranges.
        assertThat(second.ports().get(0).anaGroups()).isEqualTo(java.util.Map.of(1, AnaState.OPTIMIZED,
            3, AnaState.INACCESSIBLE, 4, AnaState.CHANGE));
        assertThat(second.ports().get(1).anaGroups()).isEmpty();
        assertThat(written.at("/ports/1/ana_groups").isMissingNode()).isTrue();
        assertThat(written.at("/ports/0/ana_groups/1").toString())
            .isEqualTo("{\"grpid\":3,\"ana\":{\"state\":\"inaccessible\"}}");
        NamespaceConfig nine = second.subsystems().get(0).namespaces().get(1);
        assertThat(nine.anaGroupId()).isEqualTo(3);
        assertThat(nine.shared()).isTrue();
        assertThat(second.subsystems().get(0).namespaces().get(0).shared()).isFalse();
        assertThat(written.at("/subsystems/0/namespaces/1/ana_grpid").asInt()).isEqualTo(3);
        assertThat(written.at("/subsystems/0/namespaces/1/device/shared").asInt()).isEqualTo(1);
        assertThat(written.at("/subsystems/0/namespaces/0/device/shared").isMissingNode()).isTrue();
        assertThat(second.subsystems().get(0).cntlidMin()).isEqualTo(5);
        assertThat(second.subsystems().get(0).cntlidMax()).isEqualTo(9);
        // Derived values are written out, so a changed default never changes a running target's identity.
        assertThat(written.at("/subsystems/1/attr/serial").asText()).isEqualTo(first.subsystems().get(1).serial());
        assertThat(written.at("/subsystems/0/namespaces/0/device/uuid").asText())
            .isEqualTo(first.subsystems().get(0).namespaces().get(0).uuid().toString());
        // And writing the second again gives the same text: the format is stable.
        assertThat(ConfigWriter.text(ConfigWriter.write(second, written))).isEqualTo(ConfigWriter.text(written));

        // A namespace moved to another group, a group's state changed and sharing turned off (the model changed, as
        // the control plane changes it): written from the model, both spellings of the group kept in step.
        SubsystemConfig a = second.subsystems().get(0);
        NamespaceConfig moved = new NamespaceConfig(nine.where(), nine.nsid(), nine.enabled(), nine.backend(),
            nine.path(), nine.sizeBytes(), nine.blockSize(), nine.bufferedIo(), nine.uuid(), nine.nguid(), 4, false);
        PortConfig p0 = second.ports().get(0);
        TargetConfig changed = second.withModel(second.hosts(), java.util.List.of(new PortConfig(p0.where(),
                p0.portId(), p0.address(), p0.treq(), p0.options(), p0.subsystems(), java.util.Map.of(4,
                AnaState.OPTIMIZED)), second.ports().get(1)),
            java.util.List.of(new SubsystemConfig(a.nqn(), a.allowAnyHost(), a.allowedHosts(), a.serial(), a.model(),
                a.firmware(), a.version(), a.cntlidMin(), a.cntlidMax(), a.qidMax(), java.util.List.of(
                    a.namespaces().get(0), moved, a.namespaces().get(2))), second.subsystems().get(1)));
        JsonNode rewritten = ConfigWriter.write(changed, written);
        TargetConfig third = TargetConfig.parse(ConfigWriter.text(rewritten), dir);
        assertThat(third.ports()).isEqualTo(changed.ports());
        assertThat(third.subsystems()).isEqualTo(changed.subsystems());
        assertThat(rewritten.at("/subsystems/0/namespaces/1/ana/grpid").asInt()).isEqualTo(4);
        assertThat(rewritten.at("/subsystems/0/namespaces/1/device/shared").isMissingNode()).isTrue();
    }

    /** nvmetcli's referrals and our attr.max_namespaces round-trip; bad referrals name the field. */
    @Test
    void shouldReadAndWriteReferralsAndMaxNamespaces() throws Exception {
        String json = """
            {"nvmeof4j": {"reactors": 1, "buffer_pool_mib": 4, "http": "off"},
             "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "4420"}, "subsystems": ["nqn.2014-08.org.example:a"],
                        "referrals": [{"name": "east", "portid": 5, "enable": 1,
                                       "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "10.0.0.9",
                                                "trsvcid": "8009", "treq": "required"}},
                                      {"name": "off", "enable": 0,
                                       "addr": {"trtype": "rdma", "adrfam": "ipv6", "traddr": "fe80::9",
                                                "trsvcid": "4420"}, "subnqn": "nqn.2014-08.org.example:far"}]}],
             "subsystems": [{"nqn": "nqn.2014-08.org.example:a", "attr": {"allow_any_host": "1",
                             "max_namespaces": "4"}}]}
            """;
        TargetConfig first = TargetConfig.parse(json, dir);
        assertThat(first.ports().get(0).referrals()).extracting(ReferralConfig::name, ReferralConfig::portId,
                ReferralConfig::enabled, ReferralConfig::treq, ReferralConfig::subnqn)
            .containsExactly(org.assertj.core.groups.Tuple.tuple("east", 5, true, "required",
                    "nqn.2014-08.org.nvmexpress.discovery"),
                org.assertj.core.groups.Tuple.tuple("off", 0, false, "not specified", "nqn.2014-08.org.example:far"));
        assertThat(first.subsystems().get(0).maxNamespaces()).isEqualTo(4);
        assertThat(first.notices()).noneMatch(n -> n.text().contains("referral"));
        JsonNode written = ConfigWriter.write(first, null);
        assertThat(written.at("/ports/0/referrals/0/addr/traddr").asText()).isEqualTo("10.0.0.9");
        assertThat(written.at("/ports/0/referrals/1/enable").asInt()).isZero();
        assertThat(written.at("/subsystems/0/attr/max_namespaces").asText()).isEqualTo("4");
        TargetConfig second = TargetConfig.parse(ConfigWriter.text(written), dir);
        assertThat(second.ports()).isEqualTo(first.ports());
        assertThat(second.subsystems()).isEqualTo(first.subsystems());

        for (String[] bad : new String[][] {
            {"\"trsvcid\": \"8009\"", "\"trsvcid\": \"0\"", "referrals[0].addr.trsvcid"},
            {"\"traddr\": \"10.0.0.9\"", "\"traddr\": \"east.example\"", "referrals[0].addr.traddr"},
            {"\"name\": \"off\"", "\"name\": \"east\"", "referrals[1].name"},
            {"\"treq\": \"required\"", "\"treq\": \"always\"", "referrals[0].addr.treq"},
            {"\"max_namespaces\": \"4\"", "\"max_namespaces\": \"2000\"", "max_namespaces"}}) {
            assertThat(json).contains(bad[0]);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> TargetConfig.parse(json.replace(bad[0], bad[1]),
                dir)).as(bad[1]).isInstanceOf(ConfigException.class).hasMessageContaining(bad[2]);
        }
    }

    private static final String KEY = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";

    /** TLS ports, host PSKs and every daemon setting, for the round trips below. */
    private static final String SECURED = """
        {"nvmeof4j": {"reactors": 2, "idle_strategy": "busy", "idle_spin_us": 7, "buffer_pool_mib": 4,
                      "max_data_transfer_kib": 256, "hugepages": true, "shutdown_timeout_ms": 1234,
                      "http": "127.0.0.1:0", "metrics": false, "api_token_file": "/srv/tokens/api",
                      "metrics_http": "127.0.0.1:9481", "http_allowed_hosts": ["target.example"],
                      "http_request_timeout_ms": 2500, "http_max_connections": 17,
                      "http_max_connections_per_peer": 3, "allowed_paths": ["/srv/nvmeof"], "ram_budget_mib": 96,
                      "max_pending_connections": 64, "max_pending_connections_per_host": 9,
                      "connect_timeout_ms": 4000},
         "hosts": [{"nqn": "nqn.2014-08.org.example:host1", "tls_key": "%s", "tls_psk_derivation": "rfc8446"},
                   {"nqn": "nqn.2014-08.org.example:host2"}],
         "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                    "trsvcid": "4420", "tsas": "tls1.3"}, "subsystems": ["nqn.2014-08.org.example:a"]},
                   {"portid": 2, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                    "trsvcid": "4421", "tsas": "tls1.3", "treq": "not required"},
                    "subsystems": ["nqn.2014-08.org.example:a"]},
                   {"portid": 3, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                    "trsvcid": "4422"}, "subsystems": ["nqn.2014-08.org.example:a"]}],
         "subsystems": [{"nqn": "nqn.2014-08.org.example:a", "attr": {"allow_any_host": "0"},
                         "allowed_hosts": ["nqn.2014-08.org.example:host1", "nqn.2014-08.org.example:host2"],
                         "namespaces": [{"nsid": 1, "device": {"backend": "ram", "size": "1M"}}]}]}
        """.formatted(KEY);

    @Test
    void shouldWriteTlsPortsHostKeysAndEverySettingWithoutAPreviousDocument() throws Exception {
        TargetConfig first = TargetConfig.parse(SECURED, dir);
        JsonNode written = ConfigWriter.write(first, null);
        TargetConfig second = TargetConfig.parse(ConfigWriter.text(written), dir);

        assertThat(second.daemon()).isEqualTo(first.daemon());
        assertThat(second.ports()).isEqualTo(first.ports());
        assertThat(second.ports().get(0).options().secureChannel()).isEqualTo(1); // required
        assertThat(second.ports().get(1).treq()).isEqualTo("not required");
        assertThat(second.ports().get(2).options().tcpSecurityType()).isZero();
        assertThat(written.at("/ports/0/addr/tsas").asText()).isEqualTo("tls1.3");
        assertThat(written.at("/ports/2/addr/tsas").isMissingNode()).isTrue();
        assertThat(second.tlsKeys()).containsOnlyKeys("nqn.2014-08.org.example:host1");
        var psk = second.tlsKeys().get("nqn.2014-08.org.example:host1");
        assertThat(psk.key().sameKey(first.tlsKeys().get("nqn.2014-08.org.example:host1").key())).isTrue();
        assertThat(psk.version0Derivation()).isEqualTo(io.nvmeof4j.tcp.tls.NvmeTlsKeys.Derivation.RFC8446);
        assertThat(written.at("/nvmeof4j/ram_budget_mib").asLong()).isEqualTo(96);
        assertThat(written.at("/nvmeof4j/connect_timeout_ms").asLong()).isEqualTo(4000);
        assertThat(written.at("/nvmeof4j/api_token_file").asText()).isEqualTo("/srv/tokens/api");
    }

    @Test
    void shouldKeepTlsFieldsAndSettingsAsWrittenWhenTheModelChanges() throws Exception {
        JsonNode original = new ObjectMapper().readTree(SECURED);
        TargetConfig first = TargetConfig.parse(SECURED, dir);
        // A live change (a listener dropped) rewrites the model; the secured fields must survive it.
        TargetConfig changed = first.withModel(first.hosts(), first.ports().subList(0, 2), first.subsystems());
        JsonNode written = ConfigWriter.write(changed, original);
        TargetConfig second = TargetConfig.parse(ConfigWriter.text(written), dir);

        assertThat(written.get("nvmeof4j")).isEqualTo(original.get("nvmeof4j"));
        assertThat(written.at("/hosts/0/tls_key").asText()).isEqualTo(KEY);
        assertThat(written.at("/hosts/0/tls_psk_derivation").asText()).isEqualTo("rfc8446");
        assertThat(written.at("/hosts/1/tls_key").isMissingNode()).isTrue();
        assertThat(second.ports()).isEqualTo(changed.ports());
        assertThat(second.daemon()).isEqualTo(first.daemon());
        assertThat(second.tlsKeys().keySet()).isEqualTo(first.tlsKeys().keySet());
        // And the file still parses after a second change: "required" never lost its "tls1.3".
        assertThat(TargetConfig.parse(ConfigWriter.text(ConfigWriter.write(second, written)), dir).ports())
            .isEqualTo(changed.ports());
    }

    @Test
    void shouldWriteANamespacesQosLimitsOnlyWhenItHasSome() throws Exception {
        String json = """
            {"ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1",
                        "trsvcid": "0"}, "subsystems": ["nqn.2014-08.io.nvmeof4j:qos"]}],
             "subsystems": [{"nqn": "nqn.2014-08.io.nvmeof4j:qos", "namespaces": [
              {"nsid": 1, "device": {"backend": "ram", "size": "1M"}, "qos": {"rw_ios_per_sec": 3000,
                                                                               "w_mbytes_per_sec": 7}},
              {"nsid": 2, "device": {"backend": "ram", "size": "1M"}}]}]}
            """;
        TargetConfig first = TargetConfig.parse(json, dir);
        JsonNode written = ConfigWriter.write(first, new ObjectMapper().readTree(json));
        assertThat(written.at("/subsystems/0/namespaces/0/qos").toString())
            .isEqualTo("{\"rw_ios_per_sec\":3000,\"w_mbytes_per_sec\":7}");
        assertThat(written.at("/subsystems/0/namespaces/1").has("qos")).isFalse();
        TargetConfig again = TargetConfig.parse(ConfigWriter.text(written), dir);
        assertThat(again.subsystems().get(0).namespaces()).isEqualTo(first.subsystems().get(0).namespaces());
        // Removing the limits removes the object, even from a document that had it.
        NamespaceConfig unlimited = first.subsystems().get(0).namespaces().get(0)
            .withQos(io.nvmeof4j.target.backend.QosLimits.NONE);
        assertThat(ConfigWriter.namespace(unlimited, (com.fasterxml.jackson.databind.node.ObjectNode)
            written.at("/subsystems/0/namespaces/0")).has("qos")).isFalse();
    }
}
