package io.nvmeof4j.bench;

import io.nvmeof4j.jni.bdev.Bdev;
import io.nvmeof4j.jni.bdev.BdevCompletionHandler;
import io.nvmeof4j.jni.bdev.BdevDescriptor;
import io.nvmeof4j.jni.bdev.BdevIoChannel;
import io.nvmeof4j.jni.bdev.BdevPollGroup;
import io.nvmeof4j.jni.bdev.BdevRegion;
import io.nvmeof4j.jni.bdev.UringOptions;

import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The block-device shim alone: random reads of one block size at a fixed queue depth on one thread, the way a
 * reactor drives it (submit into the batch, one flush per round, reap in one call, resubmit from the completion),
 * into registered fixed buffers. Compare with {@code fio --ioengine=io_uring} on the same file (run by
 * benchmarks/run-bdev-benchmarks.sh). Not a test.
 * <p>Usage: BdevRandomReadBenchmark FILE [seconds=10] [queue depth=32] [block size=4096] [buffered=false]
 */
public final class BdevRandomReadBenchmark implements BdevCompletionHandler {
    private final BdevIoChannel channel;
    private final long blocks;
    private final int blockSize;
    private final SplittableRandom random = new SplittableRandom(42);
    private long completed;
    private long errors;

    private BdevRandomReadBenchmark(BdevIoChannel channel, long blocks, int blockSize) {
        this.channel = channel;
        this.blocks = blocks;
        this.blockSize = blockSize;
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int depth = args.length > 2 ? Integer.parseInt(args[2]) : 32;
        int blockSize = args.length > 3 ? Integer.parseInt(args[3]) : 4096;
        boolean buffered = args.length > 4 && Boolean.parseBoolean(args[4]);
        try (Bdev dev = Bdev.openUring(file, UringOptions.defaults().withBlockSize(blockSize).withBuffered(buffered));
             BdevRegion region = BdevRegion.map((long) depth * blockSize, false);
             BdevPollGroup group = new BdevPollGroup(Math.max(depth, 1), region.buffer());
             BdevDescriptor desc = dev.open(false)) {
            BdevRandomReadBenchmark[] self = new BdevRandomReadBenchmark[1];
            BdevIoChannel ch = desc.ioChannel(group, (c, op, r) -> self[0].onBdevComplete(c, op, r));
            BdevRandomReadBenchmark b = new BdevRandomReadBenchmark(ch, dev.blockCount(), blockSize);
            self[0] = b;
            System.out.printf("shim: %s, %s, fixed buffers %s, %d-byte random reads at QD%d for %d s%n", file,
                dev.isDirect() ? "O_DIRECT" : "buffered", group.fixedBuffers(), blockSize, depth, seconds);
            for (int slot = 0; slot < depth; slot++) {
                b.submit(slot);
            }
            long warmEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < warmEnd) {
                group.poll();
            }
            long startCount = b.completed;
            long start = System.nanoTime();
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            long now;
            while ((now = System.nanoTime()) < end) {
                if (group.poll() == 0) {
                    group.await(TimeUnit.MICROSECONDS.toNanos(100));
                }
            }
            double iops = (b.completed - startCount) / ((now - start) / 1e9);
            System.out.printf("shim IOPS: %.0f (errors %d)%n", iops, b.errors);
            while (group.inFlight() > 0) {
                group.await(TimeUnit.MILLISECONDS.toNanos(10));
                b.draining = true;
                group.poll();
            }
            ch.close();
        }
    }

    private boolean draining;

    private void submit(int slot) {
        long block = random.nextLong(blocks);
        channel.readRegion(block * blockSize, (long) slot * blockSize, blockSize, slot);
    }

    @Override
    public void onBdevComplete(Object context, int op, int result) {
        completed++;
        if (result != 0) {
            errors++;
        }
        if (!draining) {
            submit((Integer) context);
        }
    }
}
