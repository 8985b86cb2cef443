package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Host checks of the RDMA JNI layer: this build machine has rdma-core installed but no RDMA device (the
 * device checks run in the QEMU guest: {@code RdmaDeviceChecks}, driven by {@code RdmaJniIT}).
 */
class RdmaTest {

    @Test
    void shouldLoadTheLibraryFromTheJarResources() {
        assertThat(Rdma.class.getResource("/META-INF/native/libnvmeof4j-rdma-linux-x86_64.so"))
            .as("the .so packed as a resource").isNotNull();
        assertThat(Rdma.isLoaded()).as("load failure: %s", Rdma.unavailabilityCause()).isTrue();
    }

    @Test
    void shouldReportNoDevicesAsTheUnavailabilityCause() throws Exception {
        assertThat(Rdma.devices()).isEmpty();
        assertThat(Rdma.isAvailable()).isFalse();
        assertThat(Rdma.unavailabilityCause()).isNotNull();
        assertThat(Rdma.unavailabilityCause().getMessage()).contains("no RDMA devices");
    }

    @Test
    void shouldKeepTheErrnoWhenOpeningAMissingDevice() {
        assertThatThrownBy(() -> Rdma.openDevice("nvmeof4j-no-such-device"))
            .isInstanceOfSatisfying(NativeIoException.class, e -> {
                assertThat(e.errno()).isEqualTo(Errno.ENODEV);
                assertThat(e.operation()).contains("ibv_open_device nvmeof4j-no-such-device");
                assertThat(e.getMessage()).contains("ENODEV (errno 19)");
            });
    }

    @Test
    void shouldReportTheErrnoWhenTheKernelHasNoRdmaCm() {
        // No /dev/infiniband/rdma_cm on this host: the failure is an errno, never a crash or a hang.
        assertThatThrownBy(CmEventChannel::create)
            .isInstanceOfSatisfying(NativeIoException.class, e -> {
                assertThat(e.errno()).isPositive();
                assertThat(e.operation()).isEqualTo("rdma_create_event_channel");
            });
    }

    @Test
    void shouldReadSaneLayoutValuesFromC() {
        int[] v = RdmaLayout.all();
        // struct ibv_wc: 48 bytes on x86-64 Linux, wr_id first.
        assertThat(v[RdmaLayout.WC_SIZE]).isEqualTo(48);
        assertThat(v[RdmaLayout.WC_WR_ID]).isZero();
        assertThat(v[RdmaLayout.WC_STATUS]).isEqualTo(8);
        for (int f : new int[] {RdmaLayout.WC_STATUS, RdmaLayout.WC_OPCODE, RdmaLayout.WC_VENDOR_ERR,
            RdmaLayout.WC_BYTE_LEN, RdmaLayout.WC_IMM_DATA, RdmaLayout.WC_QP_NUM, RdmaLayout.WC_WC_FLAGS}) {
            assertThat(v[f]).isBetween(8, v[RdmaLayout.WC_SIZE] - 4);
        }
        assertThat(v[RdmaLayout.SEND_WR_WR_ID]).isZero();
        assertThat(v[RdmaLayout.SEND_WR_NEXT]).isEqualTo(8);
        assertThat(v[RdmaLayout.SEND_WR_SG_LIST]).isEqualTo(16);
        assertThat(v[RdmaLayout.SEND_WR_REMOTE_ADDR] % 8).isZero();
        assertThat(v[RdmaLayout.SEND_WR_RKEY]).isEqualTo(v[RdmaLayout.SEND_WR_REMOTE_ADDR] + 8);
        assertThat(v[RdmaLayout.SEND_WR_SIZE]).isGreaterThan(v[RdmaLayout.SEND_WR_RKEY]).matches(s -> s % 8 == 0);
        assertThat(v[RdmaLayout.RECV_WR_SIZE]).isEqualTo(32);
        assertThat(v[RdmaLayout.SGE_SIZE]).isEqualTo(16);
        assertThat(new int[] {v[RdmaLayout.SGE_ADDR], v[RdmaLayout.SGE_LENGTH], v[RdmaLayout.SGE_LKEY]})
            .containsExactly(0, 8, 12);
        assertThat(v[RdmaLayout.CM_EVENT_PRIVATE_DATA_MAX]).isEqualTo(256);
        assertThat(v[RdmaLayout.CM_EVENT_SIZE])
            .isGreaterThanOrEqualTo(v[RdmaLayout.CM_EVENT_PRIVATE_DATA] + 256);
    }

    @Test
    void shouldChainSendWorkRequestsThroughTheirNextPointers() {
        SendWorkRequests wrs = new SendWorkRequests(4, 2);
        wrs.rdmaWrite(0, 11, 0, 0x1000, 0x55).sge(0, 0, 0x2000, 512, 7).sge(0, 1, 0x3000, 512, 7);
        wrs.send(1, 12, SendWorkRequests.FLAG_SIGNALED).sge(1, 0, 0x4000, 64, 7);
        wrs.sendWithInvalidate(2, 13, 0, 0x99);
        assertThat(wrs.opcode(0)).isEqualTo(SendWorkRequests.OPCODE_RDMA_WRITE);
        assertThat(wrs.numSge(0)).isEqualTo(2);
        assertThat(wrs.numSge(1)).isEqualTo(1);
        assertThat(wrs.numSge(2)).isZero();
        assertThat(wrs.wrId(1)).isEqualTo(12);
        assertThat(wrs.flags(1)).isEqualTo(SendWorkRequests.FLAG_SIGNALED);
        assertThat(wrs.opcode(2)).isEqualTo(SendWorkRequests.OPCODE_SEND_WITH_INV);
        assertThatThrownBy(() -> wrs.sge(0, 2, 0, 0, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> wrs.send(4, 0, 0)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shouldAllocateWorkCompletionArraysOfTheCStride() {
        WorkCompletions wcs = new WorkCompletions(32);
        assertThat(wcs.capacity()).isEqualTo(32);
        assertThat(wcs.count()).isZero();
        assertThat(wcs.address() % 64).isZero();
        assertThat(WorkCompletions.statusName(WorkCompletions.STATUS_REM_ACCESS_ERR)).isEqualTo("remote access error");
    }

    @Test
    void shouldRefuseHeapBuffersForNativeAddresses() {
        assertThatThrownBy(() -> Rdma.address(ByteBuffer.allocate(16))).isInstanceOf(IllegalArgumentException.class);
        assertThat(Rdma.address(ByteBuffer.allocateDirect(16))).isNotZero();
    }

    @Test
    void shouldMapCmEventTypesToTheirNativeValues() {
        assertThat(CmEventType.of(4)).isEqualTo(CmEventType.CONNECT_REQUEST);
        assertThat(CmEventType.of(8)).isEqualTo(CmEventType.REJECTED);
        assertThat(CmEventType.of(15)).isEqualTo(CmEventType.TIMEWAIT_EXIT);
        assertThat(CmEventType.of(16)).isNull();
        assertThat(CmEventType.REJECTED.isError()).isTrue();
        assertThat(CmEventType.ESTABLISHED.isError()).isFalse();
    }

    @Test
    void shouldThrowOnUseAfterCloseAndCloseOnceOnly() {
        // The close protocol every handle of this package inherits (the guest checks repeat it on real objects).
        AtomicInteger releases = new AtomicInteger();
        NativeHandle h = new NativeHandle(42, "test handle") {
            @Override
            protected void release(long handle) {
                assertThat(handle).isEqualTo(42);
                releases.incrementAndGet();
            }

            long use() {
                return handle();
            }
        };
        h.close();
        h.close();
        assertThat(releases).hasValue(1);
        assertThat(h.isClosed()).isTrue();
        assertThatThrownBy(() -> ((Object) h).getClass().getDeclaredMethod("use").invoke(h))
            .hasRootCauseInstanceOf(IllegalStateException.class)
            .rootCause().hasMessageContaining("test handle is closed");
    }

    @Test
    void shouldDescribeRejectsWithStatusAndPeer() {
        RdmaCmException e = new RdmaCmException("10.0.2.15:4420", "connect", CmEventType.REJECTED, 28,
            Errno.ECONNREFUSED, new byte[] {1, 2}, "reject reason 28 (consumer reject)");
        assertThat(e.getMessage()).contains("10.0.2.15:4420").contains("connect").contains("REJECTED status 28")
            .contains("ECONNREFUSED");
        assertThat(e.isRejected()).isTrue();
        assertThat(e.privateData()).containsExactly(1, 2);
    }
}
