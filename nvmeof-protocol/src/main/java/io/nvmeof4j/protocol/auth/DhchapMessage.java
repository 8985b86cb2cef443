package io.nvmeof4j.protocol.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over a DH-HMAC-CHAP message, the data of AUTH_Send / AUTH_Receive (NVMe Base 2.0, 8.13.5.4 to 8.13.5.7;
 * nvme.h struct nvmf_auth_dhchap_*_data). Little-endian. All messages share bytes 0-5:
 * <pre>
 *  0         1        2      4       6
 * +---------+--------+------+-------+--------------------------------------------------+
 * |AUTH_TYPE| AUTH_ID| rsvd | T_ID  | message specific                                 |
 * +---------+--------+------+-------+--------------------------------------------------+
 * AUTH_TYPE 00h (common: Negotiate, Failure1, Failure2) or 01h (DH-HMAC-CHAP: Challenge .. Success2).
 *
 * Negotiate (00h/00h, 8 + 64 x NAPD):  6 SC_C, 7 NAPD, 8.. descriptors of 64 bytes:
 *                                      +0 AUTHID (01h), +2 HALEN, +3 DHLEN, +4 hash ids [30], +34 DH group ids [30]
 * Challenge (01h/01h, 16 + HL + DHVLEN): 6 HL, 8 HASHID, 9 DHGID, 10 DHVLEN(2), 12 SEQNUM(4), 16 C1[HL], DH value
 * Reply (01h/02h, 16 + 2 HL + DHVLEN):   6 HL, 8 CVALID, 10 DHVLEN(2), 12 SEQNUM(4), 16 R1[HL], C2[HL], DH value
 * Success1 (01h/03h, 16 (+ HL)):         6 HL, 8 RVALID, 16 R2[HL] when RVALID
 * Success2 (01h/04h, 16)
 * Failure2 (00h/F0h) / Failure1 (00h/F1h), 8: 6 REASON CODE (01h), 7 REASON CODE EXPLANATION ({@link DhchapFailure})
 * </pre>
 * Length fields are read as given: callers check them against the transfer length before touching the variable
 * parts (see {@link ControllerAuthentication} and {@link HostAuthentication}).
 */
public final class DhchapMessage {
    public static final int AUTH_TYPE_COMMON = 0x00;
    public static final int AUTH_TYPE_DHCHAP = 0x01;

    public static final int NEGOTIATE = 0x00;
    public static final int CHALLENGE = 0x01;
    public static final int REPLY = 0x02;
    public static final int SUCCESS1 = 0x03;
    public static final int SUCCESS2 = 0x04;
    public static final int FAILURE2 = 0xF0;
    public static final int FAILURE1 = 0xF1;

    public static final int AUTH_TYPE_OFFSET = 0;
    public static final int AUTH_ID_OFFSET = 1;
    public static final int T_ID_OFFSET = 4;
    /** Negotiate. */
    public static final int SC_C_OFFSET = 6;
    public static final int NAPD_OFFSET = 7;
    public static final int DESCRIPTORS_OFFSET = 8;
    public static final int DESCRIPTOR_LENGTH = 64;
    public static final int DESCRIPTOR_AUTHID = 0;
    public static final int DESCRIPTOR_HALEN = 2;
    public static final int DESCRIPTOR_DHLEN = 3;
    public static final int DESCRIPTOR_HASH_IDS = 4;
    public static final int DESCRIPTOR_DH_IDS = 34;
    public static final int MAX_IDS = 30;
    public static final int NEGOTIATE_LENGTH = DESCRIPTORS_OFFSET + DESCRIPTOR_LENGTH;
    /** Challenge, Reply, Success1. */
    public static final int HL_OFFSET = 6;
    public static final int HASHID_OFFSET = 8;
    public static final int DHGID_OFFSET = 9;
    public static final int CVALID_OFFSET = 8;
    public static final int RVALID_OFFSET = 8;
    public static final int DHVLEN_OFFSET = 10;
    public static final int SEQNUM_OFFSET = 12;
    public static final int VALUES_OFFSET = 16;
    public static final int HEADER_LENGTH = 16;
    /** Failure1 / Failure2. */
    public static final int RESCODE_OFFSET = 6;
    public static final int RESCODE_EXPLANATION_OFFSET = 7;
    public static final int FAILURE_LENGTH = 8;

    private ByteBuffer buffer;
    private int offset;

    public DhchapMessage wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    /** Zeroes {@code length} bytes and writes the common header. */
    public DhchapMessage init(int authType, int authId, int transactionId, int length) {
        for (int i = 0; i < length; i++) {
            buffer.put(offset + i, (byte) 0);
        }
        buffer.put(offset + AUTH_TYPE_OFFSET, (byte) authType);
        buffer.put(offset + AUTH_ID_OFFSET, (byte) authId);
        buffer.putShort(offset + T_ID_OFFSET, (short) transactionId);
        return this;
    }

    public int authType() {
        return u8(AUTH_TYPE_OFFSET);
    }

    public int authId() {
        return u8(AUTH_ID_OFFSET);
    }

    public int transactionId() {
        return buffer.getShort(offset + T_ID_OFFSET) & 0xFFFF;
    }

    public boolean is(int authType, int authId) {
        return authType() == authType && authId() == authId;
    }

    // Negotiate

    public int secureChannel() {
        return u8(SC_C_OFFSET);
    }

    public DhchapMessage secureChannel(int scC) {
        buffer.put(offset + SC_C_OFFSET, (byte) scC);
        return this;
    }

    public int protocolCount() {
        return u8(NAPD_OFFSET);
    }

    /** Byte {@code field} of protocol descriptor {@code index}. */
    public int descriptor(int index, int field) {
        return u8(DESCRIPTORS_OFFSET + index * DESCRIPTOR_LENGTH + field);
    }

    /** Writes one DH-HMAC-CHAP descriptor offering {@code hashes} and {@code groups}. */
    public DhchapMessage negotiate(DhchapHash[] hashes, DhchapGroup[] groups) {
        buffer.put(offset + NAPD_OFFSET, (byte) 1);
        int d = offset + DESCRIPTORS_OFFSET;
        buffer.put(d + DESCRIPTOR_AUTHID, (byte) Dhchap.AUTH_ID_DHCHAP);
        buffer.put(d + DESCRIPTOR_HALEN, (byte) hashes.length);
        buffer.put(d + DESCRIPTOR_DHLEN, (byte) groups.length);
        for (int i = 0; i < hashes.length; i++) {
            buffer.put(d + DESCRIPTOR_HASH_IDS + i, (byte) hashes[i].id());
        }
        for (int i = 0; i < groups.length; i++) {
            buffer.put(d + DESCRIPTOR_DH_IDS + i, (byte) groups[i].id());
        }
        return this;
    }

    // Challenge, Reply, Success1

    public int hashLength() {
        return u8(HL_OFFSET);
    }

    public DhchapMessage hashLength(int hl) {
        buffer.put(offset + HL_OFFSET, (byte) hl);
        return this;
    }

    public int hashId() {
        return u8(HASHID_OFFSET);
    }

    public DhchapMessage hashId(int id) {
        buffer.put(offset + HASHID_OFFSET, (byte) id);
        return this;
    }

    public int dhGroupId() {
        return u8(DHGID_OFFSET);
    }

    public DhchapMessage dhGroupId(int id) {
        buffer.put(offset + DHGID_OFFSET, (byte) id);
        return this;
    }

    /** CVALID of Reply, RVALID of Success1 (same byte). */
    public boolean valid() {
        return u8(CVALID_OFFSET) != 0;
    }

    public DhchapMessage valid(boolean v) {
        buffer.put(offset + CVALID_OFFSET, (byte) (v ? 1 : 0));
        return this;
    }

    public int dhValueLength() {
        return buffer.getShort(offset + DHVLEN_OFFSET) & 0xFFFF;
    }

    public DhchapMessage dhValueLength(int n) {
        buffer.putShort(offset + DHVLEN_OFFSET, (short) n);
        return this;
    }

    public int seqnum() {
        return buffer.getInt(offset + SEQNUM_OFFSET);
    }

    public DhchapMessage seqnum(int s) {
        buffer.putInt(offset + SEQNUM_OFFSET, s);
        return this;
    }

    /** Copies {@code length} bytes at {@code at} (relative to the message) out. */
    public byte[] bytes(int at, int length) {
        byte[] out = new byte[length];
        buffer.get(offset + at, out);
        return out;
    }

    public DhchapMessage bytes(int at, byte[] value) {
        buffer.put(offset + at, value);
        return this;
    }

    // Failure1 / Failure2

    public int reasonExplanation() {
        return u8(RESCODE_EXPLANATION_OFFSET);
    }

    /** Writes a Failure1 (controller) or Failure2 (host) message with reason code 01h and {@code explanation}. */
    public DhchapMessage failure(int authId, int transactionId, int explanation) {
        init(AUTH_TYPE_COMMON, authId, transactionId, FAILURE_LENGTH);
        buffer.put(offset + RESCODE_OFFSET, (byte) DhchapFailure.REASON_FAILED);
        buffer.put(offset + RESCODE_EXPLANATION_OFFSET, (byte) explanation);
        return this;
    }

    private int u8(int at) {
        return buffer.get(offset + at) & 0xFF;
    }

    public static String name(int authType, int authId) {
        if (authType == AUTH_TYPE_COMMON) {
            switch (authId) {
                case NEGOTIATE: return "Negotiate";
                case FAILURE1: return "Failure1";
                case FAILURE2: return "Failure2";
                default: break;
            }
        } else if (authType == AUTH_TYPE_DHCHAP) {
            switch (authId) {
                case CHALLENGE: return "Challenge";
                case REPLY: return "Reply";
                case SUCCESS1: return "Success1";
                case SUCCESS2: return "Success2";
                default: break;
            }
        }
        return String.format("message %02x/%02x", authType, authId);
    }
}
