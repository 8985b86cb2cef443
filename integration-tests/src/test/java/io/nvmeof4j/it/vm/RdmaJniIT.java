package io.nvmeof4j.it.vm;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.File;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The RDMA JNI layer against a real RDMA device: boots the QEMU guest once, brings up Soft-RoCE {@code rxe0}
 * there and runs {@code io.nvmeof4j.jni.rdma.RdmaDeviceChecks} (native's test jar: device attributes, memory
 * registration, send/receive, RDMA READ and WRITE, chained WRITE + SEND, batch posting with the failing index,
 * completion-channel waits, CM reject with private data, connect to nothing and unroutable addresses within their
 * timeouts, disconnect flushing receives, closing everything twice) with the JUnit Platform console launcher
 * inside the guest ({@code integration-tests/vm/guest/rdma-jni.sh}). The library is loaded from the native jar.
 * In the same boot and launcher run: {@link RdmaSoftRoceConformance}, the transport conformance suite over our
 * NVMe-oF/RDMA host and controller transports on {@code rxe0} (docs/testing.md), and
 * {@code io.nvmeof4j.conformance.RdmaTwoDeviceChecks}: one poll group serving {@code rxe0} and a second device,
 * {@code rxe1} on a dummy netdev, waited on together; and {@code io.nvmeof4j.conformance.OneWaitReactorChecks}: a
 * target reactor with an NVMe/TCP and an NVMe-oF/RDMA poll group waits on the TCP selector alone (issue 17 item 3).
 *
 * <p>Asserts on the launcher's XML report: as many tests as the classes have {@code @Test} methods, none failed,
 * errored or skipped. Set {@code NVMEOF4J_SKIP_VM_TESTS=1} to skip; logs stay in
 * {@code integration-tests/target/vm-rdma-jni-it-<time>/}.
 */
class RdmaJniIT {
    private static final List<String> CHECKS = List.of("io.nvmeof4j.jni.rdma.RdmaDeviceChecks",
        RdmaSoftRoceConformance.class.getName(), "io.nvmeof4j.conformance.RdmaTwoDeviceChecks",
        "io.nvmeof4j.conformance.OneWaitReactorChecks");
    private static final Duration GUEST_TIMEOUT = Duration.ofSeconds(Long.getLong("nvmeof4j.it.guestSeconds", 480));
    /** The launcher's own bound inside the guest (rdma-jni.sh's CHECKS_TIMEOUT), below the guest's. */
    private static final long CHECKS_TIMEOUT_SECONDS = GUEST_TIMEOUT.toSeconds() - 90;

    private static Path vm;

    @BeforeAll
    static void prepareGuest() throws Exception {
        vm = VmHarness.prepareGuest().resolve("integration-tests/vm");
    }

    @Test
    void rdmaJniChecksShouldPassOnSoftRoce() throws Exception {
        Path work = VmHarness.workDir("vm-rdma-jni-it-");
        Path results = work.resolve("results");

        List<String> classpath = VmHarness.testClasspathEntries();
        String console = classpath.stream().filter(e -> e.contains("junit-platform-console-standalone")).findFirst()
            .orElseThrow(() -> new AssertionError("junit-platform-console-standalone not on " + classpath));
        // The checks' own classpath: the native jar (the .so inside) and its test jar, plus AssertJ; for the
        // conformance suite the protocol, rdma-transport and transport-conformance jars, SLF4J's API (no binding:
        // silent) and this module's test classes. JUnit comes from the standalone launcher.
        List<String> checksCp = classpath.stream().filter(e -> {
            String name = Path.of(e).getFileName().toString();
            return e.contains("/native/target/") || name.startsWith("native-") || name.startsWith("assertj-core")
                || e.contains("/nvmeof-protocol/target/") || name.startsWith("nvmeof-protocol-")
                || e.contains("/rdma-transport/target/") || name.startsWith("rdma-transport-")
                || e.contains("/transport-conformance/target/") || name.startsWith("transport-conformance-")
                || name.startsWith("slf4j-api") || e.endsWith("/integration-tests/target/test-classes")
                // OneWaitReactorChecks: the target's Reactor (Agrona's task queue) and the NVMe/TCP poll group
                || e.contains("/target-daemon/target/") || name.startsWith("target-daemon-")
                || e.contains("/tcp-transport/target/") || name.startsWith("tcp-transport-")
                || name.startsWith("agrona-");
        }).toList();
        assertThat(checksCp).as("native jar, native test jar, assertj, protocol, rdma-transport, conformance suite, "
            + "slf4j-api, this module's test classes, target-daemon, tcp-transport and agrona in %s", classpath)
            .hasSizeGreaterThanOrEqualTo(11);
        int expectedTests = 0;
        for (String checks : CHECKS) {
            int n = testMethods(checks);
            assertThat(n).as("@Test methods of %s", checks).isPositive();
            expectedTests += n;
        }

        List<String> cmd = new ArrayList<>(List.of(vm.resolve("run-guest.sh").toString(),
            "--timeout", Long.toString(GUEST_TIMEOUT.toSeconds()), "--results", results.toString(),
            "--env", "CONSOLE_JAR=" + console,
            "--env", "CHECKS_CP=" + String.join(File.pathSeparator, checksCp),
            "--env", "JAVA_BIN=" + Path.of(System.getProperty("java.home"), "bin", "java"),
            "--env", "CHECK_CLASSES=" + String.join(" ", CHECKS),
            "--env", "CHECKS_TIMEOUT=" + CHECKS_TIMEOUT_SECONDS,
            // e.g. "-XX:TieredStopAtLevel=1 -Dnvmeof4j.rdma.wake_selector=false" for a before/after comparison
            "--env", "GUEST_JAVA_OPTS=" + System.getProperty("nvmeof4j.it.guestJavaOpts", "-XX:TieredStopAtLevel=1"),
            vm.resolve("guest/rdma-jni.sh").toString()));
        long t0 = System.nanoTime();
        VmHarness.Result guest = VmHarness.runGuest("RdmaJniIT", cmd, GUEST_TIMEOUT.plusSeconds(60),
            work.resolve("guest.log"));
        System.out.printf("[guest] finished in %d s%n", (System.nanoTime() - t0) / 1_000_000_000L);

        assertThat(guest.timedOut()).as("run-guest.sh hung past its own timeout").isFalse();
        // (the first console line may carry terminal escapes before the text)
        assertThat(guest.lines()).as("guest output, tail:\n%s", guest.tail(60)).anyMatch(l -> l.endsWith("PASS rxe-up"));
        assertThat(guest.lines()).as("second device; guest output, tail:\n%s", guest.tail(60))
            .anyMatch(l -> l.endsWith("PASS rxe1-up"));

        Path report = findReport(results.resolve("junit"));
        Element suite = suiteOf(report);
        int tests = Integer.parseInt(suite.getAttribute("tests"));
        int failures = Integer.parseInt(suite.getAttribute("failures"));
        int errors = Integer.parseInt(suite.getAttribute("errors"));
        int skipped = Integer.parseInt(suite.getAttribute("skipped"));
        assertThat(failures + errors).as("failed checks in %s; guest tail:\n%s", report, guest.tail(120)).isZero();
        assertThat(skipped).as("skipped checks in %s", report).isZero();
        assertThat(tests).as("tests run from %s (the class has %d)", report, expectedTests).isEqualTo(expectedTests);
        assertThat(guest.lines()).anyMatch(l -> l.endsWith("PASS rdma-jni-checks"));
        assertThat(guest.exitCode()).as("guest script exit code; tail:\n%s", guest.tail(40)).isZero();
    }

    private static Path findReport(Path dir) throws Exception {
        assertThat(dir).as("JUnit report folder written in the guest").isDirectory();
        try (Stream<Path> files = Files.list(dir)) {
            // one report per engine; the checks are Jupiter tests
            return files.filter(p -> p.getFileName().toString().equals("TEST-junit-jupiter.xml"))
                .findFirst().orElseThrow(() -> new AssertionError("no TEST-junit-jupiter.xml in " + dir));
        }
    }

    private static Element suiteOf(Path report) throws Exception {
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(report.toFile());
        NodeList suites = doc.getElementsByTagName("testsuite");
        assertThat(suites.getLength()).as("testsuite elements in %s", report).isPositive();
        return (Element) suites.item(0);
    }

    /** The @Test methods of a checks class and its superclasses (the conformance suite's are inherited). */
    private static int testMethods(String className) throws Exception {
        int n = 0;
        for (Class<?> c = Class.forName(className, false, RdmaJniIT.class.getClassLoader()); c != null;
             c = c.getSuperclass()) {
            n += (int) Arrays.stream(c.getDeclaredMethods()).filter(RdmaJniIT::isTest).count();
        }
        return n;
    }

    private static boolean isTest(Method m) {
        return m.isAnnotationPresent(Test.class);
    }
}
