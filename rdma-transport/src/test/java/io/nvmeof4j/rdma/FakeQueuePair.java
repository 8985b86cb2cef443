package io.nvmeof4j.rdma;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * One end of a fake RC connection: posted receives, completions, and RDMA READ/WRITE resolved through a
 * {@link FakeMemory}. Two ends can be {@linkplain #pair paired} (a SEND on one lands in the other's receive); an
 * unpaired end records what it sends so a test can play the peer by hand. Unit tests only.
 */
public final class FakeQueuePair implements QueuePairVerbs {
    public record Sent(long wrId, byte[] bytes, int invalidateRkey) {
    }

    private record Receive(long wrId, long address, int length, int lkey) {
    }

    private record Completion(long wrId, int status, int opcode, int byteLength) {
    }

    private final FakeMemory memory;
    private final ArrayDeque<Receive> receives = new ArrayDeque<>();
    private final ArrayDeque<Completion> completions = new ArrayDeque<>();
    public final List<Sent> sent = new ArrayList<>();
    FakeQueuePair peer;
    public boolean disconnected;
    public boolean destroyed;
    int armed;
    /** When set, the next RDMA READ fails with this status (e.g. 10, remote access error). */
    int failNextRead;
    public int reads;
    public int writes;

    public FakeQueuePair(FakeMemory memory) {
        this.memory = memory;
    }

    public static void pair(FakeQueuePair a, FakeQueuePair b) {
        a.peer = b;
        b.peer = a;
    }

    public int postedReceives() {
        return receives.size();
    }

    int pendingCompletions() {
        return completions.size();
    }

    /** The peer sends {@code bytes} to this end: lands in the oldest posted receive. */
    synchronized void deliver(byte[] bytes) {
        Receive r = receives.poll();
        if (r == null) {
            throw new AssertionError("receiver not ready (no receive posted)");
        }
        if (bytes.length > r.length) {
            completions.add(new Completion(r.wrId, 1, WorkCompletions.OPCODE_RECV, 0)); // local length error
            return;
        }
        ByteBuffer target = memory.resolve(r.address, bytes.length, r.lkey, false);
        target.put(0, bytes);
        completions.add(new Completion(r.wrId, 0, WorkCompletions.OPCODE_RECV, bytes.length));
    }

    private byte[] local(long address, int length, int lkey) {
        ByteBuffer b = memory.resolve(address, length, lkey, false);
        if (b == null) {
            throw new AssertionError("local address 0x" + Long.toHexString(address) + "+" + length + " lkey " + lkey
                + " not registered");
        }
        byte[] bytes = new byte[length];
        b.get(0, bytes);
        return bytes;
    }

    /** Staged like the real one: a receive is there for the peer only after {@link #flush()}. */
    @Override
    public synchronized int postReceive(long wrId, long address, int length, int lkey) {
        stagedReceives.add(new Receive(wrId, address, length, lkey));
        return 0;
    }

    private void postStagedReceive(Receive r) {
        if (disconnected) {
            completions.add(new Completion(r.wrId, WorkCompletions.STATUS_WR_FLUSH_ERROR, WorkCompletions.OPCODE_RECV,
                0));
            return;
        }
        receives.add(r);
    }

    private final List<Receive> stagedReceives = new ArrayList<>();
    private final List<Runnable> staged = new ArrayList<>();
    /** Calls of {@link #flush()} that posted something: the JNI crossings the real one would make. */
    public int flushes;

    @Override
    public synchronized int flush() {
        if (stagedReceives.isEmpty() && staged.isEmpty()) {
            return 0;
        }
        flushes++;
        List<Receive> recvs = new ArrayList<>(stagedReceives);
        stagedReceives.clear();
        recvs.forEach(this::postStagedReceive); // receives first, as the real post
        List<Runnable> ops = new ArrayList<>(staged);
        staged.clear();
        ops.forEach(Runnable::run);
        return 0;
    }

    @Override
    public synchronized int staged() {
        return staged.size() + stagedReceives.size();
    }

    public synchronized int stagedReceives() {
        return stagedReceives.size();
    }

    @Override
    public synchronized int discardStagedSends() {
        int n = staged.size();
        staged.clear();
        return n;
    }

    @Override
    public synchronized int discardStagedReceives() {
        int n = stagedReceives.size();
        stagedReceives.clear();
        return n;
    }

    @Override
    public synchronized int postSend(long wrId, long address, int length, int lkey, int invalidateRkey) {
        staged.add(() -> doSend(wrId, address, length, lkey, invalidateRkey));
        return 0;
    }

    @Override
    public synchronized int postWriteAndSend(long writeWrId, long address, int length, int lkey, long remoteAddress,
                                             int rkey, long sendWrId, long sendAddress, int sendLength, int sendLkey,
                                             int invalidateRkey) {
        staged.add(() -> doWriteAndSend(writeWrId, address, length, lkey, remoteAddress, rkey, sendWrId, sendAddress,
            sendLength, sendLkey, invalidateRkey));
        staged.add(() -> { }); // the WRITE and the SEND are two work requests
        return 0;
    }

    @Override
    public synchronized int postRead(long wrId, long address, int length, int lkey, long remoteAddress, int rkey) {
        staged.add(() -> doRead(wrId, address, length, lkey, remoteAddress, rkey));
        return 0;
    }

    private synchronized int doSend(long wrId, long address, int length, int lkey, int invalidateRkey) {
        if (disconnected) {
            completions.add(new Completion(wrId, WorkCompletions.STATUS_WR_FLUSH_ERROR, WorkCompletions.OPCODE_SEND, 0));
            return 0;
        }
        byte[] bytes = local(address, length, lkey);
        sent.add(new Sent(wrId, bytes, invalidateRkey));
        if (peer != null) {
            peer.deliver(bytes);
        }
        completions.add(new Completion(wrId, 0, WorkCompletions.OPCODE_SEND, 0));
        return 0;
    }

    private synchronized int doWriteAndSend(long writeWrId, long address, int length, int lkey, long remoteAddress,
                                            int rkey, long sendWrId, long sendAddress, int sendLength, int sendLkey,
                                            int invalidateRkey) {
        if (disconnected) {
            completions.add(new Completion(writeWrId, WorkCompletions.STATUS_WR_FLUSH_ERROR,
                WorkCompletions.OPCODE_RDMA_WRITE, 0));
            completions.add(new Completion(sendWrId, WorkCompletions.STATUS_WR_FLUSH_ERROR,
                WorkCompletions.OPCODE_SEND, 0));
            return 0;
        }
        ByteBuffer remote = memory.resolve(remoteAddress, length, rkey, true);
        if (remote == null) {
            completions.add(new Completion(writeWrId, 10, WorkCompletions.OPCODE_RDMA_WRITE, 0));
            disconnected = true;
            completions.add(new Completion(sendWrId, WorkCompletions.STATUS_WR_FLUSH_ERROR,
                WorkCompletions.OPCODE_SEND, 0));
            return 0;
        }
        writes++;
        remote.put(0, local(address, length, lkey));
        byte[] bytes = local(sendAddress, sendLength, sendLkey);
        sent.add(new Sent(sendWrId, bytes, invalidateRkey));
        if (peer != null) {
            peer.deliver(bytes);
        }
        completions.add(new Completion(sendWrId, 0, WorkCompletions.OPCODE_SEND, 0));
        return 0;
    }

    private synchronized int doRead(long wrId, long address, int length, int lkey, long remoteAddress, int rkey) {
        if (disconnected) {
            completions.add(new Completion(wrId, WorkCompletions.STATUS_WR_FLUSH_ERROR,
                WorkCompletions.OPCODE_RDMA_READ, 0));
            return 0;
        }
        if (failNextRead != 0) {
            completions.add(new Completion(wrId, failNextRead, WorkCompletions.OPCODE_RDMA_READ, 0));
            failNextRead = 0;
            return 0;
        }
        ByteBuffer remote = memory.resolve(remoteAddress, length, rkey, true);
        if (remote == null) {
            completions.add(new Completion(wrId, 10, WorkCompletions.OPCODE_RDMA_READ, 0));
            return 0;
        }
        reads++;
        byte[] bytes = new byte[length];
        remote.get(0, bytes);
        memory.resolve(address, length, lkey, false).put(0, bytes);
        completions.add(new Completion(wrId, 0, WorkCompletions.OPCODE_RDMA_READ, length));
        return 0;
    }

    @Override
    public synchronized int poll(WorkCompletions out) {
        int n = 0;
        while (n < out.capacity() && !completions.isEmpty()) {
            Completion c = completions.poll();
            out.wrId[n] = c.wrId;
            out.status[n] = c.status;
            out.opcode[n] = c.opcode;
            out.byteLength[n] = c.byteLength;
            out.vendorError[n] = 0;
            n++;
        }
        return n;
    }

    @Override
    public synchronized int armNotification() {
        armed++;
        return 0;
    }

    @Override
    public synchronized void disconnect() {
        if (disconnected) {
            return;
        }
        disconnected = true;
        Receive r;
        while ((r = receives.poll()) != null) {
            completions.add(new Completion(r.wrId, WorkCompletions.STATUS_WR_FLUSH_ERROR, WorkCompletions.OPCODE_RECV, 0));
        }
        if (peer != null && !peer.disconnected) {
            peer.disconnect();
        }
    }

    @Override
    public synchronized void destroy() {
        destroyed = true;
    }
}
