package io.nvmeof4j.jni.rdma;

import java.nio.ByteBuffer;

/**
 * The shim's copy of one {@code struct rdma_cm_event} ({@code struct cm_event_record} in rdma_shim.h), which
 * {@code CmEventChannel.getEvent0} fills before acknowledging the event; offsets from C at load time. Kept apart
 * from {@link CmEventChannel} because classes with natives are initialised while the library registers them,
 * before the layout is known.
 */
final class CmEventRecord {
    private static final int SIZE;
    private static final int TYPE;
    private static final int STATUS;
    private static final int ID;
    private static final int LISTEN_ID;
    private static final int PRIVATE_DATA_LEN;
    private static final int RESPONDER_RESOURCES;
    private static final int INITIATOR_DEPTH;
    private static final int FLOW_CONTROL;
    private static final int RETRY_COUNT;
    private static final int RNR_RETRY_COUNT;
    private static final int QP_NUM;
    private static final int PRIVATE_DATA;
    private static final int PRIVATE_DATA_MAX;

    static {
        Rdma.ensureLoaded();
        SIZE = RdmaLayout.get(RdmaLayout.CM_EVENT_SIZE);
        TYPE = RdmaLayout.get(RdmaLayout.CM_EVENT_TYPE);
        STATUS = RdmaLayout.get(RdmaLayout.CM_EVENT_STATUS);
        ID = RdmaLayout.get(RdmaLayout.CM_EVENT_ID);
        LISTEN_ID = RdmaLayout.get(RdmaLayout.CM_EVENT_LISTEN_ID);
        PRIVATE_DATA_LEN = RdmaLayout.get(RdmaLayout.CM_EVENT_PRIVATE_DATA_LEN);
        RESPONDER_RESOURCES = RdmaLayout.get(RdmaLayout.CM_EVENT_RESPONDER_RESOURCES);
        INITIATOR_DEPTH = RdmaLayout.get(RdmaLayout.CM_EVENT_INITIATOR_DEPTH);
        FLOW_CONTROL = RdmaLayout.get(RdmaLayout.CM_EVENT_FLOW_CONTROL);
        RETRY_COUNT = RdmaLayout.get(RdmaLayout.CM_EVENT_RETRY_COUNT);
        RNR_RETRY_COUNT = RdmaLayout.get(RdmaLayout.CM_EVENT_RNR_RETRY_COUNT);
        QP_NUM = RdmaLayout.get(RdmaLayout.CM_EVENT_QP_NUM);
        PRIVATE_DATA = RdmaLayout.get(RdmaLayout.CM_EVENT_PRIVATE_DATA);
        PRIVATE_DATA_MAX = RdmaLayout.get(RdmaLayout.CM_EVENT_PRIVATE_DATA_MAX);
    }

    private final ByteBuffer buffer = Rdma.allocateAligned(SIZE, 64);
    private final long address = Rdma.address(buffer);

    long address() {
        return address;
    }

    int type() {
        return buffer.getInt(TYPE);
    }

    int status() {
        return buffer.getInt(STATUS);
    }

    long id() {
        return buffer.getLong(ID);
    }

    long listenId() {
        return buffer.getLong(LISTEN_ID);
    }

    int qpNum() {
        return buffer.getInt(QP_NUM);
    }

    /** The connection parameters and a copy of the private data (control path: allocates). */
    ConnectionParameters parameters() {
        int len = Math.max(0, Math.min(Math.min(buffer.getInt(PRIVATE_DATA_LEN), PRIVATE_DATA_MAX), 255));
        byte[] privateData = new byte[len];
        buffer.get(PRIVATE_DATA, privateData);
        return new ConnectionParameters(privateData, buffer.getInt(RESPONDER_RESOURCES) & 0xff,
            buffer.getInt(INITIATOR_DEPTH) & 0xff, buffer.getInt(FLOW_CONTROL) & 0xff,
            Math.min(7, buffer.getInt(RETRY_COUNT)), Math.min(7, buffer.getInt(RNR_RETRY_COUNT)));
    }
}
