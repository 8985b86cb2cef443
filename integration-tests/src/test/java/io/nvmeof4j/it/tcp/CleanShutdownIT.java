package io.nvmeof4j.it.tcp;

import io.nvmeof4j.it.tcp.RawNvmeTcpHost.DataMode;
import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.EOFException;
import java.io.IOException;
import java.net.SocketException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code TargetDaemon.close()} with commands in flight: every command is answered before its connection closes,
 * and file-namespace data whose write completed is there after a restart on the same configuration.
 *
 * <p>What is in flight is made certain, not left to timing: a parked AER on the admin queue, and writes whose R2T
 * the host holds back, so the controller is waiting for their data when {@code close()} starts. If
 * {@code close()} is still running after {@value #DATA_HELD_MS} ms the host sends that data (a controller that
 * waits for it completes those writes); if it has returned, the controller must have answered them, with an abort
 * status, before closing the connection. Dropping them fails this test.
 */
class CleanShutdownIT {
    static final long DATA_HELD_MS = 500;

    @TempDir
    Path dir;

    @Test
    void shouldAnswerEveryOutstandingCommandAndKeepCompletedWritesAcrossARestart() throws Exception {
        HostIdentity host = TestTarget.ALLOWED_HOST_B;
        Map<Integer, long[]> writeExtents = new LinkedHashMap<>();
        Map<Integer, byte[]> writeData = new LinkedHashMap<>();
        List<Integer> ioCids = new ArrayList<>();
        Map<Integer, Completion> answered = new LinkedHashMap<>();
        Map<Integer, Completion> adminAnswered = new LinkedHashMap<>();
        List<String> unanswered = new ArrayList<>();
        List<String> closeHow = new ArrayList<>();
        int heldR2Ts;
        Path config;

        TestTarget target = TestTarget.start(dir);
        config = target.configFile();
        try (RawNvmeTcpHost admin = Sessions.enabledAdmin(target.ioPort(), TestTarget.NQN_B, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            int bs = Sessions.blockSize(admin, 1);
            int aer = admin.submitAsyncEventRequest();
            try (RawNvmeTcpHost io = Sessions.ioQueue(target.ioPort(), TestTarget.NQN_B, host, 1, admin.cntlid())) {
                // 8 in-capsule 16 KiB writes, answered before the shutdown starts
                for (int i = 0; i < 8; i++) {
                    ioCids.add(submitWrite(io, i, 16384, bs, DataMode.IN_CAPSULE, writeExtents, writeData));
                }
                // 4 writes of 64 KiB by R2T, whose R2Ts the host holds back
                io.deferR2Ts(true);
                for (int i = 8; i < 12; i++) {
                    ioCids.add(submitWrite(io, i, 65536, bs, DataMode.R2T, writeExtents, writeData));
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline
                        && (io.deferredR2TCount() < 1 || ioCids.subList(0, 8).stream().anyMatch(io::isOutstanding))) {
                    for (Completion c : io.drainFor(java.time.Duration.ofMillis(20))) {
                        answered.put(c.cid(), c);
                    }
                }
                heldR2Ts = io.deferredR2TCount();
                assertThat(heldR2Ts).as("R2Ts received and held before the shutdown").isPositive();
                // 4 reads of 64 KiB
                for (int i = 0; i < 4; i++) {
                    ioCids.add(io.submit(RawNvmeTcpHost.readCommand(1, (131072L * i) / bs, 65536 / bs, bs, false)));
                }

                CompletableFuture<Void> closing = CompletableFuture.runAsync(target::close);
                try {
                    closing.get(DATA_HELD_MS, TimeUnit.MILLISECONDS);
                    // Sending now would only draw a reset from a closed socket and muddle what arrived before it.
                    closeHow.add("close() returned while the held data was still unsent");
                } catch (java.util.concurrent.TimeoutException e) {
                    closeHow.add("close() still running after " + DATA_HELD_MS + " ms, held data sent");
                    try {
                        io.releaseDeferredR2Ts();
                    } catch (IOException sendFailed) {
                        closeHow.add("sending the held data failed: " + sendFailed.getMessage());
                    }
                }
                closeHow.add("I/O queue: " + drain(io, ioCids, answered, unanswered));
                closeHow.add("admin queue: " + drain(admin, List.of(aer), adminAnswered, unanswered));
                closing.get(30, TimeUnit.SECONDS);
            }
        } finally {
            target.close();
        }

        for (Completion c : answered.values()) {
            if (writeData.containsKey(c.cid())) {
                int code = NvmeStatus.code(c.status());
                assertThat(code == NvmeStatus.SUCCESS || code == NvmeStatus.ABORTED_SQ_DELETION
                    || code == NvmeStatus.ABORTED_BY_REQUEST || code == NvmeStatus.HOST_PATH_ERROR)
                    .as("a write cut short by the shutdown ends with success or an abort status: %s", c).isTrue();
            }
        }

        try (TestTarget restarted = TestTarget.startFrom(config);
             RawNvmeTcpHost admin = Sessions.enabledAdmin(restarted.ioPort(), TestTarget.NQN_B, host, Sessions.KATO_MS)) {
            Sessions.requestIoQueues(admin, 1);
            int bs = Sessions.blockSize(admin, 1);
            try (RawNvmeTcpHost io = Sessions.ioQueue(restarted.ioPort(), TestTarget.NQN_B, host, 1, admin.cntlid())) {
                int verified = 0;
                for (Map.Entry<Integer, long[]> w : writeExtents.entrySet()) {
                    Completion c = answered.get(w.getKey());
                    if (c == null || !c.isSuccess()) {
                        continue;
                    }
                    long[] e = w.getValue();
                    Completion r = io.read(1, e[0], (int) e[1], bs);
                    assertThat(r.status()).as("read after restart %s", r).isEqualTo(NvmeStatus.SUCCESS);
                    assertThat(r.data()).as("write CID %d (SLBA %d) completed before close, read after restart",
                        w.getKey(), e[0]).isEqualTo(writeData.get(w.getKey()));
                    verified++;
                }
                assertThat(verified).as("completed writes verified after the restart").isGreaterThanOrEqualTo(8);
            }
        }
        // Checked last, so that a failure here still had the completed writes verified above.
        assertThat(unanswered).as("commands without a response when their connection closed (%s; %d R2Ts held; AER: %s)",
            closeHow, heldR2Ts, adminAnswered.values()).isEmpty();
    }

    private static int submitWrite(RawNvmeTcpHost io, int i, int size, int bs, DataMode mode,
                                   Map<Integer, long[]> extents, Map<Integer, byte[]> data) throws IOException {
        long slba = (131072L * i) / bs;
        byte[] bytes = Bytes.random(1000 + i, size);
        int cid = io.submit(RawNvmeTcpHost.writeCommand(1, slba, size / bs, bytes, false).mode(mode));
        extents.put(cid, new long[] {slba, size / bs});
        data.put(cid, bytes);
        return cid;
    }

    /** Collects completions until all are in or the connection closes; returns how the connection ended. */
    private static String drain(RawNvmeTcpHost queue, List<Integer> cids, Map<Integer, Completion> answered,
                                List<String> unanswered) throws IOException {
        for (int cid : cids) {
            if (answered.containsKey(cid)) {
                continue;
            }
            try {
                answered.put(cid, queue.await(cid));
            } catch (EOFException | SocketException e) {
                String outstanding = queue.describeOutstanding();
                for (int other : cids) {
                    Completion arrived = queue.takeCompletion(other);
                    if (arrived != null) {
                        answered.put(other, arrived);
                    }
                }
                if (!outstanding.equals("[]")) {
                    unanswered.add(queue.peer() + " " + outstanding);
                }
                return e.getMessage();
            }
        }
        return "all answered";
    }
}
