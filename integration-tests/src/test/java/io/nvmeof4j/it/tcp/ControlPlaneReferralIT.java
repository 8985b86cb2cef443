package io.nvmeof4j.it.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof4j.initiator.DiscoveryEntry;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.it.control.RpcConnection;
import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.daemon.TargetDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static io.nvmeof4j.it.tcp.Bytes.cString;
import static io.nvmeof4j.it.tcp.Bytes.u16;
import static io.nvmeof4j.it.tcp.Bytes.u64;
import static io.nvmeof4j.it.tcp.Bytes.u8;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Discovery referrals added and removed live over the SPDK JSON-RPC socket, on the wire (NVMe/TCP, 127.0.0.1): a
 * connected discovery controller that enabled discovery log change notices gets the event (notice F0h, log 70h), a
 * raw discovery log read lists the referral as an entry of SUBTYPE 1 with nvmet's field values, our initiator's
 * discover returns it, a restarted daemon serves it from the file, and removing it takes it out again.
 */
class ControlPlaneReferralIT {
    private static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";
    private static final HostIdentity RAW_HOST = HostIdentity.random();
    private static final String REFERRAL = "{\"address\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", "
        + "\"traddr\": \"127.0.0.2\", \"trsvcid\": \"8010\"}}";

    @TempDir
    Path dir;

    @Test
    void shouldServeAnnounceAndPersistAReferralAddedLive() throws Exception {
        Path config = dir.resolve("target.json");
        Files.writeString(config, "{\"nvmeof4j\": {\"reactors\": 1, \"buffer_pool_mib\": 8, \"http\": \"off\"},"
            + " \"ports\": [{\"portid\": 1, \"addr\": {\"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": "
            + "\"127.0.0.1\", \"trsvcid\": \"0\"}, \"subsystems\": [\"" + DISCOVERY_NQN + "\"]}],"
            + " \"subsystems\": []}");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config))) {
            daemon.startRpc(dir.resolve("rpc.sock"));
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", daemon.listenAddresses().get(0).port());
            try (RpcConnection rpc = new RpcConnection(dir.resolve("rpc.sock"));
                 RawNvmeTcpHost disc = Sessions.enabledAdmin(address, DISCOVERY_NQN, RAW_HOST, Sessions.KATO_MS)) {
                assertThat(disc.setFeatures(FeatureIdentifier.ASYNC_EVENT_CONFIGURATION,
                    FeatureIdentifier.AEC_DISCOVERY_LOG_CHANGE).status()).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(referrals(DiscoveryIT.readDiscoveryLogLikeLibnvme(disc))).isEmpty();
                int aer = disc.submitAsyncEventRequest();

                assertThat(result(rpc, "nvmf_discovery_add_referral", REFERRAL).asBoolean()).isTrue();
                Completion event = disc.await(aer);
                assertThat(event.status()).as("AER %s", event).isEqualTo(NvmeStatus.SUCCESS);
                assertThat(event.dw0()).as("discovery log change notice").isEqualTo(AsyncEvent.DISCOVERY_LOG_CHANGED_DW0);

                List<byte[]> entries = referrals(DiscoveryIT.readDiscoveryLogLikeLibnvme(disc));
                assertThat(entries).hasSize(1);
                byte[] e = entries.get(0);
                assertThat(u8(e, 0)).as("TRTYPE (TCP)").isEqualTo(3);
                assertThat(u8(e, 1)).as("ADRFAM (IPv4)").isEqualTo(1);
                assertThat(u8(e, 3) & 3).as("TREQ secure channel not specified").isZero();
                assertThat(u16(e, 6)).as("CNTLID (dynamic)").isEqualTo(0xFFFF);
                assertThat(u16(e, 8)).as("ASQSZ").isEqualTo(32);
                assertThat(cString(e, 32, 32)).as("TRSVCID").isEqualTo("8010");
                assertThat(cString(e, 256, 256)).as("SUBNQN").isEqualTo(DISCOVERY_NQN);
                assertThat(cString(e, 512, 256)).as("TRADDR").isEqualTo("127.0.0.2");

                try (NvmeofHost host = NvmeofHost.create(io.nvmeof4j.initiator.HostIdentity.generate(), 1)) {
                    List<DiscoveryEntry> found = host.discover(TransportAddress.tcp("127.0.0.1", address.getPort()));
                    assertThat(found).filteredOn(d -> d.subsystemType() == DiscoveryEntry.SUBTYPE_REFERRAL)
                        .extracting(DiscoveryEntry::transportAddress, DiscoveryEntry::transportServiceId,
                            DiscoveryEntry::subsystemNqn)
                        .containsExactly(org.assertj.core.groups.Tuple.tuple("127.0.0.2", "8010", DISCOVERY_NQN));
                }
                JsonNode listed = result(rpc, "nvmf_discovery_get_referrals", null);
                assertThat(listed.size()).isEqualTo(1);
                assertThat(listed.at("/0/address/traddr").asText()).isEqualTo("127.0.0.2");
                assertThat(listed.at("/0/secure_channel").asBoolean()).isFalse();
                assertThat(listed.at("/0/subnqn").asText()).isEqualTo(DISCOVERY_NQN);
                // A duplicate is SPDK's "Internal error"; nothing changes.
                assertThat(rpc.call("nvmf_discovery_add_referral", REFERRAL).at("/error/code").asInt())
                    .isEqualTo(-32603);
                assertThat(referrals(DiscoveryIT.readDiscoveryLogLikeLibnvme(disc))).hasSize(1);
            }
        }
        // Persisted in nvmetcli's shape: the port's "referrals".
        JsonNode saved = new com.fasterxml.jackson.databind.ObjectMapper().readTree(config.toFile());
        assertThat(saved.at("/ports/0/referrals/0/addr/traddr").asText()).isEqualTo("127.0.0.2");
        assertThat(saved.at("/ports/0/referrals/0/addr/trsvcid").asText()).isEqualTo("8010");
        try (TargetDaemon daemon = TargetDaemon.start(TargetConfig.load(config))) {
            daemon.startRpc(dir.resolve("rpc.sock"));
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", daemon.listenAddresses().get(0).port());
            try (RpcConnection rpc = new RpcConnection(dir.resolve("rpc.sock"));
                 RawNvmeTcpHost disc = Sessions.enabledAdmin(address, DISCOVERY_NQN, RAW_HOST, Sessions.KATO_MS)) {
                assertThat(referrals(DiscoveryIT.readDiscoveryLogLikeLibnvme(disc))).hasSize(1);
                assertThat(disc.setFeatures(FeatureIdentifier.ASYNC_EVENT_CONFIGURATION,
                    FeatureIdentifier.AEC_DISCOVERY_LOG_CHANGE).status()).isEqualTo(NvmeStatus.SUCCESS);
                int aer = disc.submitAsyncEventRequest();
                assertThat(result(rpc, "nvmf_discovery_remove_referral", REFERRAL).asBoolean()).isTrue();
                assertThat(disc.await(aer).dw0()).isEqualTo(AsyncEvent.DISCOVERY_LOG_CHANGED_DW0);
                assertThat(referrals(DiscoveryIT.readDiscoveryLogLikeLibnvme(disc))).isEmpty();
                assertThat(rpc.call("nvmf_discovery_remove_referral", REFERRAL).at("/error/code").asInt())
                    .as("no such referral").isEqualTo(-32603);
            }
        }
        assertThat(TargetConfig.load(config).ports().get(0).referrals()).isEmpty();
    }

    /** The entries of SUBTYPE 1 (referral to another discovery service). */
    private static List<byte[]> referrals(byte[] log) {
        List<byte[]> list = new ArrayList<>();
        for (int i = 0; i < u64(log, 8); i++) {
            byte[] e = Bytes.slice(log, 1024 + 1024 * i, 1024);
            if (u8(e, 2) == 1) {
                list.add(e);
            }
        }
        return list;
    }

    private static JsonNode result(RpcConnection rpc, String method, String params) throws Exception {
        JsonNode r = rpc.call(method, params);
        assertThat(r).as(method).isNotNull();
        assertThat(r.has("result")).as("%s %s: %s", method, params, r).isTrue();
        return r.get("result");
    }
}
