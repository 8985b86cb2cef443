package io.nvmeof4j.target.limits;

import io.nvmeof4j.jni.bdev.UringOptions;
import io.nvmeof4j.target.config.DaemonSettings;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Where file and block-device namespaces added live (management API) may lie: under the directories listed in
 * {@code nvmeof4j.allowed_paths}, or exactly one of the block devices listed there. Without a list, none may be added.
 *
 * <h2>The check</h2>
 * The path may hold no NUL byte and no {@code ..} component. It is resolved to its real path (every symlink
 * followed; for a file still to be created, the real path of its directory plus its name), and so is every allowed
 * entry, each time (a directory created after the start counts). Then:
 * <ul>
 *   <li>a regular file must lie below an allowed directory and have exactly one link (a hard link is a second name
 *       that may lie outside); a file still to be created must have its directory at or below an allowed directory.
 *       A {@code size} can then create or extend only such a file;</li>
 *   <li>a block device must be an allowed entry itself (its real path), never allowed through a directory such as
 *       {@code /dev};</li>
 *   <li>anything else (directories, FIFOs, sockets, character devices) and anything on a kernel pseudo file system
 *       ({@code /proc}, {@code /sys}) is refused.</li>
 * </ul>
 *
 * <h2>Between the check and the open</h2>
 * The device is then opened by its real path with {@link UringOptions.Confinement} (openat2 with
 * RESOLVE_NO_SYMLINKS, O_EXCL for a new file, type and link count checked again on the opened descriptor): a symlink
 * swapped into any component after the check makes the open fail instead of leading elsewhere. What remains is a
 * rename race: someone who may write inside an allowed directory can move real directories or files around between
 * the check and the open; the opened file is then still inside the allowed tree's real directories, or one of that
 * person's own making (the kernel's protected_hardlinks stops hard links to files they do not own).
 */
public final class PathConfinement {
    /** File systems whose "regular files" are kernel interfaces, never namespace images. */
    private static final Set<String> PSEUDO_FILE_SYSTEMS = Set.of("proc", "sysfs", "debugfs", "tracefs",
        "securityfs", "configfs", "cgroup", "cgroup2", "bpf", "efivarfs", "pstore");
    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFBLK = 0060000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFIFO = 0010000;
    private static final int S_IFSOCK = 0140000;
    private static final int S_IFLNK = 0120000;

    /** A path that passed: the real path to open, and what it was found to be. */
    public record Checked(Path realPath, UringOptions.Confinement kind) {
    }

    private final List<Path> allowed;

    public PathConfinement(List<Path> allowedPaths) {
        this.allowed = List.copyOf(allowedPaths);
    }

    /**
     * Checks {@code path} (absolute, as the namespace object named it, relative paths already resolved).
     *
     * @param mayCreate a size was given: a missing file would be created
     * @throws NamespaceRefusedException {@link NamespaceRefusedException.Reason#PATH_NOT_ALLOWED}, saying why
     * @throws IOException               a file inside an allowed directory by name that is missing and cannot be
     *                                   created (no size, no directory), or the file system could not be asked
     */
    public Checked check(Path path, boolean mayCreate) throws IOException {
        Objects.requireNonNull(path, "path");
        if (allowed.isEmpty()) {
            throw refused(path + ": file and block-device namespaces cannot be added through the management API "
                + "while nvmeof4j." + DaemonSettings.ALLOWED_PATHS + " lists no directory or device; list the "
                + "directories that hold namespace files there (the configuration file itself may name any file)");
        }
        String text = path.toString();
        if (text.indexOf('\0') >= 0) {
            throw refused("the path contains a NUL byte");
        }
        if (!path.isAbsolute()) {
            throw refused(path + " is not an absolute path");
        }
        for (Path part : path) {
            if (part.toString().equals("..")) {
                throw refused(path + " contains a '..' component");
            }
        }
        if (Files.exists(path)) {
            return checkExisting(path, path.toRealPath());
        }
        if (!lexicallyAllowed(path)) {
            // Said before anything about the file: a refusal must not tell what exists outside.
            throw refused(path + " is not inside " + allowedText());
        }
        if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            // Creating through a dangling symlink would create its target, wherever that is.
            throw refused(path + " is a symbolic link to a missing file");
        }
        // Inside an allowed directory by name: what is missing is the request's mistake, not a policy matter.
        if (!mayCreate) {
            throw new IOException(path + " does not exist, and without device.size it cannot be created");
        }
        Path parent = path.getParent();
        Path fileName = path.getFileName();
        if (parent == null || fileName == null) {
            throw refused(path + " names no file");
        }
        Path realParent;
        try {
            realParent = parent.toRealPath();
        } catch (NoSuchFileException e) {
            throw new IOException("cannot create " + path + ": directory " + parent + " does not exist");
        }
        if (!Files.isDirectory(realParent, LinkOption.NOFOLLOW_LINKS)) {
            throw refused("cannot create " + path + ": " + parent + " is not a directory");
        }
        for (Path dir : realAllowedDirectories()) {
            if (realParent.startsWith(dir)) {
                return new Checked(realParent.resolve(fileName), UringOptions.Confinement.REGULAR_FILE);
            }
        }
        throw refused("cannot create " + path + ": it is not inside " + allowedText()
            + (realParent.equals(parent) ? "" : " (its directory is " + realParent + ")"));
    }

    private Checked checkExisting(Path path, Path real) throws IOException {
        // Where a symlink inside an allowed directory leads is worth saying; where one elsewhere leads is not ours to tell.
        String shown = real.equals(path) || !lexicallyAllowed(path) ? path.toString() : path + " (" + real + ")";
        int type = (Integer) Files.getAttribute(real, "unix:mode", LinkOption.NOFOLLOW_LINKS) & S_IFMT;
        for (Path entry : allowed) {
            if (real.equals(realOrNull(entry)) && type == S_IFBLK) {
                return new Checked(real, UringOptions.Confinement.BLOCK_DEVICE);
            }
        }
        boolean inside = false;
        for (Path dir : realAllowedDirectories()) {
            inside |= real.startsWith(dir) && !real.equals(dir);
        }
        if (!inside) {
            // Said before anything about the file's kind: a refusal must not tell what exists outside.
            throw refused(shown + " is not inside " + allowedText() + " (a block device must be listed there by "
                + "its own name)");
        }
        if (type == S_IFBLK) {
            throw refused(shown + " is a block device; block devices are allowed only when nvmeof4j."
                + DaemonSettings.ALLOWED_PATHS + " lists them by name, never through a directory");
        }
        if (type != S_IFREG) {
            throw refused(shown + " is " + typeName(type) + "; only regular files and block devices can be namespaces");
        }
        String fsType = Files.getFileStore(real).type();
        if (PSEUDO_FILE_SYSTEMS.contains(fsType)) {
            throw refused(shown + " is on the kernel's " + fsType + " file system, not a namespace image");
        }
        int links = (Integer) Files.getAttribute(real, "unix:nlink", LinkOption.NOFOLLOW_LINKS);
        if (links != 1) {
            throw refused(shown + " has " + links + " hard links; another name of it may lie outside "
                + allowedText());
        }
        return new Checked(real, UringOptions.Confinement.REGULAR_FILE);
    }

    /** The allowed entries that are directories, as real paths (entries that do not exist are skipped). */
    private List<Path> realAllowedDirectories() {
        List<Path> dirs = new ArrayList<>();
        for (Path entry : allowed) {
            Path real = realOrNull(entry);
            if (real != null && Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS)) {
                dirs.add(real);
            }
        }
        return dirs;
    }

    private boolean lexicallyAllowed(Path p) {
        for (Path entry : allowed) {
            if (p.startsWith(entry)) {
                return true;
            }
        }
        return false;
    }

    private static Path realOrNull(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            return null;
        }
    }

    private String allowedText() {
        return "nvmeof4j." + DaemonSettings.ALLOWED_PATHS + " " + allowed;
    }

    private static String typeName(int type) {
        return switch (type) {
            case S_IFDIR -> "a directory";
            case S_IFCHR -> "a character device";
            case S_IFIFO -> "a FIFO";
            case S_IFSOCK -> "a socket";
            case S_IFLNK -> "a symbolic link";
            default -> "not a regular file (mode " + Integer.toOctalString(type) + ")";
        };
    }

    private static NamespaceRefusedException refused(String message) {
        return new NamespaceRefusedException(NamespaceRefusedException.Reason.PATH_NOT_ALLOWED, message);
    }
}
