package io.nvmeof4j.jni.rdma;

import java.nio.ByteBuffer;

/**
 * A preallocated array of work completions ({@code struct ibv_wc[capacity]} in a direct buffer) that
 * {@link CompletionQueue#poll(WorkCompletions)} fills in place, read through this flyweight: index {@code i} from 0
 * to {@link #count()} - 1. Nothing is copied or allocated per poll; the layout (stride and field offsets) comes from
 * C at load time.
 *
 * <pre>
 * struct ibv_wc (stride WC_SIZE, offsets from C):
 *   wr_id     u64   the work request's id, as posted
 *   status    u32   enum ibv_wc_status (0 = success)
 *   opcode    u32   enum ibv_wc_opcode (SEND 0, RDMA_WRITE 1, RDMA_READ 2, RECV 128, ...); not valid on error
 *   vendor_err u32
 *   byte_len  u32   bytes received (receive completions)
 *   imm_data / invalidated_rkey  u32
 *   qp_num    u32   the local QP
 *   src_qp    u32
 *   wc_flags  u32   WITH_IMM 2, WITH_INV 8, ...
 * </pre>
 */
public final class WorkCompletions {
    /** {@code IBV_WC_SUCCESS}. */
    public static final int STATUS_SUCCESS = 0;
    /** {@code IBV_WC_WR_FLUSH_ERR}: the QP went to error; outstanding requests are flushed with this status. */
    public static final int STATUS_WR_FLUSH_ERR = 5;
    /** {@code IBV_WC_REM_ACCESS_ERR}: the peer refused an RDMA READ/WRITE (bad rkey or range). */
    public static final int STATUS_REM_ACCESS_ERR = 10;
    /** {@code IBV_WC_RETRY_EXC_ERR}: the peer did not answer. */
    public static final int STATUS_RETRY_EXC_ERR = 12;
    /** {@code IBV_WC_RNR_RETRY_EXC_ERR}: the peer had no receive posted for too long. */
    public static final int STATUS_RNR_RETRY_EXC_ERR = 13;

    /** {@code IBV_WC_SEND}. */
    public static final int OPCODE_SEND = 0;
    /** {@code IBV_WC_RDMA_WRITE}. */
    public static final int OPCODE_RDMA_WRITE = 1;
    /** {@code IBV_WC_RDMA_READ}. */
    public static final int OPCODE_RDMA_READ = 2;
    /** {@code IBV_WC_LOCAL_INV}. */
    public static final int OPCODE_LOCAL_INV = 6;
    /** {@code IBV_WC_RECV}: a receive completed (a SEND from the peer landed). */
    public static final int OPCODE_RECV = 128;
    /** {@code IBV_WC_RECV_RDMA_WITH_IMM}. */
    public static final int OPCODE_RECV_RDMA_WITH_IMM = 129;

    /** {@code IBV_WC_WITH_IMM}: {@link #immediateOrInvalidatedRkey(int)} holds immediate data. */
    public static final int FLAG_WITH_IMM = 1 << 1;
    /** {@code IBV_WC_WITH_INV}: the peer's SEND_WITH_INV invalidated {@link #immediateOrInvalidatedRkey(int)}. */
    public static final int FLAG_WITH_INV = 1 << 3;

    static final int WC_SIZE;
    private static final int WR_ID;
    private static final int STATUS;
    private static final int OPCODE;
    private static final int VENDOR_ERR;
    private static final int BYTE_LEN;
    private static final int IMM_DATA;
    private static final int QP_NUM;
    private static final int WC_FLAGS;

    static {
        Rdma.ensureLoaded();
        WC_SIZE = RdmaLayout.get(RdmaLayout.WC_SIZE);
        WR_ID = RdmaLayout.get(RdmaLayout.WC_WR_ID);
        STATUS = RdmaLayout.get(RdmaLayout.WC_STATUS);
        OPCODE = RdmaLayout.get(RdmaLayout.WC_OPCODE);
        VENDOR_ERR = RdmaLayout.get(RdmaLayout.WC_VENDOR_ERR);
        BYTE_LEN = RdmaLayout.get(RdmaLayout.WC_BYTE_LEN);
        IMM_DATA = RdmaLayout.get(RdmaLayout.WC_IMM_DATA);
        QP_NUM = RdmaLayout.get(RdmaLayout.WC_QP_NUM);
        WC_FLAGS = RdmaLayout.get(RdmaLayout.WC_WC_FLAGS);
    }

    private final ByteBuffer buffer;
    private final long address;
    private final int capacity;
    private int count;

    /** An array of {@code capacity} completions (the most one poll returns). */
    public WorkCompletions(int capacity) {
        if (capacity <= 0 || capacity > (1 << 20)) {
            throw new IllegalArgumentException("capacity must be in 1..2^20: " + capacity);
        }
        this.capacity = capacity;
        this.buffer = Rdma.allocateAligned(capacity * WC_SIZE, 64);
        this.address = Rdma.address(buffer);
    }

    long address() {
        return address;
    }

    void count(int n) {
        this.count = n;
    }

    /** The most completions one poll returns. */
    public int capacity() {
        return capacity;
    }

    /** How many entries the last poll filled. */
    public int count() {
        return count;
    }

    /** The wr_id of entry {@code i}, as given when posting. */
    public long wrId(int i) {
        return buffer.getLong(i * WC_SIZE + WR_ID);
    }

    /** The status of entry {@code i} ({@link #STATUS_SUCCESS} or an {@code enum ibv_wc_status} error). */
    public int status(int i) {
        return buffer.getInt(i * WC_SIZE + STATUS);
    }

    /** True when entry {@code i} succeeded. */
    public boolean isSuccess(int i) {
        return status(i) == STATUS_SUCCESS;
    }

    /** The opcode of entry {@code i} ({@code OPCODE_*}); only valid when it succeeded. */
    public int opcode(int i) {
        return buffer.getInt(i * WC_SIZE + OPCODE);
    }

    /** The vendor error syndrome of a failed entry. */
    public int vendorError(int i) {
        return buffer.getInt(i * WC_SIZE + VENDOR_ERR);
    }

    /** Bytes received by entry {@code i} (receive completions). */
    public int byteLength(int i) {
        return buffer.getInt(i * WC_SIZE + BYTE_LEN);
    }

    /** Immediate data (network order as sent) or the invalidated rkey, per {@link #flags(int)}. */
    public int immediateOrInvalidatedRkey(int i) {
        return buffer.getInt(i * WC_SIZE + IMM_DATA);
    }

    /** The number of the local QP entry {@code i} belongs to (CQs can be shared by QPs). */
    public int qpNum(int i) {
        return buffer.getInt(i * WC_SIZE + QP_NUM);
    }

    /** The wc_flags of entry {@code i} ({@code FLAG_*}). */
    public int flags(int i) {
        return buffer.getInt(i * WC_SIZE + WC_FLAGS);
    }

    /** The name of a work-completion status, as {@code ibv_wc_status_str} spells it (control path). */
    public static String statusName(int status) {
        return switch (status) {
            case 0 -> "success";
            case 1 -> "local length error";
            case 2 -> "local QP operation error";
            case 3 -> "local EE context operation error";
            case 4 -> "local protection error";
            case 5 -> "Work Request Flushed Error";
            case 6 -> "memory management operation error";
            case 7 -> "bad response error";
            case 8 -> "local access error";
            case 9 -> "remote invalid request error";
            case 10 -> "remote access error";
            case 11 -> "remote operation error";
            case 12 -> "transport retry counter exceeded";
            case 13 -> "RNR retry counter exceeded";
            case 14 -> "local RDD violation error";
            case 15 -> "remote invalid RD request";
            case 16 -> "aborted error";
            case 17 -> "invalid EE context number";
            case 18 -> "invalid EE context state";
            case 19 -> "fatal error";
            case 20 -> "response timeout error";
            case 21 -> "general error";
            case 22 -> "TM error";
            case 23 -> "TM Rendezvous Request Error";
            default -> "unknown status " + status;
        };
    }
}
