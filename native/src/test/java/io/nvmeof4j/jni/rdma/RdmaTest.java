package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeHandle;
import io.nvmeof4j.jni.NativeIoException;
import org.junit.jupiter.api.Test;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    void shouldAllocateFlyweightBuffersOfAnySizeAligned() {
        for (int size : new int[] {1, 48, 96, 288, 4096, 4097}) {
            ByteBuffer b = Rdma.allocateAligned(size, 64);
            assertThat(b.capacity()).isGreaterThanOrEqualTo(size);
            assertThat(Rdma.address(b) % 64).isZero();
        }
        assertThat(new SendWorkRequests(2, 1).capacity()).isEqualTo(2);
        assertThat(new ReceiveWorkRequests(3, 1).capacity()).isEqualTo(3);
        assertThat(new WorkCompletions(2).capacity()).isEqualTo(2);
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

    @Test
    void shouldCloseEveryChildEvenWhenOneFailsAndReportTheFirstFailure() {
        List<String> closed = new ArrayList<>();
        Children children = new Children();
        children.add(fakeHandle(1, "a", closed, null));
        children.add(fakeHandle(2, "b", closed, "ibv_destroy_cq on fake failed: EBUSY"));
        children.add(fakeHandle(3, "c", closed, null));
        assertThatThrownBy(children::closeAll).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("EBUSY");
        assertThat(closed).as("newest first, all of them").containsExactly("c", "b", "a");
        assertThat(children.size()).isZero();
    }

    @Test
    void shouldSurfaceAFailedDestroyNamingTheCallAndErrno() {
        assertThatThrownBy(() -> Children.checkDestroy("ibv_dealloc_pd on rxe0", -Errno.EBUSY, null))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("ibv_dealloc_pd on rxe0 failed")
            .hasMessageContaining("EBUSY (errno 16)");
        Children.checkDestroy("ibv_dealloc_pd on rxe0", 0, null); // success: nothing thrown
        IllegalStateException child = new IllegalStateException("child");
        assertThatThrownBy(() -> Children.checkDestroy("ibv_destroy_cq on rxe0", -Errno.EBUSY, child))
            .isSameAs(child)
            .satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                .satisfies(s -> assertThat(s.getMessage()).contains("ibv_destroy_cq on rxe0 failed")));
        // the handle is marked closed before release runs: the failure surfaces once, the object is closed
        List<String> closed = new ArrayList<>();
        NativeHandle h = fakeHandle(7, "h", closed, "rdma_destroy_id failed: EINVAL");
        assertThatThrownBy(h::close).hasMessageContaining("EINVAL");
        assertThat(h.isClosed()).isTrue();
        h.close();
        assertThat(closed).containsExactly("h");
    }

    @Test
    void shouldSkipADeviceThatCannotBeOpenedAndKeepItsReason() {
        Map<String, NativeIoException> failed = new LinkedHashMap<>();
        List<RdmaDevice> devices = Rdma.probe(new String[] {"mlx5_0", "rxe0"}, (name, attrs) -> {
            if (name.equals("mlx5_0")) {
                return -Errno.EACCES;
            }
            attrs[RdmaDevice.ATTR_MAX_QP_WR] = 1024;
            return 0;
        }, failed);
        assertThat(devices).extracting(RdmaDevice::name).containsExactly("rxe0");
        assertThat(devices.get(0).maxQpWr()).isEqualTo(1024);
        assertThat(failed).containsOnlyKeys("mlx5_0");
        assertThat(failed.get("mlx5_0").errno()).isEqualTo(Errno.EACCES);

        // one usable device and a working RDMA CM: available
        assertThat(Rdma.cause(new String[] {"mlx5_0", "rxe0"}, (n, a) -> n.equals("rxe0") ? 0 : -Errno.EACCES,
            () -> null)).isNull();
        // no usable device: the cause names each one with its errno
        Throwable none = Rdma.cause(new String[] {"mlx5_0", "mlx5_1"}, (n, a) -> -Errno.EACCES, () -> null);
        assertThat(none).hasMessageStartingWith("no usable RDMA device:").hasMessageContaining("mlx5_0")
            .hasMessageContaining("mlx5_1").hasMessageContaining("EACCES");
        // devices fine, but no /dev/infiniband/rdma_cm
        Throwable cm = Rdma.cause(new String[] {"rxe0"}, (n, a) -> 0,
            () -> new NativeIoException("rdma_create_event_channel", Errno.ENOENT));
        assertThat(cm).hasMessageContaining("RDMA CM is unavailable").hasMessageContaining("ENOENT")
            .hasMessageContaining("rdma_ucm");
        assertThat(Rdma.cause(new String[0], (n, a) -> 0, () -> null)).hasMessageContaining("no RDMA devices");
    }

    @Test
    void shouldKeepOneObjectPerSharedContextPointerUntilItIsClosed() {
        AtomicInteger names = new AtomicInteger();
        long fake = 0x7f00_dead_0000L;
        VerbsContext first = VerbsContext.shared(fake, p -> "fake" + names.incrementAndGet());
        VerbsContext again = VerbsContext.shared(fake, p -> "fake" + names.incrementAndGet());
        assertThat(again).isSameAs(first);
        assertThat(first.isShared()).isTrue();
        assertThat(first.deviceName()).isEqualTo("fake1");
        assertThat(VerbsContext.shared(fake + 64, p -> "other")).isNotSameAs(first);
        first.close(); // librdmacm's: no native call, the object is closed and leaves the map
        assertThat(first.isClosed()).isTrue();
        VerbsContext fresh = VerbsContext.shared(fake, p -> "fake" + names.incrementAndGet());
        assertThat(fresh).isNotSameAs(first);
        assertThat(fresh.isClosed()).isFalse();
        assertThat(fresh.nativeContext()).isEqualTo(first.nativeContext());
        fresh.close();
        VerbsContext.shared(fake + 64, p -> "other").close();
    }

    @Test
    void shouldPassTheIpv6ScopeIdAndDescribeLongRegions() throws Exception {
        Inet6Address linkLocal = Inet6Address.getByAddress(null,
            InetAddress.getByName("fe80::1").getAddress(), 3);
        assertThat(CmId.scopeId(new InetSocketAddress(linkLocal, 4420))).isEqualTo(3);
        assertThat(CmId.scopeId(new InetSocketAddress(InetAddress.getByName("10.0.2.15"), 4420))).isZero();

        // A region past 2 GiB (registered by address): size() is exact, length() refuses to truncate.
        VerbsContext ctx = VerbsContext.shared(0x7f00_beef_0000L, p -> "fake");
        ProtectionDomain pd = new ProtectionDomain(0x1000, ctx); // never closed: no native object behind it
        long base = 0x7f12_0000_0000L;
        long size = 3L << 30;
        MemoryRegion mr = new MemoryRegion(0x2000, pd, null, "owner", base, size, MemoryRegion.LOCAL_WRITE, 1, 2);
        assertThat(mr.size()).isEqualTo(size);
        assertThatThrownBy(mr::length).isInstanceOf(ArithmeticException.class);
        assertThat(mr.contains(base + (2L << 30), 1L << 30)).isTrue();
        assertThat(mr.contains(base + (2L << 30), (1L << 30) + 1)).isFalse();
        assertThat(mr.contains(base - 1, 4)).isFalse();
        assertThat(mr.contains(base + size - 4, 4)).isTrue();
        assertThat(mr.owner()).isEqualTo("owner");
        assertThatThrownBy(() -> pd.registerMemory(0, 4096, MemoryRegion.LOCAL_WRITE, null))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> pd.registerMemory(base, -1, MemoryRegion.LOCAL_WRITE, null))
            .isInstanceOf(IllegalArgumentException.class);
        ctx.close(); // shared and childless: no native call
    }

    private static NativeHandle fakeHandle(long handle, String name, List<String> closed, String failure) {
        return new NativeHandle(handle, name) {
            @Override
            protected void release(long h) {
                closed.add(name);
                if (failure != null) {
                    throw new IllegalStateException(failure);
                }
            }
        };
    }
}
