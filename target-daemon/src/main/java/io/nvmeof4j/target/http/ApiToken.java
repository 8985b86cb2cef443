package io.nvmeof4j.target.http;

import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.HttpSecurity;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The bearer token of the management API, read from (or, at the first start, created in) the file named by
 * {@code api_token_file}. Only the SHA-256 digest of the token is kept: {@link #matches} compares digests of equal
 * length with {@link MessageDigest#isEqual}, so the time a comparison takes says nothing about the token.
 */
public final class ApiToken {
    /** 256 random bits, the strength of an AES-256 key; base64url without padding is 43 characters. */
    static final int RANDOM_BYTES = 32;
    /** A token an operator writes must not be guessable either: 32 characters or more. */
    static final int MIN_LENGTH = 32;
    static final int MAX_LENGTH = 1024;
    /** RFC 6750 b64token: what may follow "Bearer " in an Authorization header. */
    private static final Pattern B64TOKEN = Pattern.compile("[A-Za-z0-9._~+/-]+=*");
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final String WHERE = "nvmeof4j." + HttpSecurity.API_TOKEN_FILE;

    private final Path file;
    private final byte[] digest;
    private final String id;
    private final boolean created;

    private ApiToken(Path file, String token, boolean created) {
        this.file = file;
        this.digest = sha256(token);
        this.id = HexFormat.of().formatHex(digest, 0, 4);
        this.created = created;
    }

    /**
     * Reads the token in {@code file}, or creates the file with a new random token when it does not exist.
     *
     * @throws ConfigException naming the file and what is wrong: it cannot be read, it is readable or writable by
     *                         others, or it does not hold one token of 32..1024 b64token characters
     */
    public static ApiToken loadOrCreate(Path file) throws ConfigException {
        Path f = file.toAbsolutePath().normalize();
        try {
            return read(f, false);
        } catch (NoSuchFileException absent) {
            return create(f);
        } catch (AccessDeniedException e) {
            throw new ConfigException(WHERE, "cannot read the API token file " + f + ": permission denied (the "
                + "daemon's user must own it)");
        } catch (IOException e) {
            throw new ConfigException(WHERE, "cannot read the API token file " + f + ": " + e, e);
        }
    }

    private static ApiToken read(Path f, boolean created) throws IOException {
        if (Files.isDirectory(f)) {
            throw new ConfigException(WHERE, "the API token file " + f + " is a directory");
        }
        Set<PosixFilePermission> mode = permissions(f);
        if (mode != null && (mode.contains(PosixFilePermission.OTHERS_READ)
            || mode.contains(PosixFilePermission.OTHERS_WRITE))) {
            // As ssh does with private keys: a token every local user can read authenticates nobody.
            throw new ConfigException(WHERE, "the API token file " + f + " is readable or writable by every user "
                + "(mode " + PosixFilePermissions.toString(mode) + "); chmod 600 it (or 640 for a group that must "
                + "read it)");
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(f)) {
            bytes = in.readNBytes(MAX_LENGTH + 2);
        }
        String text = new String(bytes, StandardCharsets.US_ASCII);
        // One line; a trailing newline (echo, an editor, a Kubernetes secret made from a file) is not part of it.
        String token = text.endsWith("\r\n") ? text.substring(0, text.length() - 2)
            : text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
        if (token.length() < MIN_LENGTH || token.length() > MAX_LENGTH || !B64TOKEN.matcher(token).matches()) {
            throw new ConfigException(WHERE, "the API token file " + f + " does not hold a token: expected one line "
                + "of " + MIN_LENGTH + " to " + MAX_LENGTH + " characters from A-Z a-z 0-9 - . _ ~ + / (then '='), "
                + "found " + bytes.length + " byte(s)" + (bytes.length == 0 ? "" : " that are not that")
                + "; delete it to have a new token made at the next start");
        }
        return new ApiToken(f, token, created);
    }

    private static Set<PosixFilePermission> permissions(Path f) throws IOException {
        try {
            return Files.getPosixFilePermissions(f);
        } catch (UnsupportedOperationException notPosix) {
            return null;
        }
    }

    /**
     * Writes a new token into a temporary file that is created with mode 0600 (the umask can only take bits
     * away), then links it to {@code f}: the token is never readable by others, and a concurrent start sees either
     * no file or the whole token, never a half-written one.
     */
    private static ApiToken create(Path f) throws ConfigException {
        byte[] random = new byte[RANDOM_BYTES];
        new SecureRandom().nextBytes(random);
        String token = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        Path dir = f.getParent();
        Path tmp = null;
        try {
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
            }
            FileAttribute<Set<PosixFilePermission>> ownerOnly = PosixFilePermissions.asFileAttribute(OWNER_ONLY);
            tmp = Files.createTempFile(dir, "." + f.getFileName() + ".", ".tmp", ownerOnly);
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap((token + "\n").getBytes(StandardCharsets.US_ASCII)));
                ch.force(true);
            }
            try {
                Files.createLink(f, tmp);
            } catch (FileAlreadyExistsException raced) {
                // Another start made it first: use that one.
                return read(f, false);
            } catch (UnsupportedOperationException | IOException noHardLinks) {
                // A file system without hard links: a move that does not replace an existing file.
                Files.move(tmp, f);
                tmp = null;
            }
            return read(f, true);
        } catch (UnsupportedOperationException e) {
            throw new ConfigException(WHERE, "cannot create the API token file " + f + " with mode 0600: the file "
                + "system has no POSIX permissions; create the file yourself or name another place", e);
        } catch (ConfigException e) {
            throw e;
        } catch (IOException e) {
            throw new ConfigException(WHERE, "cannot create the API token file " + f + ": " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // a stray 0600 temporary file: harmless, and the start goes on
                }
            }
        }
    }

    /** True when {@code presented} is the token; constant time in the token's content. */
    public boolean matches(String presented) {
        return presented != null && MessageDigest.isEqual(digest, sha256(presented));
    }

    /** The first 8 hex digits of the token's SHA-256: names the token in the audit log without revealing it. */
    public String id() {
        return id;
    }

    public Path file() {
        return file;
    }

    /** True when this start made the file. */
    public boolean created() {
        return created;
    }

    static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is a required JDK algorithm", e);
        }
    }

    @Override
    public String toString() {
        return "ApiToken[" + file + ", id " + id + "]";
    }
}
