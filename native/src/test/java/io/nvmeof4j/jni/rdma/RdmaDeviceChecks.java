package io.nvmeof4j.jni.rdma;

import io.nvmeof4j.jni.Errno;
import io.nvmeof4j.jni.NativeIoException;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The RDMA JNI layer against a real RDMA device: Soft-RoCE {@code rxe0} in the QEMU guest, driven by the real
 * rdma-core and the guest kernel's rdma_rxe. Not a {@code *Test}: the build host has no RDMA device, so surefire
 * does not run it there; {@code RdmaJniIT} (integration-tests) boots the guest, brings up rxe0 and runs this class
 * inside it with the JUnit console launcher ({@code integration-tests/vm/guest/rdma-jni.sh}).
 */
class RdmaDeviceChecks {
    private static final QueuePairCapabilities CAPS = new QueuePairCapabilities(32, 32, 4, 2, 64);
    private static final Duration TIMEOUT = RdmaLoopback.TIMEOUT;

    @Test
    void shouldListTheDeviceWithItsAttributes() throws Exception {
        assertThat(Rdma.isAvailable()).as("cause: %s", Rdma.unavailabilityCause()).isTrue();
        List<RdmaDevice> devices = Rdma.devices();
        RdmaDevice rxe = devices.stream().filter(d -> d.name().equals("rxe0")).findFirst().orElseThrow(
            () -> new AssertionError("rxe0 not in " + devices));
        assertThat(rxe.nodeGuid()).isNotZero();
        assertThat(rxe.maxQpWr()).isGreaterThanOrEqualTo(1024);
        assertThat(rxe.maxSge()).isGreaterThanOrEqualTo(2);
        assertThat(rxe.maxCqe()).isGreaterThanOrEqualTo(1024);
        // an unsigned 64-bit value: rxe reports 2^64 - 1 (no limit), which reads as -1
        assertThat(Long.compareUnsigned(rxe.maxMrSize(), 1L << 30)).as("max_mr_size %s",
            Long.toUnsignedString(rxe.maxMrSize())).isPositive();
        assertThat(rxe.maxQpRdAtom()).isPositive();
        assertThat(rxe.maxQpInitRdAtom()).isPositive();
        assertThat(rxe.ports()).hasSize(1);
        RdmaDevice.Port port = rxe.ports().get(0);
        assertThat(port.number()).isEqualTo(1);
        assertThat(port.isActive()).as("port state %s", port.stateName()).isTrue();
        assertThat(port.linkLayer()).isEqualTo(RdmaDevice.LINK_LAYER_ETHERNET);
        assertThat(port.activeMtuBytes()).isBetween(256, 4096);
        assertThat(port.maxMtuBytes()).isGreaterThanOrEqualTo(port.activeMtuBytes());
        System.out.printf("INFO rxe0 guid %s max_qp_wr %d max_sge %d max_cqe %d max_mr_size %d rd_atom %d/%d "
                + "port %s mtu %d%n", rxe.nodeGuidString(), rxe.maxQpWr(), rxe.maxSge(), rxe.maxCqe(),
            rxe.maxMrSize(), rxe.maxQpRdAtom(), rxe.maxQpInitRdAtom(), port.stateName(), port.activeMtuBytes());

        try (VerbsContext ctx = Rdma.openDevice("rxe0")) {
            RdmaDevice again = ctx.query();
            assertThat(again.nodeGuid()).isEqualTo(rxe.nodeGuid());
            assertThat(again.maxQpWr()).isEqualTo(rxe.maxQpWr());
            assertThat(ctx.isShared()).isFalse();
        }
    }

    @Test
    void shouldRegisterMemoryAndExposeKeysAndAddress() throws Exception {
        try (VerbsContext ctx = Rdma.openDevice("rxe0"); ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
            MemoryRegion whole = pd.registerMemory(buffer, RdmaLoopback.ACCESS);
            MemoryRegion part = pd.registerMemory(buffer, 4096, 8192, MemoryRegion.LOCAL_WRITE);
            assertThat(whole.address()).isEqualTo(Rdma.address(buffer));
            assertThat(part.address()).isEqualTo(Rdma.address(buffer) + 4096);
            assertThat(whole.length()).isEqualTo(1 << 20);
            assertThat(part.length()).isEqualTo(8192);
            assertThat(whole.lkey()).isNotEqualTo(part.lkey());
            assertThat(whole.rkey()).isNotEqualTo(part.rkey());
            assertThat(whole.contains(whole.address() + 100, 10)).isTrue();
            assertThat(part.contains(part.address() + 8190, 10)).isFalse();
            assertThat(whole.protectionDomain()).isSameAs(pd);
            assertThatThrownBy(() -> pd.registerMemory(ByteBuffer.allocate(64), MemoryRegion.LOCAL_WRITE))
                .isInstanceOf(IllegalArgumentException.class);
            // REMOTE_WRITE without LOCAL_WRITE is refused by verbs: the errno comes back as a number.
            assertThatThrownBy(() -> pd.registerMemory(buffer, MemoryRegion.REMOTE_WRITE))
                .isInstanceOfSatisfying(NativeIoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EINVAL));
            part.close();
            part.close();
            assertThat(part.isClosed()).isTrue();
            // whole stays open: closing the PD closes it first (ibv_dealloc_pd would fail with EBUSY otherwise)
        }
    }

    @Test
    void shouldSendAndReceiveWithBytesVerified() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            byte[] payload = random(4096);
            ReceiveWorkRequests recv = new ReceiveWorkRequests(4, 1);
            recv.set(0, 1001).sge(0, 0, lo.target.mr.address() + 8192, 4096, lo.target.mr.lkey());
            lo.target.qp.postReceiveOrThrow(recv, 1);

            lo.host.buffer.put(0, payload);
            SendWorkRequests send = new SendWorkRequests(4, 2);
            send.send(0, 2001, SendWorkRequests.FLAG_SIGNALED)
                .sge(0, 0, lo.host.mr.address(), 1000, lo.host.mr.lkey())
                .sge(0, 1, lo.host.mr.address() + 1000, 3096, lo.host.mr.lkey());
            lo.host.qp.postSendOrThrow(send, 1);
            assertThat(send.failedIndex()).isEqualTo(-1);

            expectOne(lo.host, lo.host.sendCq, 2001, WorkCompletions.OPCODE_SEND, -1);
            WorkCompletions wcs = expectOne(lo.target, lo.target.recvCq, 1001, WorkCompletions.OPCODE_RECV, 4096);
            assertThat(wcs.qpNum(0)).isEqualTo(lo.target.qp.qpNum());
            byte[] got = new byte[4096];
            lo.target.buffer.get(8192, got);
            assertThat(got).isEqualTo(payload);
        }
    }

    @Test
    void shouldCarryPrivateDataAndReadDepthsThroughConnect() throws Exception {
        byte[] request = {0, 0, 1, 0, 31, 0, 32, 0}; // shaped like an NVMe-oF RDMA CM request record
        byte[] accept = {0, 0, 32, 0};
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS,
            ConnectionParameters.defaults().withPrivateData(request).withReadDepths(4, 8),
            ConnectionParameters.defaults().withPrivateData(accept).withReadDepths(8, 4))) {
            assertThat(lo.request.type()).isEqualTo(CmEventType.CONNECT_REQUEST);
            assertThat(lo.request.listenId()).isSameAs(lo.listener);
            assertThat(lo.request.id().listener()).isSameAs(lo.listener);
            assertThat(lo.request.id().context()).isEqualTo(1);
            assertThat(lo.request.privateData()).startsWith(request);
            // the request's IRD/ORD as the receiving side sees them (the CM swaps them): the host offered to answer
            // 4 READs (responder_resources 4) and to issue 8 (initiator_depth 8), so the target may issue up to 4
            // (its initiator_depth) and must answer up to 8 (its responder_resources)
            assertThat(lo.request.parameters().responderResources()).isEqualTo(8);
            assertThat(lo.request.parameters().initiatorDepth()).isEqualTo(4);
            assertThat(lo.established.type()).isEqualTo(CmEventType.ESTABLISHED);
            assertThat(lo.established.privateData()).startsWith(accept);
            assertThat(lo.host.id.peerAddress()).isEqualTo(lo.address);
            assertThat(lo.target.id.localAddress()).isEqualTo(lo.address);
            assertThat(lo.target.id.peerAddress().getAddress()).isEqualTo(lo.address.getAddress());
            assertThat(lo.host.qp.state()).isEqualTo(3); // RTS
            assertThat(lo.host.qp.capabilities().maxSendWr()).isGreaterThanOrEqualTo(CAPS.maxSendWr());
            assertThat(lo.host.qp.capabilities().maxInlineData()).isGreaterThanOrEqualTo(CAPS.maxInlineData());
        }
    }

    @Test
    void shouldRdmaReadThePeersMemory() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            byte[] data = random(16384);
            lo.host.buffer.put(4096, data); // what an NVMe host offers for a write command (keyed SGL)
            SendWorkRequests wrs = new SendWorkRequests(2, 1);
            wrs.rdmaRead(0, 3001, SendWorkRequests.FLAG_SIGNALED, lo.host.mr.address() + 4096, lo.host.mr.rkey())
                .sge(0, 0, lo.target.mr.address() + 32768, 16384, lo.target.mr.lkey());
            lo.target.qp.postSendOrThrow(wrs, 1);
            expectOne(lo.target, lo.target.sendCq, 3001, WorkCompletions.OPCODE_RDMA_READ, -1);
            byte[] got = new byte[16384];
            lo.target.buffer.get(32768, got);
            assertThat(got).isEqualTo(data);
        }
    }

    @Test
    void shouldRdmaWriteThenSendInOneChainedPost() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            byte[] data = random(8192);
            byte[] response = random(16);
            ReceiveWorkRequests recv = new ReceiveWorkRequests(1, 1);
            recv.set(0, 4001).sge(0, 0, lo.host.mr.address(), 64, lo.host.mr.lkey());
            lo.host.qp.postReceiveOrThrow(recv, 1);

            lo.target.buffer.put(0, data);
            lo.target.buffer.put(16384, response);
            SendWorkRequests wrs = new SendWorkRequests(4, 1);
            // an NVMe read's answer: the data by RDMA WRITE (unsignalled), then the response capsule by SEND
            wrs.rdmaWrite(0, 4101, 0, lo.host.mr.address() + 8192, lo.host.mr.rkey())
                .sge(0, 0, lo.target.mr.address(), 8192, lo.target.mr.lkey());
            wrs.send(1, 4102, SendWorkRequests.FLAG_SIGNALED | SendWorkRequests.FLAG_INLINE)
                .sge(1, 0, lo.target.mr.address() + 16384, 16, lo.target.mr.lkey());
            assertThat(lo.target.qp.postSend(wrs, 2)).isZero();

            expectOne(lo.target, lo.target.sendCq, 4102, WorkCompletions.OPCODE_SEND, -1);
            expectOne(lo.host, lo.host.recvCq, 4001, WorkCompletions.OPCODE_RECV, 16);
            byte[] gotData = new byte[8192];
            lo.host.buffer.get(8192, gotData);
            assertThat(gotData).as("RDMA WRITE data, visible once the SEND behind it arrived").isEqualTo(data);
            byte[] gotResponse = new byte[16];
            lo.host.buffer.get(0, gotResponse);
            assertThat(gotResponse).isEqualTo(response);
        }
    }

    @Test
    void shouldPostABatchAsOneChainAndReportTheFailingIndex() throws Exception {
        QueuePairCapabilities small = new QueuePairCapabilities(16, 16, 1, 1, 0);
        try (RdmaLoopback lo = RdmaLoopback.connect(small, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            int depth = lo.host.qp.capabilities().maxSendWr();
            // Providers may size the ring above max_send_wr (rxe rounds it up to a power of two): post far more than
            // fits, and the device must refuse at some entry past the granted depth, reporting which one.
            int count = depth * 8;
            SendWorkRequests wrs = new SendWorkRequests(count, 1);
            for (int i = 0; i < count; i++) {
                wrs.rdmaWrite(i, 5000 + i, SendWorkRequests.FLAG_SIGNALED, lo.target.mr.address() + (i % 64) * 64L,
                        lo.target.mr.rkey())
                    .sge(i, 0, lo.host.mr.address() + (i % 64) * 64L, 64, lo.host.mr.lkey());
            }
            int rc = lo.host.qp.postSend(wrs, count);
            assertThat(rc).as("posting %d into a send queue of %d", count, depth).isNegative();
            assertThat(-rc).isEqualTo(Errno.ENOMEM);
            int posted = wrs.failedIndex();
            assertThat(posted).isGreaterThanOrEqualTo(depth).isLessThan(count);
            System.out.printf("INFO send queue of %d (granted) took %d of a chain of %d%n", depth, posted, count);
            WorkCompletions wcs = new WorkCompletions(64);
            int[] st = new int[posted];
            long[] ids = new long[posted];
            int got = lo.host.pollUntil(lo.host.sendCq, wcs, posted, st, ids, new int[posted], new int[posted]);
            assertThat(got).as("completions of the entries before the failing one").isEqualTo(posted);
            for (int i = 0; i < posted; i++) {
                assertThat(st[i]).as("status of %d", i).isZero();
                assertThat(ids[i]).isEqualTo(5000 + i);
            }
            // the queue is free again: the rest of the batch goes in one post
            SendWorkRequests rest = new SendWorkRequests(4, 1);
            for (int i = 0; i < 4; i++) {
                rest.rdmaWrite(i, 6000 + i, i == 3 ? SendWorkRequests.FLAG_SIGNALED : 0,
                    lo.target.mr.address(), lo.target.mr.rkey()).sge(i, 0, lo.host.mr.address(), 64, lo.host.mr.lkey());
            }
            assertThat(lo.host.qp.postSend(rest, 4)).isZero();
            expectOne(lo.host, lo.host.sendCq, 6003, WorkCompletions.OPCODE_RDMA_WRITE, -1);
        }
    }

    /**
     * A reactor round's post (QueuePair.post): the receives it reposted, then its responses, in one crossing. The
     * receives are up before the response leaves, so the capsules the peer sends on seeing it land in them; when the
     * receive chain is refused, no send of the same post goes out.
     */
    @Test
    void shouldPostReceivesThenSendsInOneCrossing() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            int lkey = lo.target.mr.lkey();
            long base = lo.target.mr.address();
            ReceiveWorkRequests hostRecv = new ReceiveWorkRequests(4, 1);
            hostRecv.set(0, 7001).sge(0, 0, lo.host.mr.address(), 64, lo.host.mr.lkey());
            lo.host.qp.postReceiveOrThrow(hostRecv, 1);

            byte[] response = random(16);
            lo.target.buffer.put(0, response);
            ReceiveWorkRequests recv = new ReceiveWorkRequests(4, 1);
            recv.set(0, 7101).sge(0, 0, base + 4096, 64, lkey);
            recv.set(1, 7102).sge(1, 0, base + 8192, 64, lkey);
            SendWorkRequests send = new SendWorkRequests(4, 1);
            send.send(0, 7201, SendWorkRequests.FLAG_SIGNALED).sge(0, 0, base, 16, lkey);
            assertThat(lo.target.qp.post(recv, 2, send, 1)).isZero();
            assertThat(recv.failedIndex()).isEqualTo(-1);
            assertThat(send.failedIndex()).isEqualTo(-1);
            expectOne(lo.target, lo.target.sendCq, 7201, WorkCompletions.OPCODE_SEND, -1);
            expectOne(lo.host, lo.host.recvCq, 7001, WorkCompletions.OPCODE_RECV, 16);
            byte[] got = new byte[16];
            lo.host.buffer.get(0, got);
            assertThat(got).isEqualTo(response);

            // the peer's next two capsules land in the two receives that post put up, in order
            SendWorkRequests capsule = new SendWorkRequests(4, 1);
            for (int i = 0; i < 2; i++) {
                byte[] bytes = random(64);
                lo.host.buffer.put(1024, bytes);
                capsule.send(0, 7301 + i, SendWorkRequests.FLAG_SIGNALED)
                    .sge(0, 0, lo.host.mr.address() + 1024, 64, lo.host.mr.lkey());
                lo.host.qp.postSendOrThrow(capsule, 1);
                expectOne(lo.host, lo.host.sendCq, 7301 + i, WorkCompletions.OPCODE_SEND, -1);
                expectOne(lo.target, lo.target.recvCq, 7101 + i, WorkCompletions.OPCODE_RECV, 64);
                byte[] landed = new byte[64];
                lo.target.buffer.get(4096 * (i + 1), landed);
                assertThat(landed).as("capsule %d", i).isEqualTo(bytes);
            }

            // a receive chain longer than the receive queue: refused at an entry past the granted depth, the send
            // behind it never posted (no completion, and its failedIndex says none went)
            int depth = lo.target.qp.capabilities().maxRecvWr();
            int count = depth * 8;
            ReceiveWorkRequests many = new ReceiveWorkRequests(count, 1);
            for (int i = 0; i < count; i++) {
                many.set(i, 8000 + i).sge(i, 0, base + 16384 + (i % 64) * 64L, 64, lkey);
            }
            send.send(0, 7202, SendWorkRequests.FLAG_SIGNALED).sge(0, 0, base, 16, lkey);
            int rc = lo.target.qp.post(many, count, send, 1);
            assertThat(rc).as("posting %d receives into a receive queue of %d", count, depth).isNegative();
            assertThat(-rc).isEqualTo(Errno.ENOMEM);
            assertThat(many.failedIndex()).isGreaterThanOrEqualTo(depth).isLessThan(count);
            assertThat(send.failedIndex()).isZero();
            sleep(200);
            WorkCompletions wcs = new WorkCompletions(8);
            assertThat(lo.target.sendCq.poll(wcs)).as("a send of a post whose receives failed").isZero();
            System.out.printf("INFO receive queue of %d (granted) took %d more of a chain of %d%n", depth,
                many.failedIndex(), count);
        }
    }

    @Test
    void shouldWaitOnTheCompletionChannelWithTimeoutAndWakeup() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            CompletionChannel ch = lo.target.channel;
            CompletionChannelSet set = setOf(ch);
            lo.target.recvCq.requestNotify(false);
            long t0 = System.nanoTime();
            assertThat(set.await(200_000_000L)).isZero();
            assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(150_000_000L);

            AtomicLong wokenAt = new AtomicLong();
            Thread waker = new Thread(() -> {
                sleep(100);
                wokenAt.set(System.nanoTime());
                set.wakeup();
            });
            t0 = System.nanoTime();
            waker.start();
            assertThat(set.await(5_000_000_000L)).as("woken, no event").isZero();
            long waited = System.nanoTime() - t0;
            waker.join(5000);
            assertThat(waited).isLessThan(3_000_000_000L).isGreaterThanOrEqualTo(50_000_000L);

            ReceiveWorkRequests recv = new ReceiveWorkRequests(1, 1);
            recv.set(0, 7001).sge(0, 0, lo.target.mr.address(), 64, lo.target.mr.lkey());
            lo.target.qp.postReceiveOrThrow(recv, 1);
            SendWorkRequests send = new SendWorkRequests(1, 1);
            send.send(0, 7002, 0).sge(0, 0, lo.host.mr.address(), 32, lo.host.mr.lkey());
            lo.host.qp.postSendOrThrow(send, 1);
            assertThat(set.await(5_000_000_000L)).as("one completion event").isEqualTo(1);
            CompletionQueue cq = set.queue(0);
            assertThat(cq).as("completion event for the receive CQ").isSameAs(lo.target.recvCq);
            assertThat(cq.unacknowledgedEvents()).isEqualTo(1);
            cq.ackEvents();
            assertThat(cq.unacknowledgedEvents()).isZero();
            cq.requestNotify(false);
            expectOne(lo.target, cq, 7001, WorkCompletions.OPCODE_RECV, 32);
        }
    }

    /**
     * A poll group serving several devices waits on all their channels at once (here three channels of one device,
     * which is the same to the wait): a completion on the second ends a long wait at once and is reported for the
     * second; a channel closed by another thread during the wait wakes it, waits for it to let go, and is never
     * handed to C again; wakeup() and the timeout still work over the channels left; with all closed, a wait throws.
     */
    @Test
    void shouldWaitOnSeveralChannelsAndSurviveOneClosedDuringTheWait() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            VerbsContext ctx = lo.target.id.verbsContext();
            CompletionChannel first = ctx.createCompletionChannel();
            CompletionChannel third = ctx.createCompletionChannel();
            CompletionQueue thirdCq = ctx.createCompletionQueue(16, third, 0);
            CompletionChannelSet set = new CompletionChannelSet(8);
            set.add(first);
            set.add(lo.target.channel);
            set.add(third);
            set.add(third); // once only
            assertThat(set.size()).isEqualTo(3);
            consumeTheAddsWakeUp(set);
            thirdCq.requestNotify(false);
            lo.target.recvCq.requestNotify(false);

            AtomicReference<Object> result = new AtomicReference<>("not returned");
            AtomicLong returnedAt = new AtomicLong();
            Thread waiter = CompletionChannelSetTest.waitOn(set, result, returnedAt);
            sleep(200);
            assertThat(waiter.isAlive()).as("nothing to report yet").isTrue();
            ReceiveWorkRequests recv = new ReceiveWorkRequests(1, 1);
            recv.set(0, 7101).sge(0, 0, lo.target.mr.address(), 64, lo.target.mr.lkey());
            lo.target.qp.postReceiveOrThrow(recv, 1);
            SendWorkRequests send = new SendWorkRequests(1, 1);
            send.send(0, 7102, 0).sge(0, 0, lo.host.mr.address(), 32, lo.host.mr.lkey());
            long postedAt = System.nanoTime();
            lo.host.qp.postSendOrThrow(send, 1);
            waiter.join(5000);
            assertThat(waiter.isAlive()).isFalse();
            assertThat(result.get()).as("the second channel's event, out of a 10 s wait").isEqualTo(1);
            System.out.printf("INFO a completion on the 2nd of 3 channels ended a 10 s wait after %d us%n",
                (returnedAt.get() - postedAt) / 1000);
            assertThat(returnedAt.get() - postedAt).isLessThan(2_000_000_000L);
            CompletionQueue cq = set.queue(0);
            assertThat(cq).isSameAs(lo.target.recvCq);
            assertThat(cq.channel()).isSameAs(lo.target.channel);
            cq.ackEvents();
            expectOne(lo.target, cq, 7101, WorkCompletions.OPCODE_RECV, 32);

            // The third channel (with its CQ) closed by another thread while the set is waited on.
            result.set("not returned");
            waiter = CompletionChannelSetTest.waitOn(set, result, returnedAt);
            sleep(200);
            long t0 = System.nanoTime();
            third.close();
            long closeNanos = System.nanoTime() - t0;
            waiter.join(5000);
            assertThat(closeNanos).as("close waits only for the woken wait").isLessThan(2_000_000_000L);
            assertThat(waiter.isAlive()).isFalse();
            assertThat(result.get()).as("woken by the close").isEqualTo(0);
            assertThat(thirdCq.isClosed()).isTrue();

            // The next wait finds it closed, drops it and returns at once (a wake-up written to it may be lost);
            // then the channels left wait as before: the timeout, wakeup().
            t0 = System.nanoTime();
            assertThat(set.await(10_000_000_000L)).isZero();
            assertThat(System.nanoTime() - t0).isLessThan(2_000_000_000L);
            t0 = System.nanoTime();
            assertThat(set.await(200_000_000L)).isZero();
            assertThat(System.nanoTime() - t0).isBetween(150_000_000L, 2_000_000_000L);
            result.set("not returned");
            waiter = CompletionChannelSetTest.waitOn(set, result, returnedAt);
            sleep(200);
            long wokenAt = System.nanoTime();
            set.wakeup();
            waiter.join(5000);
            assertThat(result.get()).isEqualTo(0);
            assertThat(returnedAt.get() - wokenAt).isLessThan(2_000_000_000L);

            first.close();
            CompletionChannelSet onlyClosed = setOf(first, third);
            assertThat(onlyClosed.size()).isZero();
            lo.target.channel.close();
            assertThatThrownBy(() -> set.await(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
            set.wakeup(); // every member closed: a no-op
        }
    }

    /** A set of the channels given that are open (adding a closed one throws), the adds' wake-up consumed. */
    private static CompletionChannelSet setOf(CompletionChannel... channels) throws Exception {
        CompletionChannelSet set = new CompletionChannelSet(8);
        for (CompletionChannel c : channels) {
            if (c.isClosed()) {
                assertThatThrownBy(() -> set.add(c)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
            } else {
                set.add(c);
            }
        }
        if (set.size() > 0) {
            consumeTheAddsWakeUp(set);
        }
        return set;
    }

    /**
     * An add wakes the set's waiter (so that a reactor blocked on its other channels waits on the new one too): the
     * next wait returns at once, woken; it takes no event (nothing is armed and completed yet).
     */
    private static void consumeTheAddsWakeUp(CompletionChannelSet set) throws Exception {
        long t0 = System.nanoTime();
        assertThat(set.await(5_000_000_000L)).as("the add's wake-up, no event").isZero();
        assertThat(System.nanoTime() - t0).isLessThan(2_000_000_000L);
    }

    @Test
    void shouldSurfaceARejectWithItsStatusAndPrivateDataWithinTheTimeout() throws Exception {
        InetSocketAddress address = new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort());
        try (CmEventChannel listenChannel = CmEventChannel.create();
             CmEventChannel hostChannel = CmEventChannel.create()) {
            CmId listener = listenChannel.createId(0);
            listener.bind(address);
            listener.listen(4);
            CmId host = hostChannel.createId(0);
            host.resolve(address, TIMEOUT);
            try (VerbsContext ctx = host.verbsContext(); ProtectionDomain pd = ctx.allocateProtectionDomain();
                 CompletionQueue cq = ctx.createCompletionQueue(16, null, 0)) {
                host.createQueuePair(pd, cq, cq, CAPS);
                host.connect(ConnectionParameters.defaults().withPrivateData(new byte[] {0, 0, 1, 0}));
                CmEvent request = listener.awaitConnectRequest(TIMEOUT);
                byte[] rejectRecord = {0x06, 0x00, 0x01, 0x00}; // NVMe-oF reject: RECFMT 0, STS 6 (invalid IRD)
                request.id().reject(rejectRecord);
                assertThat(request.id().isClosed()).as("reject closes the request's id").isTrue();
                long t0 = System.nanoTime();
                assertThatThrownBy(() -> hostChannel.awaitEvent(host, CmEventType.ESTABLISHED, TIMEOUT.toNanos(),
                    "connect"))
                    .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                        assertThat(e.isRejected()).isTrue();
                        assertThat(e.event()).isEqualTo(CmEventType.REJECTED);
                        assertThat(e.status()).as("IB CM reject reason: consumer defined").isEqualTo(28);
                        assertThat(e.errno()).isEqualTo(Errno.ECONNREFUSED);
                        assertThat(e.privateData()).startsWith(rejectRecord);
                        assertThat(e.peer()).isEqualTo(address.getAddress().getHostAddress() + ":" + address.getPort());
                        assertThat(e.step()).isEqualTo("connect");
                        assertThat(e.getMessage()).contains("REJECTED status 28");
                    });
                assertThat(System.nanoTime() - t0).isLessThan(TIMEOUT.toNanos());
                request.id().close();
                host.close();
            }
            listener.close();
        }
    }

    @Test
    void shouldFailAConnectToAPortWithoutListenerWithinItsTimeout() throws Exception {
        InetSocketAddress nobody = new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort());
        Duration timeout = Duration.ofSeconds(5);
        try (CmEventChannel channel = CmEventChannel.create()) {
            CmId host = channel.createId(0);
            host.resolve(nobody, timeout);
            VerbsContext ctx = host.verbsContext();
            try (ProtectionDomain pd = ctx.allocateProtectionDomain();
                 CompletionQueue cq = ctx.createCompletionQueue(16, null, 0)) {
                host.createQueuePair(pd, cq, cq, CAPS);
                long t0 = System.nanoTime();
                assertThatThrownBy(() -> host.connectAndWait(ConnectionParameters.defaults(), timeout))
                    .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                        // rxe answers with a reject (reason 8, invalid service id) or, failing that, the wait times out
                        assertThat(e.isRejected() || e.isTimeout() || e.event() == CmEventType.UNREACHABLE)
                            .as("%s", e).isTrue();
                        assertThat(e.peer()).endsWith(":" + nobody.getPort());
                        assertThat(e.step()).isEqualTo("connect");
                        System.out.println("INFO connect to nobody: " + e.getMessage());
                    });
                long elapsed = System.nanoTime() - t0;
                assertThat(elapsed).isLessThan(timeout.toNanos() + 1_000_000_000L);
                host.close();
            }
        }
    }

    @Test
    void shouldFailAddressResolutionOfAnUnroutableAddressWithinItsTimeout() throws Exception {
        // 192.0.2.1 (TEST-NET-1): the guest has no default route, so resolution fails without sending anything.
        InetSocketAddress unroutable = new InetSocketAddress(InetAddress.getByName("192.0.2.1"), 4420);
        try (CmEventChannel channel = CmEventChannel.create()) {
            CmId id = channel.createId(0);
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> id.resolve(unroutable, Duration.ofSeconds(3)))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.peer()).isEqualTo("192.0.2.1:4420");
                    assertThat(e.step()).isEqualTo("resolve address");
                    assertThat(e.errno()).isPositive();
                    System.out.println("INFO resolve unroutable: " + e.getMessage());
                });
            assertThat(System.nanoTime() - t0).isLessThan(4_000_000_000L);
            id.close();
        }
    }

    @Test
    void shouldDisconnectFlushOutstandingReceivesAndCloseEverythingTwice() throws Exception {
        RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(), ConnectionParameters.defaults());
        try {
            ReceiveWorkRequests recv = new ReceiveWorkRequests(2, 1);
            recv.set(0, 8001).sge(0, 0, lo.target.mr.address(), 64, lo.target.mr.lkey());
            recv.set(1, 8002).sge(1, 0, lo.target.mr.address() + 64, 64, lo.target.mr.lkey());
            lo.target.qp.postReceiveOrThrow(recv, 2);
            lo.host.id.disconnect();
            // The passive side answers the DREQ with its own rdma_disconnect (the DREP); only then does the host
            // see DISCONNECTED (otherwise after the DREQ timed out).
            lo.listenChannel.awaitEvent(lo.target.id, CmEventType.DISCONNECTED, TIMEOUT.toNanos(), "disconnect");
            lo.target.id.disconnect();
            lo.hostChannel().awaitEvent(lo.host.id, CmEventType.DISCONNECTED, TIMEOUT.toNanos(), "disconnect");
            WorkCompletions wcs = new WorkCompletions(8);
            int[] st = new int[2];
            long[] ids = new long[2];
            assertThat(lo.target.pollUntil(lo.target.recvCq, wcs, 2, st, ids, new int[2], new int[2])).isEqualTo(2);
            assertThat(st).containsOnly(WorkCompletions.STATUS_WR_FLUSH_ERR);
            assertThat(ids).containsExactlyInAnyOrder(8001, 8002);
            assertThat(lo.target.qp.state()).isEqualTo(6); // ERR
        } finally {
            lo.close();
            lo.close();
        }
        RdmaLoopback.Side s = lo.host;
        for (io.nvmeof4j.jni.NativeHandle h : List.of(s.qp, s.id, s.mr, s.sendCq, s.recvCq, s.channel, s.pd,
            lo.listener, lo.listenChannel)) {
            assertThat(h.isClosed()).as("%s", h).isTrue();
            h.close();
        }
        SendWorkRequests wrs = new SendWorkRequests(1, 1);
        assertThatThrownBy(() -> s.qp.postSend(wrs, 1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> s.sendCq.poll(new WorkCompletions(1))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> s.pd.registerMemory(ByteBuffer.allocateDirect(64), MemoryRegion.LOCAL_WRITE))
            .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> s.id.disconnect()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new CompletionChannelSet(1).add(s.channel)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> lo.listenChannel.pollEvent()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void shouldWakeAndCloseChannelsFromOtherThreadsWithoutTouchingFreedMemory() throws Exception {
        try (CmEventChannel cmHost = CmEventChannel.create()) {
            CmId id = cmHost.createId(0);
            id.resolve(new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort()), TIMEOUT);
            VerbsContext ctx = id.verbsContext();
            CompletionChannel ch = ctx.createCompletionChannel();
            CompletionQueue cq = ctx.createCompletionQueue(16, ch, 0);
            cq.requestNotify(false);
            CompletionChannelSet set = setOf(ch);
            raceWaitWakeAndClose("completion channel", () -> set.await(5_000_000_000L), set::wakeup, ch::close);
            assertThat(cq.isClosed()).as("the channel's close closed its CQ").isTrue();
            ch.wakeup(); // closed: a silent no-op

            CmEventChannel cm = CmEventChannel.create();
            CmId idle = cm.createId(0);
            raceWaitWakeAndClose("CM event channel", () -> cm.nextEvent(5_000_000_000L), cm::wakeup, cm::close);
            assertThat(idle.isClosed()).isTrue();
            cm.wakeup();
            id.close();
        }
    }

    /**
     * A waiter loops on {@code await} (each wait up to 5 s), a producer hammers {@code wakeup}, and the main thread
     * closes the channel: the close returns promptly, the waiter ends with IllegalStateException (closed), and no
     * wake-up ever fails.
     */
    private static void raceWaitWakeAndClose(String what, ThrowingRunnable await, Runnable wakeup, Runnable close)
            throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger waits = new AtomicInteger();
        AtomicReference<Throwable> waiterEnd = new AtomicReference<>();
        ConcurrentLinkedQueue<Throwable> wakeFailures = new ConcurrentLinkedQueue<>();
        Thread waiter = new Thread(() -> {
            long end = System.nanoTime() + 10_000_000_000L;
            try {
                while (System.nanoTime() < end) {
                    await.run();
                    waits.incrementAndGet();
                }
            } catch (Throwable t) {
                waiterEnd.set(t);
            }
        }, "waiter");
        Thread producer = new Thread(() -> {
            long end = System.nanoTime() + 3_000_000_000L;
            while (!stop.get() && System.nanoTime() < end) {
                try {
                    wakeup.run();
                } catch (Throwable t) {
                    wakeFailures.add(t);
                }
                Thread.onSpinWait();
            }
        }, "waker");
        waiter.start();
        sleep(100); // the waiter is in its native wait (woken over and over once the producer runs)
        producer.start();
        sleep(100);
        long t0 = System.nanoTime();
        close.run();
        long closeNanos = System.nanoTime() - t0;
        waiter.join(5000);
        sleep(50); // the producer keeps waking the closed channel for a while
        stop.set(true);
        producer.join(5000);
        assertThat(closeNanos).as("%s close while waited on and woken", what).isLessThan(2_000_000_000L);
        assertThat(waiter.isAlive()).as("%s waiter ended", what).isFalse();
        assertThat(waiterEnd.get()).as("%s waiter's end after %d waits", what, waits.get())
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(wakeFailures).as("%s wake-ups", what).isEmpty();
        System.out.printf("INFO %s: %d waits woken before the close, close took %d us%n", what, waits.get(),
            closeNanos / 1000);
    }

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void shouldCloseACompletionQueueWithUnackedEventsOrWhileItsChannelIsAwaited() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            // An event received (ibv_get_cq_event) and not acknowledged: close from another thread must not hang.
            CompletionChannelSet set = setOf(lo.target.channel);
            CompletionQueue recvCq = lo.target.recvCq;
            recvCq.requestNotify(false);
            ReceiveWorkRequests recv = new ReceiveWorkRequests(1, 1);
            recv.set(0, 9001).sge(0, 0, lo.target.mr.address(), 64, lo.target.mr.lkey());
            lo.target.qp.postReceiveOrThrow(recv, 1);
            SendWorkRequests send = new SendWorkRequests(1, 1);
            send.send(0, 9002, 0).sge(0, 0, lo.host.mr.address(), 32, lo.host.mr.lkey());
            lo.host.qp.postSendOrThrow(send, 1);
            assertThat(set.await(5_000_000_000L)).isEqualTo(1);
            CompletionQueue got = set.queue(0);
            assertThat(got).isSameAs(recvCq);
            assertThat(got.unacknowledgedEvents()).isEqualTo(1);
            Thread closer = new Thread(recvCq::close, "cq-closer");
            long t0 = System.nanoTime();
            closer.start();
            closer.join(5000);
            assertThat(closer.isAlive()).as("ibv_destroy_cq with an unacked event hung").isFalse();
            assertThat(System.nanoTime() - t0).isLessThan(2_000_000_000L);
            assertThat(recvCq.isClosed()).isTrue();
            assertThat(lo.target.qp.isClosed()).as("closing a CQ closes the QP using it first").isTrue();
            got.ackEvents(); // the reactor's late ack: a no-op, the close acked it
            assertThat(got.unacknowledgedEvents()).isZero();

            // A thread blocked in await on the channel while another thread closes a CQ of that channel.
            CompletionQueue other = lo.target.sendCq;
            AtomicReference<Object> result = new AtomicReference<>("not returned");
            Thread waiter = new Thread(() -> {
                try {
                    result.set(set.await(10_000_000_000L));
                } catch (Throwable t) {
                    result.set(t);
                }
            }, "cq-waiter");
            waiter.start();
            sleep(200);
            t0 = System.nanoTime();
            other.close();
            long closeNanos = System.nanoTime() - t0;
            waiter.join(5000);
            assertThat(closeNanos).isLessThan(2_000_000_000L);
            assertThat(waiter.isAlive()).isFalse();
            assertThat(result.get()).as("the waiter was woken by the close").isEqualTo(0);
        }
    }

    @Test
    void shouldTakeParkedEventsAndServeTwoWaitersOnOneChannel() throws Exception {
        InetSocketAddress dest = new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort());
        try (CmEventChannel ch = CmEventChannel.create()) {
            CmId a = ch.createId(1);
            CmId b = ch.createId(2);
            b.resolveAddress(null, dest, 2000);
            sleep(300); // b's ADDR_RESOLVED is queued first
            a.resolveAddress(null, dest, 2000);
            CmEvent ea = ch.awaitEvent(a, CmEventType.ADDR_RESOLVED, TIMEOUT.toNanos(), "resolve address");
            assertThat(ea.id()).isSameAs(a);
            assertThat(ch.parkedEvents()).as("b's event, read while waiting for a's").isEqualTo(1);
            long t0 = System.nanoTime();
            CmEvent eb = ch.awaitEvent(b, CmEventType.ADDR_RESOLVED, TIMEOUT.toNanos(), "resolve address");
            assertThat(eb.id()).isSameAs(b);
            assertThat(System.nanoTime() - t0).as("taken from the parked events").isLessThan(1_000_000_000L);
            assertThat(ch.parkedEvents()).isZero();

            // Two threads waiting on one channel for different ids: each gets its own event exactly once.
            a.resolveRoute(2000);
            b.resolveRoute(2000);
            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<Object> ra = new AtomicReference<>();
            AtomicReference<Object> rb = new AtomicReference<>();
            Thread ta = awaitIn(ch, a, go, ra);
            Thread tb = awaitIn(ch, b, go, rb);
            go.countDown();
            ta.join(TIMEOUT.toMillis() + 2000);
            tb.join(TIMEOUT.toMillis() + 2000);
            assertThat(ra.get()).isInstanceOfSatisfying(CmEvent.class, e -> assertThat(e.id()).isSameAs(a));
            assertThat(rb.get()).isInstanceOfSatisfying(CmEvent.class, e -> assertThat(e.id()).isSameAs(b));
            assertThat(ch.pollEvent()).as("no event left over or duplicated").isNull();
            a.close();
            b.close();
        }
    }

    private static Thread awaitIn(CmEventChannel ch, CmId id, CountDownLatch go, AtomicReference<Object> result) {
        Thread t = new Thread(() -> {
            try {
                go.await(5, TimeUnit.SECONDS);
                result.set(ch.awaitEvent(id, CmEventType.ROUTE_RESOLVED, TIMEOUT.toNanos(), "resolve route"));
            } catch (Throwable e) {
                result.set(e);
            }
        }, "await-" + id.context());
        t.start();
        return t;
    }

    @Test
    void shouldCancelAnAwaitOnWakeupAndWaitForNextEventsUntilTheDeadline() throws Exception {
        try (CmEventChannel ch = CmEventChannel.create()) {
            CmId id = ch.createId(0);
            Thread waker = new Thread(() -> {
                sleep(150);
                ch.wakeup();
            });
            long t0 = System.nanoTime();
            waker.start();
            assertThatThrownBy(() -> ch.awaitEvent(id, CmEventType.ADDR_RESOLVED, 5_000_000_000L, "resolve address"))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.errno()).isEqualTo(Errno.ECANCELED);
                    assertThat(e.isTimeout()).isFalse();
                });
            assertThat(System.nanoTime() - t0).isBetween(100_000_000L, 3_000_000_000L);
            waker.join(5000);
            t0 = System.nanoTime();
            assertThat(ch.nextEvent(300_000_000L)).isNull();
            assertThat(System.nanoTime() - t0).as("nextEvent waits until its deadline").isGreaterThanOrEqualTo(
                290_000_000L);
            id.close();
        }
    }

    @Test
    void shouldCloseQueuePairsWithTheirParentsAndRaceQueuePairAgainstIdClose() throws Exception {
        InetSocketAddress dest = new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort());
        try (CmEventChannel ch = CmEventChannel.create()) {
            for (int round = 0; round < 6; round++) {
                // a new id may get the pointer of the one destroyed last round: its events must still reach it
                CmId id = ch.createId(round);
                id.resolve(dest, TIMEOUT);
                VerbsContext ctx = id.verbsContext();
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(16, null, 0);
                QueuePair qp = id.createQueuePair(pd, cq, cq, CAPS);
                if (round % 3 == 2) {
                    // a parent closed first closes the QP (ibv_dealloc_pd / ibv_destroy_cq would fail with EBUSY)
                    if (round == 2) {
                        pd.close();
                    } else {
                        cq.close();
                    }
                    assertThat(qp.isClosed()).isTrue();
                    id.close();
                } else {
                    CountDownLatch go = new CountDownLatch(1);
                    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
                    Thread t1 = closeIn(qp, go, failures);
                    Thread t2 = closeIn(id, go, failures);
                    go.countDown();
                    t1.join(5000);
                    t2.join(5000);
                    assertThat(failures).isEmpty();
                    assertThat(qp.isClosed()).isTrue();
                    assertThat(id.isClosed()).isTrue();
                }
                // the QP is gone natively: freeing its CQ and PD succeeds (a failed destroy would throw)
                cq.close();
                pd.close();
            }
        }
    }

    private static Thread closeIn(io.nvmeof4j.jni.NativeHandle h, CountDownLatch go, ConcurrentLinkedQueue<Throwable> f) {
        Thread t = new Thread(() -> {
            try {
                go.await(5, TimeUnit.SECONDS);
                h.close();
            } catch (Throwable e) {
                f.add(e);
            }
        });
        t.start();
        return t;
    }

    @Test
    void shouldRejectAConnectRequestAnAwaitThrowsOn() throws Exception {
        InetSocketAddress address = new InetSocketAddress(RdmaLoopback.deviceAddress(), RdmaLoopback.freshPort());
        try (CmEventChannel listenChannel = CmEventChannel.create();
             CmEventChannel hostChannel = CmEventChannel.create()) {
            CmId listener = listenChannel.createId(0);
            listener.bind(address);
            listener.listen(4);
            CmId host = hostChannel.createId(0);
            host.resolve(address, TIMEOUT);
            VerbsContext ctx = host.verbsContext();
            try (ProtectionDomain pd = ctx.allocateProtectionDomain();
                 CompletionQueue cq = ctx.createCompletionQueue(16, null, 0)) {
                host.createQueuePair(pd, cq, cq, CAPS);
                host.connect(ConnectionParameters.defaults());
                assertThatThrownBy(() -> listenChannel.awaitEvent(listener, CmEventType.ESTABLISHED,
                    TIMEOUT.toNanos(), "accept"))
                    .isInstanceOfSatisfying(RdmaCmException.class,
                        e -> assertThat(e.event()).isEqualTo(CmEventType.CONNECT_REQUEST));
                assertThatThrownBy(() -> hostChannel.awaitEvent(host, CmEventType.ESTABLISHED, TIMEOUT.toNanos(),
                    "connect"))
                    .isInstanceOfSatisfying(RdmaCmException.class, e -> assertThat(e.isRejected()).isTrue());
                assertThat(listenChannel.pollEvent()).as("the request was consumed, not parked").isNull();
                host.close();
            }
            listener.close();
        }
    }

    @Test
    void shouldShareOneContextAndOneCompletionChannelAcrossConnections() throws Exception {
        try (RdmaLoopback lo = RdmaLoopback.connect(CAPS, ConnectionParameters.defaults(),
            ConnectionParameters.defaults())) {
            VerbsContext ctx = lo.host.id.verbsContext();
            assertThat(lo.target.id.verbsContext()).as("one object per librdmacm context").isSameAs(ctx);
            assertThat(lo.target.pd.context()).isSameAs(lo.host.pd.context());
            assertThat(ctx.isShared()).isTrue();
            // one reactor's completion channel serving a CQ of the other connection
            try (CompletionQueue cq = ctx.createCompletionQueue(16, lo.host.channel, 0)) {
                cq.requestNotify(false);
                assertThat(cq.channel()).isSameAs(lo.host.channel);
            }
        }
    }

    private static WorkCompletions expectOne(RdmaLoopback.Side side, CompletionQueue cq, long wrId, int opcode,
                                             int byteLen) {
        WorkCompletions wcs = new WorkCompletions(8);
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        int n = 0;
        while (n == 0 && System.nanoTime() < deadline) {
            n = cq.poll(wcs);
            assertThat(n).isGreaterThanOrEqualTo(0);
        }
        assertThat(n).as("a completion on %s within %s", cq, TIMEOUT).isEqualTo(1);
        assertThat(wcs.status(0)).as("status %s", WorkCompletions.statusName(wcs.status(0))).isZero();
        assertThat(wcs.wrId(0)).isEqualTo(wrId);
        assertThat(wcs.opcode(0)).isEqualTo(opcode);
        if (byteLen >= 0) {
            assertThat(wcs.byteLength(0)).isEqualTo(byteLen);
        }
        return wcs;
    }

    private static byte[] random(int n) {
        byte[] b = new byte[n];
        ThreadLocalRandom.current().nextBytes(b);
        return b;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
