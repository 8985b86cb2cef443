package io.nvmeof4j.tcp.tls;

import org.bouncycastle.tls.AlertDescription;
import org.bouncycastle.tls.AlertLevel;
import org.bouncycastle.tls.TlsFatalAlert;
import org.bouncycastle.tls.crypto.TlsCryptoUtils;
import org.bouncycastle.tls.crypto.TlsSecret;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.GeneralSecurityException;
import java.util.Arrays;

/**
 * The TLS 1.3 record layer of a {@link TlsStream} once its handshake is complete (RFC 8446 5.2-5.4): records
 * protected and unprotected with the application traffic keys (AES-GCM, one reused buffer each way, the socket
 * buffers shared with the stream), alerts, and the post-handshake messages: a peer's KeyUpdate honoured (and answered
 * when it asks, RFC 8446 4.6.3), a NewSessionTicket ignored.
 */
final class TlsRecordLayer {
    /** Plaintext per TLS record: the TLS 1.3 maximum, so bulk data needs the fewest records. */
    static final int RECORD_PLAINTEXT = 16384;
    static final int HEADER = 5;
    static final int TAG = 16;
    /** RFC 8446 5.2: TLSCiphertext.length must not exceed 2^14 + 256. */
    static final int MAX_CIPHERTEXT = RECORD_PLAINTEXT + 256;
    static final int MAX_RECORD = HEADER + MAX_CIPHERTEXT;
    static final short CONTENT_ALERT = 21;
    static final short CONTENT_HANDSHAKE = 22;
    static final short CONTENT_APPLICATION_DATA = 23;
    static final short CONTENT_CHANGE_CIPHER_SPEC = 20;
    static final short HANDSHAKE_NEW_SESSION_TICKET = 4;
    static final short HANDSHAKE_KEY_UPDATE = 24;
    static final byte[] NO_CONTEXT = new byte[0];

    private final SocketChannel channel;
    /** The stream's socket input buffer: bytes not yet decrypted, between {@link #inStart} and position. */
    private final ByteBuffer netIn;
    /** Where the next record starts in {@link #netIn}. */
    private int inStart;
    /** The stream's socket output buffer: encrypted bytes the socket has not taken yet, up to position. */
    private final ByteBuffer netOut;
    /** One decrypted record: its unread plaintext is plainIn[plainInStart, plainInEnd). */
    private final byte[] plainIn = new byte[MAX_CIPHERTEXT];
    private int plainInStart;
    private int plainInEnd;
    /** The plaintext of the record being gathered, plus room for the inner content type. */
    private final byte[] plainOut = new byte[RECORD_PLAINTEXT + 1];
    private RecordKeys readKeys;
    private RecordKeys writeKeys;
    /** Post-handshake handshake messages may span records (RFC 8446 5.1): collected here. */
    private byte[] handshakeMessages = NO_CONTEXT;
    private boolean inputClosed;
    private boolean closeNotifySent;

    /** Takes over {@code netIn} (complete records from position 0 on) and {@code netOut} after the handshake. */
    TlsRecordLayer(SocketChannel channel, ByteBuffer netIn, ByteBuffer netOut, RecordKeys readKeys,
                   RecordKeys writeKeys) {
        this.channel = channel;
        this.netIn = netIn;
        this.netOut = netOut;
        this.readKeys = readKeys;
        this.writeKeys = writeKeys;
    }

    /** The length field of the record header at {@code in[at]} (not checked). */
    static int recordLength(byte[] in, int at) {
        return (in[at + 3] & 0xFF) << 8 | in[at + 4] & 0xFF;
    }

    /** Why a record of {@code length} bytes is refused (record_overflow), or null when 2^14 + 256 allows it. */
    static String overflow(int length) {
        return length > MAX_CIPHERTEXT ? "a TLS record of " + length + " bytes (the limit is " + MAX_CIPHERTEXT + ")"
            : null;
    }

    /** Moves encrypted output in {@code netOut} to the socket; true when nothing is left over. */
    static boolean drain(SocketChannel channel, ByteBuffer netOut) throws IOException {
        if (netOut.position() == 0) {
            return true;
        }
        netOut.flip();
        try {
            channel.write(netOut);
        } finally {
            netOut.compact();
        }
        return netOut.position() == 0;
    }

    /** Whether a whole record or decrypted bytes are buffered (a read would return data without the socket). */
    boolean hasBufferedInput() {
        if (plainInEnd > plainInStart) {
            return true;
        }
        int buffered = netIn.position() - inStart;
        if (buffered < HEADER) {
            return false;
        }
        byte[] in = netIn.array();
        return buffered >= HEADER + recordLength(in, inStart);
    }

    /** Sends close_notify (once) and what is left of the output; the read keys are dropped either way. */
    void close() throws IOException {
        try {
            if (!closeNotifySent) {
                closeNotifySent = true;
                sealControl(CONTENT_ALERT, new byte[] {AlertLevel.warning, AlertDescription.close_notify});
            }
            drainOutput();
        } finally {
            readKeys = null;
        }
    }

    int read(ByteBuffer dst) throws IOException {
        int total = 0;
        for (;;) {
            int buffered = plainInEnd - plainInStart;
            if (buffered > 0) {
                int n = Math.min(buffered, dst.remaining());
                dst.put(plainIn, plainInStart, n);
                plainInStart += n;
                total += n;
                if (!dst.hasRemaining()) {
                    return total;
                }
                continue;
            }
            if (inputClosed) {
                return total > 0 ? total : -1;
            }
            if (openRecord()) {
                continue;
            }
            if (netIn.remaining() < MAX_RECORD) {
                // Make room for a whole record: move the partial one to the front (rare: records are consumed
                // where they lie, and an empty buffer starts over at 0).
                byte[] in = netIn.array();
                int pending = netIn.position() - inStart;
                System.arraycopy(in, inStart, in, 0, pending);
                netIn.position(pending);
                inStart = 0;
            }
            int n = channel.read(netIn);
            if (n < 0) {
                inputClosed = true; // without close_notify: NVMe/TCP sees the end of the stream either way
                continue;
            }
            if (n == 0) {
                return total;
            }
        }
    }

    /**
     * Decrypts the first complete record in {@link #netIn} (RFC 8446 5.2): application data into
     * {@link #plainIn}, alerts and post-handshake messages acted upon.
     *
     * @return false when no complete record is buffered
     */
    private boolean openRecord() throws IOException {
        int at = inStart;
        int buffered = netIn.position() - at;
        if (buffered < HEADER) {
            return false;
        }
        byte[] in = netIn.array();
        int length = recordLength(in, at);
        if (overflow(length) != null) {
            throw fatal(AlertDescription.record_overflow, overflow(length));
        }
        if (buffered < HEADER + length) {
            return false;
        }
        if (in[at] != CONTENT_APPLICATION_DATA) {
            throw fatal(AlertDescription.unexpected_message, "a TLS record of outer type " + (in[at] & 0xFF)
                + " after the handshake");
        }
        if (length < TAG + 1) {
            throw fatal(AlertDescription.decode_error, "a TLS record of " + length + " bytes cannot be protected");
        }
        int plain;
        try {
            plain = readKeys.open(in, at, length, plainIn);
        } catch (GeneralSecurityException e) {
            throw fatal(AlertDescription.bad_record_mac, "a TLS record failed authentication");
        }
        inStart = at + HEADER + length;
        if (inStart == netIn.position()) {
            inStart = 0;
            netIn.clear();
        }
        // TLSInnerPlaintext: content, the content type, then zero padding.
        int type = 0;
        while (plain > 0 && (type = plainIn[--plain]) == 0) {
            // padding
        }
        if (type == 0) {
            throw fatal(AlertDescription.unexpected_message, "a TLS record with no content type");
        }
        switch (type) {
            case CONTENT_APPLICATION_DATA -> {
                plainInStart = 0;
                plainInEnd = plain;
            }
            case CONTENT_ALERT -> onAlert(plain);
            case CONTENT_HANDSHAKE -> onHandshakeMessages(plain);
            default -> throw fatal(AlertDescription.unexpected_message, "a TLS record of inner type " + type
                + " after the handshake");
        }
        return true;
    }

    private void onAlert(int length) throws IOException {
        if (length != 2) {
            throw fatal(AlertDescription.decode_error, "a TLS alert of " + length + " bytes");
        }
        short description = (short) (plainIn[1] & 0xFF);
        if (description == AlertDescription.close_notify) {
            inputClosed = true; // what came before it has been delivered
        } else if (description != AlertDescription.user_canceled) {
            throw new IOException("peer sent TLS alert " + AlertDescription.getText(description));
        }
    }

    private void onHandshakeMessages(int length) throws IOException {
        int have = handshakeMessages.length;
        byte[] all = Arrays.copyOf(handshakeMessages, have + length); // rare: not the data path
        System.arraycopy(plainIn, 0, all, have, length);
        int at = 0;
        while (all.length - at >= 4) {
            int type = all[at] & 0xFF;
            int size = (all[at + 1] & 0xFF) << 16 | (all[at + 2] & 0xFF) << 8 | all[at + 3] & 0xFF;
            if (size > MAX_CIPHERTEXT) {
                throw fatal(AlertDescription.decode_error, "a post-handshake message of " + size + " bytes");
            }
            if (all.length - at < 4 + size) {
                break;
            }
            if (type == HANDSHAKE_KEY_UPDATE) {
                if (size != 1 || (all[at + 4] & 0xFE) != 0) {
                    throw fatal(AlertDescription.decode_error, "a malformed KeyUpdate");
                }
                readKeys = readKeys.next();
                if (all[at + 4] == 1) { // update_requested: answer under the old key, then switch
                    byte[] answer = {(byte) HANDSHAKE_KEY_UPDATE, 0, 0, 1, 0};
                    sealControl(CONTENT_HANDSHAKE, answer);
                    writeKeys = writeKeys.next();
                }
            } else if (type != HANDSHAKE_NEW_SESSION_TICKET) {
                throw fatal(AlertDescription.unexpected_message, "TLS handshake message " + type
                    + " after the handshake");
            }
            at += 4 + size;
        }
        handshakeMessages = Arrays.copyOfRange(all, at, all.length);
    }

    /** Queues an alert (when the keys allow) and returns the exception that ends the connection. */
    private IOException fatal(short description, String why) {
        if (!closeNotifySent) {
            closeNotifySent = true;
            try {
                sealControl(CONTENT_ALERT, new byte[] {AlertLevel.fatal, (byte) description});
                drainOutput();
            } catch (IOException | RuntimeException ignored) {
                // best effort: the connection is being closed anyway
            }
        }
        return new TlsFatalAlert(description, why);
    }

    /** A record of a few bytes that is not application data (alert, KeyUpdate): rare, allocation is fine. */
    private void sealControl(short type, byte[] content) throws IOException {
        if (netOut.remaining() < HEADER + content.length + 1 + TAG) {
            throw new IOException("no room for a TLS " + (type == CONTENT_ALERT ? "alert" : "KeyUpdate"));
        }
        byte[] inner = Arrays.copyOf(content, content.length + 1);
        inner[content.length] = (byte) type;
        seal(inner, inner.length);
    }

    /** Encrypts {@code inner} (content + content type) into one record at the end of {@link #netOut}. */
    private void seal(byte[] inner, int innerLength) throws IOException {
        int at = netOut.position();
        try {
            int n = writeKeys.seal(inner, innerLength, netOut.array(), at);
            netOut.position(at + n);
        } catch (GeneralSecurityException e) {
            throw new IOException("TLS record encryption failed: " + e.getMessage(), e);
        }
    }

    long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        long taken = 0;
        int i = offset;
        int end = offset + length;
        // One record per gathered write, up to 16 KiB: a 24-byte CapsuleResp shares a record with its neighbours
        // rather than paying 22 bytes, an AES-GCM setup and a syscall each.
        while (i < end) {
            if (netOut.remaining() < MAX_RECORD && !drainOutput() && netOut.remaining() < MAX_RECORD) {
                return taken;
            }
            int fill = 0;
            for (; i < end && fill < RECORD_PLAINTEXT; ) {
                ByteBuffer src = srcs[i];
                int n = Math.min(src.remaining(), RECORD_PLAINTEXT - fill);
                src.get(plainOut, fill, n);
                fill += n;
                if (!src.hasRemaining()) {
                    i++;
                }
            }
            if (fill == 0) {
                break;
            }
            plainOut[fill] = CONTENT_APPLICATION_DATA;
            seal(plainOut, fill + 1);
            taken += fill;
        }
        drainOutput();
        return taken;
    }

    /** Moves encrypted output to the socket; true when nothing is left over. */
    private boolean drainOutput() throws IOException {
        return drain(channel, netOut);
    }

    /**
     * One direction's record protection (RFC 8446 5.3): the AEAD key and IV derived from the traffic secret, and
     * the record sequence number that, XORed into the IV, makes each record's nonce.
     */
    static final class RecordKeys {
        private final TlsSecret trafficSecret;
        private final int hash;
        private final int keyLength;
        private final SecretKeySpec key;
        private final byte[] iv;
        private final byte[] nonce = new byte[12];
        private final Cipher cipher;
        private long sequence;

        RecordKeys(TlsSecret trafficSecret, int hash, int keyLength) throws IOException {
            this.trafficSecret = trafficSecret;
            this.hash = hash;
            this.keyLength = keyLength;
            byte[] k = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "key", NO_CONTEXT, keyLength).extract();
            this.key = new SecretKeySpec(k, "AES");
            Arrays.fill(k, (byte) 0);
            this.iv = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "iv", NO_CONTEXT, 12).extract();
            try {
                this.cipher = Cipher.getInstance("AES/GCM/NoPadding");
            } catch (GeneralSecurityException e) {
                throw new IOException("AES-GCM is not available: " + e.getMessage(), e);
            }
        }

        /** RFC 8446 7.2: the next generation after a KeyUpdate, sequence numbers from 0 again. */
        RecordKeys next() throws IOException {
            TlsSecret updated = TlsCryptoUtils.hkdfExpandLabel(trafficSecret, hash, "traffic upd", NO_CONTEXT,
                TlsCryptoUtils.getHashOutputSize(hash));
            trafficSecret.destroy();
            return new RecordKeys(updated, hash, keyLength);
        }

        private GCMParameterSpec nextNonce() throws IOException {
            if (sequence == -1L) {
                throw new IOException("TLS record sequence number exhausted");
            }
            System.arraycopy(iv, 0, nonce, 0, 12);
            long s = sequence++;
            for (int i = 11; i >= 4; i--) {
                nonce[i] ^= (byte) s;
                s >>>= 8;
            }
            return new GCMParameterSpec(TAG * 8, nonce);
        }

        /** Writes header + ciphertext of {@code inner[0, length)} at {@code out[at]}; returns the record size. */
        int seal(byte[] inner, int length, byte[] out, int at) throws IOException, GeneralSecurityException {
            int ciphertext = length + TAG;
            out[at] = CONTENT_APPLICATION_DATA;
            out[at + 1] = 3;
            out[at + 2] = 3;
            out[at + 3] = (byte) (ciphertext >>> 8);
            out[at + 4] = (byte) ciphertext;
            cipher.init(Cipher.ENCRYPT_MODE, key, nextNonce());
            cipher.updateAAD(out, at, HEADER);
            return HEADER + cipher.doFinal(inner, 0, length, out, at + HEADER);
        }

        /** Decrypts the record whose header is at {@code in[at]}; returns the inner plaintext length. */
        int open(byte[] in, int at, int length, byte[] out) throws IOException, GeneralSecurityException {
            cipher.init(Cipher.DECRYPT_MODE, key, nextNonce());
            cipher.updateAAD(in, at, HEADER);
            return cipher.doFinal(in, at + HEADER, length, out, 0);
        }
    }
}
