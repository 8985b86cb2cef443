package io.nvmeof4j.jni.rdma;

import java.nio.ByteBuffer;

/**
 * A preallocated, reusable batch of receive work requests ({@code struct ibv_recv_wr} entries with their
 * {@code struct ibv_sge} lists in one direct buffer), posted with ONE {@link QueuePair#postReceive} (a single chained
 * {@code ibv_post_recv}). The same flyweight design as {@link SendWorkRequests}: write entry {@code i} with
 * {@link #set(int, long)} then its SGEs in order.
 *
 * <pre>
 * buffer: [ibv_recv_wr 0]...[ibv_recv_wr capacity-1][sge 0.0 .. 0.maxSge-1][sge 1.0 ...]...
 * </pre>
 */
public final class ReceiveWorkRequests {
    private static final int WR_SIZE;
    private static final int WR_ID;
    private static final int NEXT;
    private static final int SG_LIST;
    private static final int NUM_SGE;
    private static final int SGE_SIZE;
    private static final int SGE_ADDR;
    private static final int SGE_LENGTH;
    private static final int SGE_LKEY;

    static {
        Rdma.ensureLoaded();
        WR_SIZE = RdmaLayout.get(RdmaLayout.RECV_WR_SIZE);
        WR_ID = RdmaLayout.get(RdmaLayout.RECV_WR_WR_ID);
        NEXT = RdmaLayout.get(RdmaLayout.RECV_WR_NEXT);
        SG_LIST = RdmaLayout.get(RdmaLayout.RECV_WR_SG_LIST);
        NUM_SGE = RdmaLayout.get(RdmaLayout.RECV_WR_NUM_SGE);
        SGE_SIZE = RdmaLayout.get(RdmaLayout.SGE_SIZE);
        SGE_ADDR = RdmaLayout.get(RdmaLayout.SGE_ADDR);
        SGE_LENGTH = RdmaLayout.get(RdmaLayout.SGE_LENGTH);
        SGE_LKEY = RdmaLayout.get(RdmaLayout.SGE_LKEY);
    }

    private final ByteBuffer buffer;
    private final long address;
    private final int capacity;
    private final int maxSge;
    private final int sgeBase;
    private int failedIndex = -1;

    /** A batch of up to {@code capacity} receives with up to {@code maxSgePerRequest} SGEs each. */
    public ReceiveWorkRequests(int capacity, int maxSgePerRequest) {
        if (capacity <= 0 || capacity > 65536 || maxSgePerRequest <= 0 || maxSgePerRequest > 64) {
            throw new IllegalArgumentException("capacity 1..65536 and SGEs 1..64 expected: " + capacity + ", "
                + maxSgePerRequest);
        }
        this.capacity = capacity;
        this.maxSge = maxSgePerRequest;
        this.sgeBase = capacity * WR_SIZE;
        this.buffer = Rdma.allocateAligned(sgeBase + capacity * maxSge * SGE_SIZE, 64);
        this.address = Rdma.address(buffer);
        for (int i = 0; i < capacity; i++) {
            buffer.putLong(i * WR_SIZE + SG_LIST, address + sgeBase + (long) i * maxSge * SGE_SIZE);
            buffer.putLong(i * WR_SIZE + NEXT, i + 1 < capacity ? address + (long) (i + 1) * WR_SIZE : 0L);
        }
    }

    public int capacity() {
        return capacity;
    }

    public int maxSgePerRequest() {
        return maxSge;
    }

    /** Entry {@code i} with id {@code wrId} (returned in its completion); its SGE count is reset to 0. */
    public ReceiveWorkRequests set(int i, long wrId) {
        int e = entry(i);
        buffer.putLong(e + WR_ID, wrId);
        buffer.putInt(e + NUM_SGE, 0);
        return this;
    }

    /** SGE {@code j} of entry {@code i} (where the received bytes land); sets its SGE count to {@code j + 1}. */
    public ReceiveWorkRequests sge(int i, int j, long sgeAddress, int length, int lkey) {
        int e = entry(i);
        if (j < 0 || j >= maxSge) {
            throw new IndexOutOfBoundsException("SGE " + j + " of at most " + maxSge);
        }
        int s = sgeBase + (i * maxSge + j) * SGE_SIZE;
        buffer.putLong(s + SGE_ADDR, sgeAddress);
        buffer.putInt(s + SGE_LENGTH, length);
        buffer.putInt(s + SGE_LKEY, lkey);
        buffer.putInt(e + NUM_SGE, j + 1);
        return this;
    }

    public long wrId(int i) {
        return buffer.getLong(entry(i) + WR_ID);
    }

    public int numSge(int i) {
        return buffer.getInt(entry(i) + NUM_SGE);
    }

    /** After a failed post: the index of the first entry not posted; -1 after success. */
    public int failedIndex() {
        return failedIndex;
    }

    void failedIndex(int index) {
        failedIndex = index;
    }

    long address() {
        return address;
    }

    static int stride() {
        return WR_SIZE;
    }

    void terminate(int count) {
        buffer.putLong((count - 1) * WR_SIZE + NEXT, 0L);
    }

    void relink(int count) {
        if (count < capacity) {
            buffer.putLong((count - 1) * WR_SIZE + NEXT, address + (long) count * WR_SIZE);
        }
    }

    private int entry(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("receive " + i + " of " + capacity);
        }
        return i * WR_SIZE;
    }
}
