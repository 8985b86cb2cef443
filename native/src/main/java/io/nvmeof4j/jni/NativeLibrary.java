package io.nvmeof4j.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Loads one of the nvmeof4j JNI libraries: first from {@code java.library.path} ({@code libnvmeof4j-NAME.so}),
 * then by extracting {@code META-INF/native/libnvmeof4j-NAME-linux-x86_64.so} from the jar (or classes directory)
 * into a private temporary file. A failure is returned, not thrown, so that a feature (RDMA, the io_uring block
 * devices) can report itself unavailable and the rest of the program keeps working.
 */
public final class NativeLibrary {
    private NativeLibrary() {
    }

    /**
     * Loads {@code libnvmeof4j-NAME}; returns {@code null} on success or the reason it could not be loaded.
     * Call once per library (from a holder class's static initialiser).
     */
    public static Throwable load(String name) {
        String libName = "nvmeof4j-" + name;
        try {
            System.loadLibrary(libName);
            return null;
        } catch (UnsatisfiedLinkError notOnLibraryPath) {
            // fall through to the copy in the jar
        }
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            return new UnsupportedOperationException(
                    "lib" + libName + " is built for linux-x86_64 only; this is " + os + "-" + arch);
        }
        String resource = "/META-INF/native/lib" + libName + "-linux-x86_64.so";
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                return new UnsatisfiedLinkError(resource + " is not in the jar and lib" + libName
                        + ".so is not on java.library.path (was the native module built?)");
            }
            Path file = Files.createTempFile("lib" + libName + "-", ".so",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                System.load(file.toAbsolutePath().toString());
            } finally {
                // The mapping stays valid after the file is unlinked; nothing is left in /tmp.
                Files.deleteIfExists(file);
            }
            return null;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return e;
        }
    }
}
