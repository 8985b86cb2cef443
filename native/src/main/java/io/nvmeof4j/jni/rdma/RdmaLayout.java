package io.nvmeof4j.jni.rdma;

/**
 * Sizes and offsets of the rdma-core structures Java reads or writes directly, asked from C at load time (never
 * hard-coded): {@code struct ibv_wc} (polled completions), {@code struct ibv_send_wr}, {@code struct ibv_recv_wr},
 * {@code struct ibv_sge} (prebuilt work requests) and the shim's own CM event record.
 */
final class RdmaLayout {
    // Indexes into the array layout0 fills; the C side (onload.c) uses the same order.
    static final int WC_SIZE = 0;
    static final int WC_WR_ID = 1;
    static final int WC_STATUS = 2;
    static final int WC_OPCODE = 3;
    static final int WC_VENDOR_ERR = 4;
    static final int WC_BYTE_LEN = 5;
    static final int WC_IMM_DATA = 6;
    static final int WC_QP_NUM = 7;
    static final int WC_SRC_QP = 8;
    static final int WC_WC_FLAGS = 9;
    static final int SEND_WR_SIZE = 10;
    static final int SEND_WR_WR_ID = 11;
    static final int SEND_WR_NEXT = 12;
    static final int SEND_WR_SG_LIST = 13;
    static final int SEND_WR_NUM_SGE = 14;
    static final int SEND_WR_OPCODE = 15;
    static final int SEND_WR_SEND_FLAGS = 16;
    static final int SEND_WR_IMM_DATA = 17;
    static final int SEND_WR_REMOTE_ADDR = 18;
    static final int SEND_WR_RKEY = 19;
    static final int RECV_WR_SIZE = 20;
    static final int RECV_WR_WR_ID = 21;
    static final int RECV_WR_NEXT = 22;
    static final int RECV_WR_SG_LIST = 23;
    static final int RECV_WR_NUM_SGE = 24;
    static final int SGE_SIZE = 25;
    static final int SGE_ADDR = 26;
    static final int SGE_LENGTH = 27;
    static final int SGE_LKEY = 28;
    static final int CM_EVENT_SIZE = 29;
    static final int CM_EVENT_TYPE = 30;
    static final int CM_EVENT_STATUS = 31;
    static final int CM_EVENT_ID = 32;
    static final int CM_EVENT_LISTEN_ID = 33;
    static final int CM_EVENT_PRIVATE_DATA_LEN = 34;
    static final int CM_EVENT_RESPONDER_RESOURCES = 35;
    static final int CM_EVENT_INITIATOR_DEPTH = 36;
    static final int CM_EVENT_FLOW_CONTROL = 37;
    static final int CM_EVENT_RETRY_COUNT = 38;
    static final int CM_EVENT_RNR_RETRY_COUNT = 39;
    static final int CM_EVENT_QP_NUM = 40;
    static final int CM_EVENT_PRIVATE_DATA = 41;
    static final int CM_EVENT_PRIVATE_DATA_MAX = 42;
    static final int COUNT = 43;

    private static int[] values;

    private RdmaLayout() {
    }

    static void init() {
        int[] v = new int[COUNT];
        int n = layout0(v);
        if (n != COUNT) {
            throw new IllegalStateException("libnvmeof4j-rdma reports " + n + " layout values, Java expects " + COUNT
                + " (library and classes from different builds?)");
        }
        values = v;
    }

    static int get(int index) {
        return values[index];
    }

    /** A copy of every value, for tests and diagnostics. */
    static int[] all() {
        return values.clone();
    }

    /** Fills {@code values} (length {@link #COUNT}) and returns how many values the library knows. */
    private static native int layout0(int[] values);
}
