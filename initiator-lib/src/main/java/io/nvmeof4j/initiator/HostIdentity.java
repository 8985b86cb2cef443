package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.Nqn;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Objects;
import java.util.UUID;

/**
 * Who this host is: a host NQN and a 128-bit host id, paired 1:1 as the Linux host pairs them (wire reference 7).
 * Targets authorize hosts by NQN, so an application should present the same identity every time: like nvme-cli's
 * {@code /etc/nvme/hostnqn} and {@code /etc/nvme/hostid}, {@link #loadOrCreate(Path)} keeps it in two one-line
 * files ({@code hostnqn}, {@code hostid}), generating them once (UUID-form NQN with the host id's UUID).
 */
public record HostIdentity(Nqn hostNqn, HostId hostId) {
    /** System property naming the directory of the default identity files. */
    public static final String CONFIG_DIR_PROP_NAME = "nvmeof4j.config.dir";
    public static final String HOSTNQN_FILE = "hostnqn";
    public static final String HOSTID_FILE = "hostid";

    public HostIdentity {
        Objects.requireNonNull(hostNqn, "hostNqn");
        Objects.requireNonNull(hostId, "hostId");
    }

    /** A given identity, for example one that a target's {@code allowed_hosts} lists. */
    public static HostIdentity of(String hostNqn, UUID hostId) {
        return new HostIdentity(Nqn.of(hostNqn), new HostId(hostId));
    }

    /** A fresh identity, not persisted: {@code nqn.2014-08.org.nvmexpress:uuid:<u>} with host id {@code <u>}. */
    public static HostIdentity generate() {
        UUID uuid = UUID.randomUUID();
        return new HostIdentity(Nqn.ofUuid(uuid), new HostId(uuid));
    }

    /**
     * The identity kept in {@code dir}, created there on first use. Safe against several processes creating it at
     * once: files are written to a temporary name and moved in place, and a loser re-reads the winner's files.
     *
     * @throws UncheckedIOException when the files cannot be read or written, or hold an invalid NQN or UUID
     */
    public static HostIdentity loadOrCreate(Path dir) {
        Path nqnFile = dir.resolve(HOSTNQN_FILE);
        Path idFile = dir.resolve(HOSTID_FILE);
        try {
            if (!Files.exists(nqnFile) || !Files.exists(idFile)) {
                Files.createDirectories(dir);
                // The NQN is derived from whichever host id won a creation race, so the pair always matches.
                writeOnce(idFile, UUID.randomUUID().toString());
                UUID id = UUID.fromString(Files.readString(idFile, StandardCharsets.UTF_8).trim());
                writeOnce(nqnFile, Nqn.ofUuid(id).value());
            }
            String nqn = Files.readString(nqnFile, StandardCharsets.UTF_8).trim();
            String id = Files.readString(idFile, StandardCharsets.UTF_8).trim();
            try {
                return of(nqn, UUID.fromString(id));
            } catch (IllegalArgumentException e) {
                throw new IOException("host identity in " + dir + " is invalid: " + e.getMessage(), e);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot load or create the host identity in " + dir, e);
        }
    }

    /**
     * The identity in the default directory: {@value #CONFIG_DIR_PROP_NAME} if set, else
     * {@code $XDG_CONFIG_HOME/nvmeof4j}, else {@code ~/.config/nvmeof4j}.
     */
    public static HostIdentity defaultIdentity() {
        return loadOrCreate(defaultDirectory());
    }

    public static Path defaultDirectory() {
        String configured = System.getProperty(CONFIG_DIR_PROP_NAME);
        if (configured != null && !configured.isBlank()) {
            return Paths.get(configured);
        }
        String xdg = System.getenv("XDG_CONFIG_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Paths.get(xdg) : Paths.get(System.getProperty("user.home"), ".config");
        return base.resolve("nvmeof4j");
    }

    private static void writeOnce(Path file, String content) throws IOException {
        if (Files.exists(file)) {
            return;
        }
        Path temp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
        try {
            Files.writeString(temp, content + "\n", StandardCharsets.UTF_8);
            try {
                // A hard link never replaces an existing file: if another process won the race, its file stays.
                Files.createLink(file, temp);
            } catch (UnsupportedOperationException e) {
                Files.move(temp, file);
            }
        } catch (FileAlreadyExistsException e) {
            // another process created it first
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    @Override
    public String toString() {
        return hostNqn + " (hostid " + hostId + ")";
    }
}
