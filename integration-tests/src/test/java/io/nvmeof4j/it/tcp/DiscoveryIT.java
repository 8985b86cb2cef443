package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.nvmeof4j.it.tcp.Bytes.cString;
import static io.nvmeof4j.it.tcp.Bytes.u16;
import static io.nvmeof4j.it.tcp.Bytes.u64;
import static io.nvmeof4j.it.tcp.Bytes.u8;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The discovery controller (wire reference 2.10) reached on the discovery port and on the I/O port, its log read
 * the way libnvme reads it (2.8), with the entries each host may see.
 */
class DiscoveryIT extends SharedTestTarget {

    static Stream<Arguments> portsAndHosts() {
        return Stream.of(
            Arguments.of("discovery port", false, "any host"),
            Arguments.of("discovery port", false, "allowed host of b"),
            Arguments.of("I/O port", true, "any host"),
            Arguments.of("I/O port", true, "allowed host of b"));
    }

    @ParameterizedTest(name = "{0}, {2}")
    @MethodSource("portsAndHosts")
    void shouldListTheSubsystemsThisHostMayConnectTo(String portName, boolean ioPort, String hostName) throws Exception {
        InetSocketAddress port = ioPort ? target.ioPort() : target.discoveryPort();
        boolean allowedOnB = hostName.startsWith("allowed");
        HostIdentity host = allowedOnB ? TestTarget.ALLOWED_HOST_B : HostIdentity.random();
        try (RawNvmeTcpHost disc = RawNvmeTcpHost.connect(port, false, false)) {
            Completion connect = disc.connectAdmin(TestTarget.DISCOVERY_NQN, host, 0);
            assertThat(connect.status()).as("Connect to the discovery NQN on the %s %s", portName, connect)
                .isEqualTo(NvmeStatus.SUCCESS);
            RawNvmeTcpHost.requireSuccess(disc.propertySet(RawNvmeTcpHost.PROP_CC, 4, RawNvmeTcpHost.CC_LINUX_DISABLED), "CC=0");
            disc.enableController(Sessions.READY_TIMEOUT);

            Completion id = disc.identify(1, 0);
            assertThat(id.status()).as("discovery Identify Controller %s", id).isEqualTo(NvmeStatus.SUCCESS);
            assertThat(u8(id.data(), 111)).as("CNTRLTYPE (discovery)").isEqualTo(2);
            assertThat(cString(id.data(), 768, 256)).as("SUBNQN").isEqualTo(TestTarget.DISCOVERY_NQN);
            assertThat(u8(id.data(), 261) & 0x4).as("LPA bit 2 (extended Get Log Page)").isEqualTo(0x4);
            assertThat(u16(id.data(), 78)).as("CNTLID equals the Connect result").isEqualTo(connect.dw0() & 0xFFFF);

            byte[] log = readDiscoveryLogLikeLibnvme(disc);
            Map<String, byte[]> nvmEntries = new LinkedHashMap<>();
            long numrec = u64(log, 8);
            for (int i = 0; i < numrec; i++) {
                byte[] e = Bytes.slice(log, 1024 + 1024 * i, 1024);
                int subtype = u8(e, 2);
                String subnqn = cString(e, 256, 256);
                if (subtype == 3) {
                    // Current discovery subsystem (newer nvmet lists it): it must name the discovery NQN.
                    assertThat(subnqn).as("entry %d of SUBTYPE 3", i).isEqualTo(TestTarget.DISCOVERY_NQN);
                    continue;
                }
                assertThat(subtype).as("entry %d SUBTYPE (2 = NVM subsystem)", i).isEqualTo(2);
                assertThat(nvmEntries.put(subnqn, e)).as("one entry for %s", subnqn).isNull();
            }
            List<String> expected = allowedOnB ? List.of(TestTarget.NQN_A, TestTarget.NQN_B) : List.of(TestTarget.NQN_A);
            assertThat(nvmEntries.keySet()).as("NVM subsystems listed for %s", hostName).containsExactlyInAnyOrderElementsOf(expected);
            for (Map.Entry<String, byte[]> entry : nvmEntries.entrySet()) {
                byte[] e = entry.getValue();
                String what = entry.getKey();
                assertThat(u8(e, 0)).as("%s TRTYPE (TCP)", what).isEqualTo(3);
                assertThat(u8(e, 1)).as("%s ADRFAM (IPv4)", what).isEqualTo(1);
                assertThat(u16(e, 4)).as("%s PORTID", what).isEqualTo(TestTarget.IO_PORT_ID);
                assertThat(u16(e, 6)).as("%s CNTLID (dynamic)", what).isEqualTo(0xFFFF);
                assertThat(u16(e, 8)).as("%s ASQSZ (the host connects with 32 entries)", what).isGreaterThanOrEqualTo(32);
                assertThat(cString(e, 32, 32)).as("%s TRSVCID", what).isEqualTo(Integer.toString(target.ioPort().getPort()));
                assertThat(cString(e, 512, 256)).as("%s TRADDR", what).isEqualTo("127.0.0.1");
                assertThat(u8(e, 768)).as("%s TSAS SECTYPE (none)", what).isZero();
            }
        }
    }

    /**
     * libnvme (nvmf_get_discovery_log): 20-byte header at LPO 0, then NUMREC x 1024 bytes from LPO 1024 in 4096-byte
     * chunks with RAE 1 except the last command, then the header again; GENCTR must not have changed.
     */
    static byte[] readDiscoveryLogLikeLibnvme(RawNvmeTcpHost disc) throws Exception {
        Completion header = disc.execute(RawNvmeTcpHost.logPageCommand(0x70, 0, 0, 20, true, 0));
        assertThat(header.status()).as("discovery log header (20 bytes at LPO 0) %s", header).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(header.data()).hasSize(20);
        long genctr = u64(header.data(), 0);
        long numrec = u64(header.data(), 8);
        assertThat(u16(header.data(), 16)).as("RECFMT").isZero();
        assertThat(numrec).as("NUMREC").isBetween(1L, 64L);

        byte[] log = new byte[(int) (1024 + numrec * 1024)];
        System.arraycopy(header.data(), 0, log, 0, 20);
        List<int[]> chunks = new ArrayList<>();
        for (int off = 0; off < numrec * 1024; off += 4096) {
            chunks.add(new int[] {1024 + off, (int) Math.min(4096, numrec * 1024 - off)});
        }
        for (int[] chunk : chunks) {
            Completion part = disc.execute(RawNvmeTcpHost.logPageCommand(0x70, 0, chunk[0], chunk[1], true, 0));
            assertThat(part.status()).as("discovery log LPO %d length %d %s", chunk[0], chunk[1], part)
                .isEqualTo(NvmeStatus.SUCCESS);
            System.arraycopy(part.data(), 0, log, chunk[0], chunk[1]);
        }
        Completion again = disc.execute(RawNvmeTcpHost.logPageCommand(0x70, 0, 0, 20, false, 0));
        assertThat(again.status()).as("discovery log header again %s", again).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(u64(again.data(), 0)).as("GENCTR unchanged while reading").isEqualTo(genctr);
        assertThat(u64(again.data(), 8)).as("NUMREC unchanged while reading").isEqualTo(numrec);
        return log;
    }
}
