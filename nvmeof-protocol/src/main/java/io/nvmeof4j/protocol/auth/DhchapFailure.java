package io.nvmeof4j.protocol.auth;

/**
 * Reason codes of the DH-HMAC-CHAP Failure1 / Failure2 messages (NVMe Base 2.0, 8.13.5.6, Figure "reason code
 * explanations"; nvme.h NVME_AUTH_DHCHAP_FAILURE_*). The reason code itself is always {@link #REASON_FAILED}; the
 * explanation says why.
 */
public final class DhchapFailure {
    private DhchapFailure() {
    }

    /** Reason code: authentication failure (the only one defined). */
    public static final int REASON_FAILED = 0x01;

    /** Explanation: authentication failed (wrong response, no key for what was asked). */
    public static final int FAILED = 0x01;
    /** Explanation: authentication protocol not usable. */
    public static final int NOT_USABLE = 0x02;
    /** Explanation: secure channel concatenation mismatch. */
    public static final int CONCAT_MISMATCH = 0x03;
    /** Explanation: hash function not usable. */
    public static final int HASH_UNUSABLE = 0x04;
    /** Explanation: DH group not usable. */
    public static final int DHGROUP_UNUSABLE = 0x05;
    /** Explanation: incorrect payload (bad lengths, transaction id, DH value). */
    public static final int INCORRECT_PAYLOAD = 0x06;
    /** Explanation: incorrect protocol message (out of order, unknown). */
    public static final int INCORRECT_MESSAGE = 0x07;

    public static String name(int explanation) {
        switch (explanation) {
            case FAILED: return "authentication failed";
            case NOT_USABLE: return "protocol not usable";
            case CONCAT_MISMATCH: return "secure channel concatenation mismatch";
            case HASH_UNUSABLE: return "hash function not usable";
            case DHGROUP_UNUSABLE: return "DH group not usable";
            case INCORRECT_PAYLOAD: return "incorrect payload";
            case INCORRECT_MESSAGE: return "incorrect protocol message";
            default: return String.format("reason explanation 0x%02x", explanation);
        }
    }
}
