package io.nvmeof4j.it.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static io.nvmeof4j.it.tcp.Bytes.u32;
import static io.nvmeof4j.it.tcp.Bytes.u8;
import static org.assertj.core.api.Assertions.assertThat;

/** Every admin command an I/O controller serves (wire reference 2.8, 2.9), with its exact results. */
class AdminCommandsIT extends SharedTestTarget {

    RawNvmeTcpHost admin;
    byte[] identifyController;

    @BeforeEach
    void connect() throws Exception {
        admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HostIdentity.random(), Sessions.KATO_MS);
        Completion id = admin.identify(1, 0);
        RawNvmeTcpHost.requireSuccess(id, "Identify Controller");
        identifyController = id.data();
    }

    @AfterEach
    void disconnect() {
        if (admin != null) {
            admin.close();
        }
    }

    /** Log page sizes: 01h (ELPE+1) x 64 B, 02h 512, 03h 512, 04h 4096, 05h 4096 (wire reference 2.8). */
    int logPageLength(int lid) {
        return switch (lid) {
            case 0x01 -> (u8(identifyController, 262) + 1) * 64;
            case 0x02, 0x03 -> 512;
            case 0x04, 0x05 -> 4096;
            default -> throw new IllegalArgumentException("LID " + lid);
        };
    }

    @ParameterizedTest(name = "LID 0x0{0}")
    @ValueSource(ints = {0x01, 0x02, 0x03, 0x04, 0x05})
    void shouldReturnTheSameBytesForAnySliceOfALogPage(int lid) throws Exception {
        int length = logPageLength(lid);
        Completion full = admin.getLogPage(lid, 0, length);
        assertThat(full.status()).as("Get Log Page 0x%02x, %d bytes: %s", lid, length, full).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(full.data()).hasSize(length);

        // Odd dword offsets and odd dword counts, first and last dword, a middle run.
        int[][] slices = {{4, 4}, {12, 20}, {36, 28}, {length / 2 + 4, length / 2 - 8}, {length - 4, 4}, {0, 12},
            {length - 12, 12}};
        for (int[] s : slices) {
            Completion part = admin.getLogPage(lid, s[0], s[1]);
            assertThat(part.status()).as("LID 0x%02x LPO %d length %d: %s", lid, s[0], s[1], part)
                .isEqualTo(NvmeStatus.SUCCESS);
            assertThat(part.data()).as("LID 0x%02x LPO %d length %d equals the same bytes of the full page", lid, s[0], s[1])
                .isEqualTo(Bytes.slice(full.data(), s[0], s[1]));
        }
    }

    @Test
    void shouldReportSupportedCommandsAndEffects() throws Exception {
        Completion log = admin.getLogPage(0x05, 0, 4096);
        assertThat(log.status()).as("Get Log Page 05h %s", log).isEqualTo(NvmeStatus.SUCCESS);
        byte[] d = log.data();
        // ACS[opcode] at 4 x opcode, IOCS[opcode] at 1024 + 4 x opcode; bit 0 CSUPP, bit 1 LBCC
        for (int opc : new int[] {0x02, 0x06, 0x08, 0x09, 0x0A, 0x0C, 0x18}) {
            assertThat(u32(d, 4 * opc) & 1).as("ACS[0x%02x].CSUPP", opc).isEqualTo(1);
        }
        for (int opc : new int[] {0x00, 0x01, 0x02, 0x05, 0x08, 0x09, 0x0C, 0x19}) {
            assertThat(u32(d, 1024 + 4 * opc) & 1).as("IOCS[0x%02x].CSUPP", opc).isEqualTo(1);
        }
        for (int opc : new int[] {0x01, 0x08, 0x19}) {
            assertThat(u32(d, 1024 + 4 * opc) & 2).as("IOCS[0x%02x].LBCC (changes logical blocks)", opc).isEqualTo(2);
        }
        assertThat(u32(d, 4 * 0x3C) & 1).as("ACS[0x3c] of an unassigned opcode").isZero();
    }

    @Test
    void shouldReportNoChangedNamespacesAndNoCriticalWarning() throws Exception {
        Completion changed = admin.getLogPage(0x04, 0, 4096);
        assertThat(changed.status()).as("Get Log Page 04h %s", changed).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(Bytes.allZero(changed.data())).as("changed namespace list with no change").isTrue();

        Completion smart = admin.getLogPage(0x02, 0, 512);
        assertThat(smart.status()).as("Get Log Page 02h %s", smart).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(u8(smart.data(), 0)).as("SMART critical warning").isZero();
    }

    @Test
    void shouldRejectAnUnknownLogPageAsNvmetDoes() throws Exception {
        // nvmet (admin-cmd.c, nvmet_execute_get_log_page): unhandled LID -> Invalid Field in Command, DNR.
        Completion c = admin.getLogPage(0x6F, 0, 512);
        assertThat(c.status()).as("Get Log Page LID 0x6f %s", c).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
    }

    @Test
    void shouldSetAndGetNumberOfQueues() throws Exception {
        Completion set = admin.setFeatures(0x07, 3 | 3 << 16);
        assertThat(set.status()).as("Set Features 07h %s", set).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(set.dw0() & 0xFFFF).as("NSQA").isGreaterThanOrEqualTo(3);
        assertThat(set.dw0() >>> 16).as("NCQA").isGreaterThanOrEqualTo(3);
        Completion get = admin.getFeatures(0x07);
        assertThat(get.status()).as("Get Features 07h %s", get).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(get.dw0()).as("Get Features 07h equals what Set granted").isEqualTo(set.dw0());

        Completion bad = admin.setFeatures(0x07, 0xFFFF | 0xFFFF << 16);
        assertThat(bad.status()).as("Set Features 07h with 0xFFFF %s", bad).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
    }

    @Test
    void shouldSetAndGetAsyncEventConfiguration() throws Exception {
        int oaes = (int) u32(identifyController, 92);
        int value = oaes & (1 << 8 | 1 << 9 | 1 << 11 | 1 << 31);
        Completion set = admin.setFeatures(0x0B, value);
        assertThat(set.status()).as("Set Features 0Bh 0x%x (OAES 0x%x) %s", value, oaes, set).isEqualTo(NvmeStatus.SUCCESS);
        Completion get = admin.getFeatures(0x0B);
        assertThat(get.status()).as("Get Features 0Bh %s", get).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(get.dw0()).as("Get Features 0Bh returns what was set").isEqualTo(value);
    }

    @Test
    void shouldSetAndGetKeepAliveTimeout() throws Exception {
        Completion set = admin.setFeatures(0x0F, 10_000);
        assertThat(set.status()).as("Set Features 0Fh 10000 ms %s", set).isEqualTo(NvmeStatus.SUCCESS);
        Completion get = admin.getFeatures(0x0F);
        assertThat(get.status()).as("Get Features 0Fh %s", get).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(get.dw0()).as("KATO in ms").isEqualTo(10_000);
    }

    @Test
    void shouldRejectAnUnsupportedFeature() throws Exception {
        Completion set = admin.setFeatures(0x7D, 1);
        assertThat(set.status()).as("Set Features FID 0x7d %s", set).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        Completion get = admin.getFeatures(0x7D);
        assertThat(get.status()).as("Get Features FID 0x7d %s", get).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
    }

    @Test
    void shouldAnswerKeepAliveOnlyWhenKatoIsSet() throws Exception {
        assertThat(admin.keepAlive().status()).as("Keep Alive with KATO 30 s").isEqualTo(NvmeStatus.SUCCESS);
        try (RawNvmeTcpHost noKato = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_A, HostIdentity.random(), 0)) {
            Completion c = noKato.keepAlive();
            assertThat(NvmeStatus.code(c.status())).as("Keep Alive with KATO 0 %s", c).isEqualTo(NvmeStatus.KEEP_ALIVE_INVALID);
        }
    }

    @Test
    void shouldParkAerlPlusOneAsyncEventRequestsAndRejectOneMore() throws Exception {
        int aerl = u8(identifyController, 259);
        List<Integer> parked = new ArrayList<>();
        for (int i = 0; i <= aerl; i++) {
            parked.add(admin.submitAsyncEventRequest());
        }
        assertThat(admin.drainFor(Duration.ofMillis(500))).as("AERL+1 = %d AERs get no completion", aerl + 1).isEmpty();

        int extra = admin.submitAsyncEventRequest();
        Completion limit = admin.await(extra);
        assertThat(NvmeStatus.code(limit.status())).as("AER number AERL+2 %s", limit)
            .isEqualTo(NvmeStatus.ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED);

        // The parked ones stay parked while other admin commands complete.
        assertThat(admin.identify(1, 0).status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(admin.keepAlive().status()).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(admin.drainFor(Duration.ofMillis(300))).as("parked AERs after other commands").isEmpty();
        for (int cid : parked) {
            assertThat(admin.isOutstanding(cid)).as("AER CID %d still parked", cid).isTrue();
        }
    }

    @Test
    void shouldAnswerAbortOfACommandThatIsNotOutstanding() throws Exception {
        Completion abort = admin.abort(0, 0x1234);
        assertThat(abort.status()).as("Abort of CID 0x1234 %s", abort).isEqualTo(NvmeStatus.SUCCESS);
        assertThat(abort.dw0() & 1).as("Abort DW0 bit 0: command not aborted").isEqualTo(1);
    }

    @Test
    void shouldAbortAParkedAerOrLeaveItParkedConsistently() throws Exception {
        int aer = admin.submitAsyncEventRequest();
        Completion abort = admin.abort(0, aer);
        assertThat(abort.status()).as("Abort of the parked AER %s", abort).isEqualTo(NvmeStatus.SUCCESS);
        List<Completion> arrived = admin.drainFor(Duration.ofMillis(500));
        if ((abort.dw0() & 1) == 0) {
            assertThat(arrived).as("Abort said the AER was aborted, so it completes").hasSize(1);
            assertThat(arrived.get(0).cid()).isEqualTo(aer);
            assertThat(NvmeStatus.code(arrived.get(0).status())).as("aborted AER status")
                .isEqualTo(NvmeStatus.ABORTED_BY_REQUEST);
        } else {
            assertThat(arrived).as("Abort said the AER was not aborted, so it stays parked").isEmpty();
            assertThat(admin.isOutstanding(aer)).isTrue();
        }
    }

    @Test
    void shouldRejectAnUnknownAdminOpcode() throws Exception {
        Completion c = admin.execute(RawNvmeTcpHost.Command.of(0x3C));
        assertThat(c.status()).as("admin opcode 0x3c %s", c).isEqualTo(NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR);
        assertThat(admin.keepAlive().status()).as("the admin queue still works").isEqualTo(NvmeStatus.SUCCESS);
    }
}
