package io.nvmeof4j.target.limits;

import io.nvmeof4j.jni.bdev.UringOptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PathConfinementTest {
    @TempDir
    Path root;
    Path allowed;
    Path outside;
    PathConfinement confinement;

    @BeforeEach
    void setUp() throws IOException {
        allowed = Files.createDirectories(root.resolve("allowed"));
        outside = Files.createDirectories(root.resolve("outside"));
        confinement = new PathConfinement(List.of(allowed));
    }

    @Test
    void shouldAllowAFileInsideAnAllowedDirectoryAndOneToCreateThere() throws Exception {
        Path file = Files.write(allowed.resolve("ns.img"), new byte[4096]);
        assertThat(confinement.check(file, false)).isEqualTo(new PathConfinement.Checked(file.toRealPath(),
            UringOptions.Confinement.REGULAR_FILE));
        Path sub = Files.createDirectories(allowed.resolve("a/b"));
        assertThat(confinement.check(sub.resolve("new.img"), true).realPath()).isEqualTo(sub.toRealPath()
            .resolve("new.img"));
        assertThat(Files.exists(sub.resolve("new.img"))).isFalse();
    }

    @Test
    void shouldRefuseEverythingWithoutAllowedPathsNamingTheSetting() throws Exception {
        Path file = Files.write(allowed.resolve("ns.img"), new byte[4096]);
        assertRefused(() -> new PathConfinement(List.of()).check(file, false), "nvmeof4j.allowed_paths lists no");
    }

    @Test
    void shouldRefuseFilesOutsideWhateverTheyAre() throws Exception {
        assertRefused(() -> confinement.check(Path.of("/etc/shadow"), false), "/etc/shadow is not inside");
        assertRefused(() -> confinement.check(Path.of("/etc/shadow"), true), "/etc/shadow is not inside");
        assertRefused(() -> confinement.check(Path.of("/root/.bash_history"), true), "is not inside");
        assertRefused(() -> confinement.check(Path.of("/etc/nvmeof4j-new.img"), true), "is not inside");
        assertRefused(() -> confinement.check(Path.of("/proc/self/environ"), false), "is not inside");
        assertRefused(() -> confinement.check(allowed, false), "is not inside");
    }

    @Test
    void shouldRefuseASymlinkPointingOut() throws Exception {
        Path secret = Files.write(outside.resolve("secret"), "secret".getBytes());
        Path link = Files.createSymbolicLink(allowed.resolve("link.img"), secret);
        assertRefused(() -> confinement.check(link, false), "(" + secret.toRealPath() + ") is not inside");
        Path dirLink = Files.createSymbolicLink(allowed.resolve("dirlink"), outside);
        assertRefused(() -> confinement.check(dirLink.resolve("new.img"), true), "not inside");
        assertRefused(() -> confinement.check(dirLink.resolve("secret"), false), "not inside");
        Path dangling = Files.createSymbolicLink(allowed.resolve("dangling.img"), outside.resolve("missing.img"));
        assertRefused(() -> confinement.check(dangling, true), "symbolic link to a missing file");
        assertThat(Files.exists(outside.resolve("missing.img"))).isFalse();
    }

    @Test
    void shouldAllowASymlinkThatStaysInside() throws Exception {
        Path file = Files.write(allowed.resolve("real.img"), new byte[4096]);
        Path link = Files.createSymbolicLink(allowed.resolve("alias.img"), file);
        assertThat(confinement.check(link, false).realPath()).isEqualTo(file.toRealPath());
    }

    @Test
    void shouldRefuseDotDotComponents() throws Exception {
        Files.write(outside.resolve("secret"), "secret".getBytes());
        assertRefused(() -> confinement.check(Path.of(allowed + "/../outside/secret"), false), "'..' component");
        assertRefused(() -> confinement.check(Path.of(allowed + "/../outside/new.img"), true), "'..' component");
    }

    @Test
    void shouldRefuseFifosDirectoriesAndHardLinks() throws Exception {
        Path fifo = allowed.resolve("fifo");
        Process p = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        assertRefused(() -> confinement.check(fifo, false), "is a FIFO");
        Path dir = Files.createDirectories(allowed.resolve("dir"));
        assertRefused(() -> confinement.check(dir, false), "is a directory");
        Path secret = Files.write(outside.resolve("secret"), "secret".getBytes());
        Path hard = Files.createLink(allowed.resolve("hard.img"), secret);
        assertRefused(() -> confinement.check(hard, false), "has 2 hard links");
    }

    @Test
    void shouldRefuseKernelPseudoFiles() throws Exception {
        PathConfinement proc = new PathConfinement(List.of(Path.of("/proc/self")));
        assertRefused(() -> proc.check(Path.of("/proc/self/status"), false), "on the kernel's proc file system");
    }

    @Test
    void shouldAllowABlockDeviceOnlyByItsOwnName() throws Exception {
        Path device = firstBlockDevice();
        assertRefused(() -> new PathConfinement(List.of(Path.of("/dev"))).check(device, false),
            "block devices are allowed only when nvmeof4j.allowed_paths lists them by name");
        assertThat(new PathConfinement(List.of(device)).check(device, false)).isEqualTo(
            new PathConfinement.Checked(device.toRealPath(), UringOptions.Confinement.BLOCK_DEVICE));
        assertRefused(() -> confinement.check(device, false), "is not inside");
    }

    @Test
    void shouldSayWhatIsMissingInsideAnAllowedDirectory() {
        assertThatThrownBy(() -> confinement.check(allowed.resolve("missing.img"), false))
            .isNotInstanceOf(NamespaceRefusedException.class).isInstanceOf(IOException.class)
            .hasMessageContaining("without device.size it cannot be created");
        assertThatThrownBy(() -> confinement.check(allowed.resolve("no-dir/new.img"), true))
            .isNotInstanceOf(NamespaceRefusedException.class).hasMessageContaining("does not exist");
    }

    private static Path firstBlockDevice() throws IOException {
        try (var list = Files.list(Path.of("/dev"))) {
            return list.filter(p -> {
                try {
                    return ((Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000)
                        == 0060000;
                } catch (IOException e) {
                    return false;
                }
            }).sorted().findFirst().orElseThrow(() -> new IllegalStateException("this machine has no block device "
                + "in /dev to check the block-device rule against"));
        }
    }

    private interface Check {
        void run() throws Exception;
    }

    private static void assertRefused(Check check, String fragment) {
        assertThatThrownBy(check::run).isInstanceOfSatisfying(NamespaceRefusedException.class, e -> {
            assertThat(e.reason()).isEqualTo(NamespaceRefusedException.Reason.PATH_NOT_ALLOWED);
            assertThat(e.getMessage()).contains(fragment);
        });
    }
}
