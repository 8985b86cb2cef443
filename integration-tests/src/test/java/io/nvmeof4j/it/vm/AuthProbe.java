package io.nvmeof4j.it.vm;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.spi.TransportAddress;

import java.nio.ByteBuffer;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Test-support main (not a test itself): our initiator with DH-HMAC-CHAP against an NVMe/TCP target, printing
 * {@code PASS name} / {@code FAIL name: reason} like the guest scripts. Run in the 6.12 guest by
 * {@code integration-tests/vm/guest/auth-linux612.sh} against nvmet with per-host dhchap_key; see
 * {@link LinuxKernel612IT}.
 *
 * <pre>java -cp TEST_CLASSPATH io.nvmeof4j.it.vm.AuthProbe ADDR PORT SUBNQN CASE...</pre>
 * CASE is {@code name|hostnqn|hostid|secret|ctrlsecret|hash|dhgroup} (ctrlsecret "-" for none); with hash
 * {@code refuse} the connect must fail. Otherwise: connect with 2 I/O queues (each authenticates), write random data
 * at three offsets from two threads, read it back and compare, close.
 */
public final class AuthProbe {
    private AuthProbe() {
    }

    public static void main(String[] args) throws Exception {
        TransportAddress address = TransportAddress.tcp(args[0], Integer.parseInt(args[1]));
        String subnqn = args[2];
        int failed = 0;
        for (int i = 3; i < args.length; i++) {
            String[] f = args[i].split("\\|", -1);
            String name = f[0];
            boolean refuse = "refuse".equals(f[5]);
            ConnectOptions o = ConnectOptions.defaults().withIoQueues(2).withConnectTimeout(java.time.Duration.ofSeconds(30))
                .withDhchap(f[3], "-".equals(f[4]) ? null : f[4]);
            long t0 = System.nanoTime();
            try (NvmeofHost host = NvmeofHost.create(HostIdentity.of(f[1], UUID.fromString(f[2])), 2)) {
                try (NvmeofController ctrl = host.connect(address, subnqn, o)) {
                    if (refuse) {
                        System.out.println("FAIL initiator-" + name + ": connected although the key is wrong");
                        failed++;
                        continue;
                    }
                    System.out.println("PASS initiator-connect-" + name + " (" + f[5] + ", " + f[6] + ", "
                        + ("-".equals(f[4]) ? "unidirectional" : "bidirectional") + ", "
                        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms)");
                    verifiedIo(ctrl, name.hashCode());
                    System.out.println("PASS initiator-io-" + name);
                } catch (java.io.IOException e) {
                    if (refuse) {
                        System.out.println("PASS initiator-" + name + " refused: " + e.getMessage());
                    } else {
                        System.out.println("FAIL initiator-" + name + ": " + e);
                        failed++;
                    }
                }
            } catch (Exception | AssertionError e) {
                System.out.println("FAIL initiator-" + name + ": " + e);
                e.printStackTrace(System.out);
                failed++;
            }
        }
        System.out.println("INFO auth probe: " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    private static void verifiedIo(NvmeofController ctrl, long seed) throws Exception {
        NvmeofNamespace ns = ctrl.namespace(1);
        int bytes = 64 << 10;
        int blocks = bytes / ns.blockSize();
        long[] lbas = {0, ns.blockCount() / 2, ns.blockCount() - blocks};
        Thread[] threads = new Thread[2];
        Exception[] error = new Exception[1];
        for (int t = 0; t < threads.length; t++) {
            int which = t;
            threads[t] = new Thread(() -> {
                try {
                    Random r = new Random(seed + which);
                    for (long lba : lbas) {
                        ByteBuffer out = ByteBuffer.allocateDirect(bytes);
                        byte[] pattern = new byte[bytes];
                        r.nextBytes(pattern);
                        out.put(pattern).flip();
                        long at = which == 0 ? lba : Math.max(0, lba - blocks);
                        if (which == 1 && at == lba) {
                            continue;
                        }
                        synchronized (AuthProbe.class) {
                            ns.write(at, out).get(60, TimeUnit.SECONDS);
                            ByteBuffer in = ns.read(at, blocks).get(60, TimeUnit.SECONDS);
                            byte[] back = new byte[bytes];
                            in.get(back);
                            if (!java.util.Arrays.equals(back, pattern)) {
                                throw new IllegalStateException("data read back at LBA " + at + " differs");
                            }
                        }
                    }
                } catch (Exception e) {
                    error[0] = e;
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join(120_000);
        }
        if (error[0] != null) {
            throw error[0];
        }
    }
}
