package io.nvmeof4j.target.backend;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Test helper: submits one I/O and waits (bounded) for its status. */
public final class SyncIo extends BlockIo {
    private volatile CompletableFuture<Integer> done;
    private volatile int completions;
    private boolean lendNext;

    public static int run(BlockDevice device, Op op, long offset, long length, ByteBuffer buffer, boolean fua) {
        return new SyncIo().submitAndWait(device, op, offset, length, buffer, fua);
    }

    /** The next submission offers the device to lend its memory ({@link #lendable}). */
    public SyncIo lendNext() {
        lendNext = true;
        return this;
    }

    public int submitAndWait(BlockDevice device, Op op, long offset, long length, ByteBuffer buffer, boolean fua) {
        done = new CompletableFuture<>();
        completions = 0;
        prepare(op, offset, length, buffer, fua).lendable(lendNext);
        lendNext = false;
        device.submit(this);
        try {
            int status = done.get(10, TimeUnit.SECONDS);
            if (completions != 1) {
                throw new AssertionError("completed " + completions + " times");
            }
            return status;
        } catch (Exception e) {
            throw new AssertionError("I/O did not complete: " + e, e);
        }
    }

    @Override
    public void complete(int nvmeStatus) {
        completions++;
        done.complete(nvmeStatus);
    }

    public static ByteBuffer pattern(int length, long seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(length);
        java.util.Random r = new java.util.Random(seed);
        for (int i = 0; i < length; i++) {
            b.put(i, (byte) r.nextInt());
        }
        return b;
    }

    public static boolean allZero(ByteBuffer b, int from, int length) {
        for (int i = from; i < from + length; i++) {
            if (b.get(i) != 0) {
                return false;
            }
        }
        return true;
    }
}
