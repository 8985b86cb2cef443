package io.nvmeof4j.target.control;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Replaces a file's content so that a crash at any moment leaves either the old or the new content, never a mix or
 * nothing: a temporary file in the same directory (same file system, so the rename is atomic) with the old file's
 * permissions (a configuration may hold secrets), written and fsynced, renamed over the file, then the directory
 * fsynced so the rename itself survives a power loss.
 */
public final class AtomicFile {
    private static final Set<PosixFilePermission> NEW_FILE_MODE = PosixFilePermissions.fromString("rw-------");

    private AtomicFile() {
    }

    /** Writes {@code text} (UTF-8) to {@code file} atomically and durably; on failure the file is unchanged. */
    public static void write(Path file, String text) throws IOException {
        Path target = file.toAbsolutePath();
        Path dir = target.getParent();
        Set<PosixFilePermission> mode = Files.exists(target) ? Files.getPosixFilePermissions(target) : NEW_FILE_MODE;
        Path temp = dir.resolve("." + target.getFileName() + ".tmp-"
            + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        boolean moved = false;
        try {
            try (FileChannel ch = FileChannel.open(temp, Set.of(StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(NEW_FILE_MODE))) {
                ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
                while (bytes.hasRemaining()) {
                    ch.write(bytes);
                }
                ch.force(true);
            }
            // Created 0600 (the umask cannot widen it); now the original's mode, before anyone can see it by name.
            Files.setPosixFilePermissions(temp, mode);
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("cannot replace " + target + " atomically: " + e.getMessage(), e);
            }
            moved = true;
            try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                d.force(true);
            }
        } finally {
            if (!moved) {
                Files.deleteIfExists(temp);
            }
        }
    }
}
