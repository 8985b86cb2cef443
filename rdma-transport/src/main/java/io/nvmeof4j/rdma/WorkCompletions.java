package io.nvmeof4j.rdma;

/**
 * A batch of work completions (ibv_wc) as parallel arrays, filled by {@link QueuePairVerbs#poll} and read in
 * place: preallocated once per poll group, so polling allocates nothing.
 */
public final class WorkCompletions {
    /** ibv_wc_status: IBV_WC_SUCCESS. */
    public static final int STATUS_SUCCESS = 0;
    /** IBV_WC_WR_FLUSH_ERR: the queue pair went to error and this work request was never executed. */
    public static final int STATUS_WR_FLUSH_ERROR = 5;

    /** ibv_wc_opcode values. */
    public static final int OPCODE_SEND = 0;
    public static final int OPCODE_RDMA_WRITE = 1;
    public static final int OPCODE_RDMA_READ = 2;
    public static final int OPCODE_RECV = 128;

    public final long[] wrId;
    public final int[] status;
    public final int[] opcode;
    public final int[] byteLength;
    /** Vendor error, for messages. */
    public final int[] vendorError;

    public WorkCompletions(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        wrId = new long[capacity];
        status = new int[capacity];
        opcode = new int[capacity];
        byteLength = new int[capacity];
        vendorError = new int[capacity];
    }

    public int capacity() {
        return wrId.length;
    }

    /** ibv_wc_status_str for the common ones. */
    public static String statusName(int status) {
        switch (status) {
            case 0:
                return "success";
            case 1:
                return "local length error";
            case 2:
                return "local QP operation error";
            case 4:
                return "local protection error";
            case 5:
                return "work request flushed";
            case 9:
                return "remote invalid request";
            case 10:
                return "remote access error";
            case 11:
                return "remote operation error";
            case 12:
                return "transport retry counter exceeded";
            case 13:
                return "RNR retry counter exceeded";
            default:
                return "status " + status;
        }
    }
}
