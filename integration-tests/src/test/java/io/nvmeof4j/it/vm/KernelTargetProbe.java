package io.nvmeof4j.it.vm;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.ControllerInfo;
import io.nvmeof4j.initiator.DiscoveryEntry;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.IoCallback;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Test-support main (not a test itself): our initiator library against an NVMe/TCP or NVMe-oF/RDMA target, printing
 * {@code PASS name} / {@code FAIL name: reason} lines and {@code SUMMARY: N passed, M failed} like the guest scripts
 * of {@code integration-tests/vm/guest}. Run inside the QEMU guest by
 * {@code integration-tests/vm/guest/initiator-vs-kernel-target.sh} against the Linux kernel target (nvmet-tcp) on
 * 127.0.0.1; {@link InitiatorVsKernelTargetIT} asserts on its lines.
 *
 * <pre>java -cp TEST_CLASSPATH io.nvmeof4j.it.vm.KernelTargetProbe ADDR PORT SUBNQN NS_BYTES [SEED] [PERF_SECONDS] [TRTYPE]</pre>
 *
 * Checks: discovery (the kernel target answers discovery on the I/O port and lists the subsystem there); then, for
 * 1 and for 4 I/O queues: connect (queue count granted, Identify values, namespace 1 size and 4 KiB blocks),
 * write-then-verify of random data at 4 KiB, 128 KiB and 1 MiB at several offsets (first blocks, a random offset,
 * the last blocks), a FUA write, deallocate then read zeros, flush, and close. With 4 queues the writes also come from
 * several threads at once (spread over the queues), and the data written through the 1-queue controller is read back.
 * Last, a short random-read load through the callback API at QD 16 on its own controller ({@code perf-lib}).
 */
public final class KernelTargetProbe {
    private static final long TIMEOUT_S = 60;
    private static final int[] SIZES = {4 << 10, 128 << 10, 1 << 20};

    private int passed;
    private int failed;
    private final List<String> failedNames = new ArrayList<>();

    private final String addr;
    private final int port;
    private final String subnqn;
    private final long nsBytes;
    private final long seed;
    private final int perfSeconds;
    private final TransportType trtype;

    private KernelTargetProbe(String[] args) {
        addr = args[0];
        port = Integer.parseInt(args[1]);
        subnqn = args[2];
        nsBytes = Long.parseLong(args[3]);
        seed = args.length > 4 ? Long.parseLong(args[4]) : System.nanoTime();
        perfSeconds = args.length > 5 ? Integer.parseInt(args[5]) : 3;
        trtype = args.length > 6 ? TransportType.fromConfigName(args[6]) : TransportType.TCP;
    }

    public static void main(String[] args) {
        if (args.length < 4) {
            System.err.println("usage: KernelTargetProbe ADDR PORT SUBNQN NS_BYTES [SEED] [PERF_SECONDS] [TRTYPE]");
            System.exit(2);
        }
        KernelTargetProbe probe = new KernelTargetProbe(args);
        int rc;
        try {
            rc = probe.run();
        } catch (Throwable t) {
            probe.fail("probe", "unexpected " + describe(t));
            t.printStackTrace(System.out);
            rc = 1;
        }
        System.out.flush();
        // The host's daemon threads (reactors, timer) must not keep the JVM: exit explicitly.
        System.exit(rc);
    }

    private int run() throws Exception {
        info("seed " + seed + ", target " + addr + ":" + port + " " + subnqn + ", namespace " + nsBytes + " bytes");
        TransportAddress address = trtype == TransportType.TCP ? TransportAddress.tcp(addr, port)
            : new TransportAddress(trtype, AddressFamily.IPV4, addr, Integer.toString(port));
        try (NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1)) {
            info("host " + host.identity());
            discover(host, address);
            ByteBuffer shared = randomBuffer(new SplittableRandom(seed ^ 0x5eed), 256 << 10);
            long sharedLba = (nsBytes / 2) / 4096;   // written through 1 queue, read through 4
            for (int queues : new int[] {1, 4}) {
                variant(host, address, queues, shared, sharedLba);
            }
            perfLib(host, address);
        }
        System.out.println("SUMMARY: " + passed + " passed, " + failed + " failed");
        if (failed > 0) {
            System.out.println("FAILED CHECKS: " + String.join(" ", failedNames));
        }
        return failed == 0 ? 0 : 1;
    }

    // ---- checks ---------------------------------------------------------------------------------------------------

    private void discover(NvmeofHost host, TransportAddress address) {
        try {
            long t0 = System.nanoTime();
            List<DiscoveryEntry> entries = host.discover(address);
            info("discovery at " + address + ": " + entries.size() + " entries in " + ms(t0) + " ms");
            for (DiscoveryEntry e : entries) {
                info("  entry subtype=" + e.subsystemType() + " trtype=" + e.transportType() + " traddr="
                    + e.transportAddress() + " trsvcid=" + e.transportServiceId() + " subnqn=" + e.subsystemNqn());
            }
            DiscoveryEntry ours = entries.stream().filter(e -> subnqn.equals(e.subsystemNqn())).findFirst().orElse(null);
            if (ours == null) {
                fail("discover", "no entry for " + subnqn + " in " + entries);
            } else if (ours.subsystemType() != DiscoveryEntry.SUBTYPE_NVM || ours.transportType() != trtype.code()
                || !Integer.toString(port).equals(ours.transportServiceId())
                || !addr.equals(ours.transportAddress())) {
                fail("discover", "unexpected entry " + ours);
            } else {
                pass("discover");
            }
        } catch (Exception e) {
            fail("discover", describe(e));
        }
    }

    private void variant(NvmeofHost host, TransportAddress address, int queues, ByteBuffer shared, long sharedLba) {
        String v = "q" + queues;
        ConnectOptions options = ConnectOptions.defaults().withIoQueues(queues).withQueueDepth(32)
            .withConnectTimeout(Duration.ofSeconds(30)).withCommandTimeout(Duration.ofSeconds(TIMEOUT_S));
        NvmeofController ctrl;
        long t0 = System.nanoTime();
        try {
            ctrl = host.connect(address, subnqn, options);
        } catch (Exception e) {
            fail("connect-" + v, describe(e));
            return;
        }
        try {
            ControllerInfo id = ctrl.identifyController();
            info("connected " + ctrl.peer() + " in " + ms(t0) + " ms: cntlid " + ctrl.controllerId() + ", "
                + ctrl.ioQueueCount() + " I/O queues x " + ctrl.ioQueueSize() + ", MDTS " + ctrl.maxTransferBytes()
                + " B, in-capsule " + id.inCapsuleDataSize() + " B, model '" + id.modelNumber() + "', serial '"
                + id.serialNumber() + "', version " + id.versionString() + ", ONCS 0x"
                + Integer.toHexString(id.optionalNvmCommands()) + ", VWC " + id.volatileWriteCache());
            if (ctrl.ioQueueCount() != queues) {
                fail("connect-" + v, "asked for " + queues + " I/O queues, got " + ctrl.ioQueueCount());
            } else if (!subnqn.equals(id.subsystemNqn())) {
                fail("connect-" + v, "Identify SUBNQN '" + id.subsystemNqn() + "'");
            } else {
                pass("connect-" + v);
            }
            NvmeofNamespace ns = ctrl.namespace(1);
            if (ns == null) {
                fail("namespace-" + v, "no namespace 1 in " + ctrl.namespaces());
                return;
            }
            if (ns.blockSize() != 4096 || ns.sizeBytes() != nsBytes) {
                fail("namespace-" + v, ns + ": expected " + nsBytes + " bytes in 4096-byte blocks");
                return;
            }
            pass("namespace-" + v);

            SplittableRandom rnd = new SplittableRandom(seed + queues);
            for (int size : SIZES) {
                String name = "write-verify-" + v + "-" + label(size);
                try {
                    long blocks = ns.blockCount();
                    int n = size / ns.blockSize();
                    long[] lbas = {0, 1 + rnd.nextLong(blocks / 4 - n), blocks - n};
                    for (long lba : lbas) {
                        writeVerify(ns, lba, randomBuffer(rnd, size), false);
                    }
                    pass(name);
                } catch (Exception e) {
                    fail(name, describe(e));
                }
            }
            try {
                writeVerify(ns, ns.blockCount() / 4 + 7, randomBuffer(rnd, 64 << 10), true);
                pass("write-fua-" + v);
            } catch (Exception e) {
                fail("write-fua-" + v, describe(e));
            }
            if (queues == 1) {
                try {
                    writeVerify(ns, sharedLba, shared.duplicate(), false);
                    pass("write-shared-" + v);
                } catch (Exception e) {
                    fail("write-shared-" + v, describe(e));
                }
            } else {
                try {
                    ByteBuffer back = ns.read(sharedLba, shared.remaining() / ns.blockSize()).get(TIMEOUT_S, TimeUnit.SECONDS);
                    expectEqual(shared.duplicate(), back, sharedLba);
                    pass("read-shared-" + v);
                } catch (Exception e) {
                    fail("read-shared-" + v, describe(e));
                }
                concurrent(ns, v, rnd.nextLong());
            }
            deallocate(ns, v, rnd);
            if (queues == 1 && (id.optionalNvmCommands() & 0x180) == 0x180) {
                compareAndWriteCopyVerify(ns, v, rnd);
            } else if (queues == 1) {
                info("compare-and-write, copy, verify: not offered (ONCS 0x"
                    + Integer.toHexString(id.optionalNvmCommands()) + "; nvmet has none of them)");
            }
            try {
                ns.flush().get(TIMEOUT_S, TimeUnit.SECONDS);
                pass("flush-" + v);
            } catch (Exception e) {
                fail("flush-" + v, describe(e));
            }
        } finally {
            try {
                ctrl.close();
                pass("disconnect-" + v);
            } catch (Exception e) {
                fail("disconnect-" + v, describe(e));
            }
        }
    }

    /**
     * A target that offers Copy and Verify (ONCS bits 8 and 7: ours) also serves fused Compare and Write: the pair
     * replaces a block only when it matches, then Copy and Verify, each with the bytes read back.
     */
    private void compareAndWriteCopyVerify(NvmeofNamespace ns, String v, SplittableRandom rnd) {
        int bs = ns.blockSize();
        long lba = ns.blockCount() / 2 + 64;
        ByteBuffer a = randomBuffer(rnd, bs);
        ByteBuffer b = randomBuffer(rnd, bs);
        String name = "compare-and-write-" + v;
        try {
            writeVerify(ns, lba, a.duplicate(), false);
            if (!ns.compareAndWrite(lba, a.duplicate(), b.duplicate()).get(TIMEOUT_S, TimeUnit.SECONDS)) {
                fail(name, "miscompare on the block just written");
            } else if (ns.compareAndWrite(lba, a.duplicate(), randomBuffer(rnd, bs))
                .get(TIMEOUT_S, TimeUnit.SECONDS)) {
                fail(name, "the pair wrote although the block no longer matched");
            } else {
                expectEqual(b.duplicate(), ns.read(lba, 1).get(TIMEOUT_S, TimeUnit.SECONDS), lba);
                pass(name);
            }
        } catch (Exception | AssertionError e) {
            fail(name, describe(e));
        }
        name = "copy-" + v;
        try {
            ns.copy(lba + 8, new long[] {lba}, new int[] {1}, false).get(TIMEOUT_S, TimeUnit.SECONDS);
            expectEqual(b.duplicate(), ns.read(lba + 8, 1).get(TIMEOUT_S, TimeUnit.SECONDS), lba + 8);
            pass(name);
        } catch (Exception | AssertionError e) {
            fail(name, describe(e));
        }
        name = "verify-" + v;
        try {
            ns.verify(0, Math.min(ns.blockCount(), 1024)).get(TIMEOUT_S, TimeUnit.SECONDS);
            pass(name);
        } catch (Exception e) {
            fail(name, describe(e));
        }
    }

    /** 8 threads at once (the thread id picks the queue), each writing and verifying its own 1 MiB in 128 KiB I/Os. */
    private void concurrent(NvmeofNamespace ns, String v, long threadSeed) {
        String name = "write-verify-threads-" + v;
        int threads = 8;
        long base = ns.blockCount() / 4 * 3 - threads * 256L;
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long lba0 = base + t * 256L;
            long s = threadSeed + t;
            all.add(CompletableFuture.runAsync(() -> {
                try {
                    SplittableRandom r = new SplittableRandom(s);
                    List<CompletableFuture<Void>> writes = new ArrayList<>();
                    List<ByteBuffer> data = new ArrayList<>();
                    for (int i = 0; i < 8; i++) {
                        ByteBuffer b = randomBuffer(r, 128 << 10);
                        data.add(b);
                        writes.add(ns.write(lba0 + i * 32L, b.duplicate()));
                    }
                    CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(TIMEOUT_S, TimeUnit.SECONDS);
                    ByteBuffer back = ns.read(lba0, 256).get(TIMEOUT_S, TimeUnit.SECONDS);
                    for (int i = 0; i < 8; i++) {
                        expectEqual(data.get(i), back.slice(i * (128 << 10), 128 << 10), lba0 + i * 32L);
                    }
                } catch (Exception e) {
                    throw new RuntimeException(describe(e), e);
                }
            }, runnable -> new Thread(runnable, "probe-writer").start()));
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(TIMEOUT_S * 2, TimeUnit.SECONDS);
            pass(name);
        } catch (Exception e) {
            fail(name, describe(e));
        }
    }

    /** Random data on 1 MiB, Dataset Management (deallocate) of it, and it must read back as zeros. */
    private void deallocate(NvmeofNamespace ns, String v, SplittableRandom rnd) {
        String name = "deallocate-zeroes-" + v;
        try {
            int blocks = (1 << 20) / ns.blockSize();
            long lba = ns.blockCount() / 2 + 1024 + (v.equals("q1") ? 0 : 2048);
            writeVerify(ns, lba, randomBuffer(rnd, 1 << 20), false);
            ns.deallocate(lba, blocks).get(TIMEOUT_S, TimeUnit.SECONDS);
            ByteBuffer back = ns.read(lba, blocks).get(TIMEOUT_S, TimeUnit.SECONDS);
            ByteBuffer zeros = ByteBuffer.allocate(1 << 20);
            int at = back.mismatch(zeros);
            if (at >= 0) {
                fail(name, "byte " + at + " after deallocate is " + back.get(at) + ", not 0");
            } else {
                pass(name);
            }
        } catch (Exception e) {
            fail(name, describe(e));
        }
    }

    /**
     * Random 4 KiB reads at queue depth 16 through the callback API for a few seconds, on a fresh 1-queue
     * controller: a load check (non-zero IOPS, no errors), not a measurement.
     */
    private void perfLib(NvmeofHost host, TransportAddress address) {
        String name = "perf-lib-4k-randread-qd16";
        int depth = 16;
        try (NvmeofController ctrl = host.connect(address, subnqn, ConnectOptions.defaults().withIoQueues(1)
            .withQueueDepth(32).withCommandTimeout(Duration.ofSeconds(TIMEOUT_S)))) {
            NvmeofNamespace ns = ctrl.namespace(1);
            long blocks = ns.blockCount();
            AtomicLong done = new AtomicLong();
            AtomicInteger errors = new AtomicInteger();
            AtomicInteger lastError = new AtomicInteger();
            CountDownLatch drained = new CountDownLatch(depth);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(perfSeconds);
            ByteBuffer[] buffers = new ByteBuffer[depth];
            SplittableRandom rnd = new SplittableRandom(seed);
            IoCallback[] callback = new IoCallback[1];
            callback[0] = (status, context) -> {
                int slot = (Integer) context;
                if (status != 0) {
                    errors.incrementAndGet();
                    lastError.set(status);
                } else {
                    done.incrementAndGet();
                }
                if (status == 0 && System.nanoTime() - deadline < 0) {
                    buffers[slot].clear();
                    long lba;
                    synchronized (rnd) {
                        lba = rnd.nextLong(blocks);
                    }
                    if (ns.submitRead(lba, 1, buffers[slot], callback[0], context)) {
                        return;
                    }
                    errors.incrementAndGet();
                }
                drained.countDown();
            };
            long t0 = System.nanoTime();
            for (int i = 0; i < depth; i++) {
                buffers[i] = ByteBuffer.allocateDirect(4096);
                if (!ns.submitRead(rnd.nextLong(blocks), 1, buffers[i], callback[0], i)) {
                    errors.incrementAndGet();
                    drained.countDown();
                }
            }
            if (!drained.await(perfSeconds + TIMEOUT_S, TimeUnit.SECONDS)) {
                fail(name, "I/O did not drain within " + (perfSeconds + TIMEOUT_S) + " s; completed " + done.get());
                return;
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            long iops = Math.round(done.get() / seconds);
            info("perf-lib: " + done.get() + " reads in " + String.format("%.2f", seconds) + " s = " + iops
                + " IOPS, " + errors.get() + " errors");
            if (errors.get() > 0) {
                fail(name, errors.get() + " errors, last status 0x" + Integer.toHexString(lastError.get()));
            } else if (done.get() == 0) {
                fail(name, "no read completed");
            } else {
                pass(name);
            }
        } catch (Exception e) {
            fail(name, describe(e));
        }
    }

    // ---- helpers --------------------------------------------------------------------------------------------------

    private static void writeVerify(NvmeofNamespace ns, long lba, ByteBuffer data, boolean fua) throws Exception {
        ns.write(lba, data.duplicate(), fua).get(TIMEOUT_S, TimeUnit.SECONDS);
        ByteBuffer back = ns.read(lba, data.remaining() / ns.blockSize()).get(TIMEOUT_S, TimeUnit.SECONDS);
        expectEqual(data, back, lba);
    }

    private static void expectEqual(ByteBuffer expected, ByteBuffer actual, long lba) {
        ByteBuffer e = expected.duplicate();
        ByteBuffer a = actual.duplicate();
        if (e.remaining() != a.remaining()) {
            throw new IllegalStateException("read " + a.remaining() + " bytes at LBA " + lba + ", wrote " + e.remaining());
        }
        int at = e.mismatch(a);
        if (at >= 0) {
            throw new IllegalStateException("data read back at LBA " + lba + " differs at byte " + at + " (block +"
                + at / 4096 + "): wrote " + e.get(e.position() + at) + ", read " + a.get(a.position() + at));
        }
    }

    private static ByteBuffer randomBuffer(SplittableRandom rnd, int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i += 8) {
            long x = rnd.nextLong();
            for (int j = 0; j < 8; j++) {
                b[i + j] = (byte) (x >>> (j * 8));
            }
        }
        ByteBuffer d = ByteBuffer.allocateDirect(size);
        d.put(b).flip();
        return d;
    }

    private static String label(int size) {
        return size >= 1 << 20 ? (size >> 20) + "m" : (size >> 10) + "k";
    }

    private static long ms(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }

    private static String describe(Throwable t) {
        Throwable c = t;
        while ((c instanceof java.util.concurrent.ExecutionException || c instanceof java.util.concurrent.CompletionException
            || (c instanceof RuntimeException && c.getCause() != null && c.getClass() == RuntimeException.class))
            && c.getCause() != null) {
            c = c.getCause();
        }
        String s = c.getClass().getSimpleName() + ": " + c.getMessage();
        return s.replace('\n', ' ');
    }

    private void pass(String name) {
        passed++;
        System.out.println("PASS " + name);
    }

    private void fail(String name, String reason) {
        failed++;
        failedNames.add(name);
        System.out.println("FAIL " + name + ": " + reason);
    }

    private static void info(String s) {
        System.out.println("INFO " + s);
    }
}
