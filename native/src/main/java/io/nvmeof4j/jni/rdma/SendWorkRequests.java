package io.nvmeof4j.jni.rdma;

import java.nio.ByteBuffer;

/**
 * A preallocated, reusable batch of send work requests: real {@code struct ibv_send_wr} entries and their
 * {@code struct ibv_sge} lists laid out in one direct buffer, written through this flyweight and posted with ONE
 * {@link QueuePair#postSend(SendWorkRequests, int)} (a single chained {@code ibv_post_send}: for an NVMe read, the
 * RDMA WRITEs of the data then the SEND of the response). Nothing is allocated or copied per post; the layout comes
 * from C at load time (DiSNI's "stateful verbs" idea, without its hard-coded struct sizes).
 *
 * <pre>
 * buffer: [ibv_send_wr 0][ibv_send_wr 1]...[ibv_send_wr capacity-1][sge 0.0 .. 0.maxSge-1][sge 1.0 ...]...
 *   each entry's sg_list points at its own maxSge SGE slots (set once here); its next pointer is set per post.
 * </pre>
 *
 * Writing entry {@code i}: one of {@link #send}, {@link #sendWithInvalidate}, {@link #rdmaRead}, {@link #rdmaWrite}
 * (or {@link #set} with an opcode) and then its SGEs in order with {@link #sge(int, int, long, int, int)} (SGE
 * {@code j} sets the entry's SGE count to {@code j + 1}). Entries keep their content between posts.
 */
public final class SendWorkRequests {
    /** {@code IBV_WR_RDMA_WRITE}. */
    public static final int OPCODE_RDMA_WRITE = 0;
    /** {@code IBV_WR_RDMA_WRITE_WITH_IMM}. */
    public static final int OPCODE_RDMA_WRITE_WITH_IMM = 1;
    /** {@code IBV_WR_SEND}. */
    public static final int OPCODE_SEND = 2;
    /** {@code IBV_WR_SEND_WITH_IMM}. */
    public static final int OPCODE_SEND_WITH_IMM = 3;
    /** {@code IBV_WR_RDMA_READ}. */
    public static final int OPCODE_RDMA_READ = 4;
    /** {@code IBV_WR_SEND_WITH_INV}: the peer's memory key {@code invalidate_rkey} is invalidated on receipt. */
    public static final int OPCODE_SEND_WITH_INV = 9;

    /** {@code IBV_SEND_FENCE}: wait for earlier RDMA READs to complete first. */
    public static final int FLAG_FENCE = 1;
    /** {@code IBV_SEND_SIGNALED}: produce a completion for this request (unsignalled ones complete silently). */
    public static final int FLAG_SIGNALED = 1 << 1;
    /** {@code IBV_SEND_SOLICITED}: raise a solicited event at the peer. */
    public static final int FLAG_SOLICITED = 1 << 2;
    /** {@code IBV_SEND_INLINE}: copy the payload into the WQE at post time (up to max inline data; no lkey needed). */
    public static final int FLAG_INLINE = 1 << 3;

    private static final int WR_SIZE;
    private static final int WR_ID;
    private static final int NEXT;
    private static final int SG_LIST;
    private static final int NUM_SGE;
    private static final int OPCODE;
    private static final int SEND_FLAGS;
    private static final int IMM_DATA;
    private static final int REMOTE_ADDR;
    private static final int RKEY;
    private static final int SGE_SIZE;
    private static final int SGE_ADDR;
    private static final int SGE_LENGTH;
    private static final int SGE_LKEY;

    static {
        Rdma.ensureLoaded();
        WR_SIZE = RdmaLayout.get(RdmaLayout.SEND_WR_SIZE);
        WR_ID = RdmaLayout.get(RdmaLayout.SEND_WR_WR_ID);
        NEXT = RdmaLayout.get(RdmaLayout.SEND_WR_NEXT);
        SG_LIST = RdmaLayout.get(RdmaLayout.SEND_WR_SG_LIST);
        NUM_SGE = RdmaLayout.get(RdmaLayout.SEND_WR_NUM_SGE);
        OPCODE = RdmaLayout.get(RdmaLayout.SEND_WR_OPCODE);
        SEND_FLAGS = RdmaLayout.get(RdmaLayout.SEND_WR_SEND_FLAGS);
        IMM_DATA = RdmaLayout.get(RdmaLayout.SEND_WR_IMM_DATA);
        REMOTE_ADDR = RdmaLayout.get(RdmaLayout.SEND_WR_REMOTE_ADDR);
        RKEY = RdmaLayout.get(RdmaLayout.SEND_WR_RKEY);
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

    /**
     * A batch of up to {@code capacity} work requests with up to {@code maxSgePerRequest} SGEs each (at most the
     * QP's max_send_sge).
     */
    public SendWorkRequests(int capacity, int maxSgePerRequest) {
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
            buffer.putLong(i * WR_SIZE + SG_LIST, address + sgeOffset(i, 0));
            buffer.putLong(i * WR_SIZE + NEXT, i + 1 < capacity ? address + (long) (i + 1) * WR_SIZE : 0L);
        }
    }

    /** The most entries one post carries. */
    public int capacity() {
        return capacity;
    }

    /** The most SGEs per entry. */
    public int maxSgePerRequest() {
        return maxSge;
    }

    /** Entry {@code i}: id, opcode ({@code OPCODE_*}), flags ({@code FLAG_*}); its SGE count is reset to 0. */
    public SendWorkRequests set(int i, long wrId, int opcode, int flags) {
        int e = entry(i);
        buffer.putLong(e + WR_ID, wrId);
        buffer.putInt(e + OPCODE, opcode);
        buffer.putInt(e + SEND_FLAGS, flags);
        buffer.putInt(e + NUM_SGE, 0);
        buffer.putInt(e + IMM_DATA, 0);
        return this;
    }

    /** Entry {@code i} as a SEND (an NVMe-oF capsule or response). */
    public SendWorkRequests send(int i, long wrId, int flags) {
        return set(i, wrId, OPCODE_SEND, flags);
    }

    /** Entry {@code i} as a SEND_WITH_INV invalidating the peer's {@code rkey} (NVMe-oF keyed SGL subtype 0xF). */
    public SendWorkRequests sendWithInvalidate(int i, long wrId, int flags, int rkey) {
        set(i, wrId, OPCODE_SEND_WITH_INV, flags);
        buffer.putInt(entry(i) + IMM_DATA, rkey);
        return this;
    }

    /** Entry {@code i} as an RDMA READ from the peer's {@code [remoteAddress, +length of the SGEs)} under {@code rkey}. */
    public SendWorkRequests rdmaRead(int i, long wrId, int flags, long remoteAddress, int rkey) {
        set(i, wrId, OPCODE_RDMA_READ, flags);
        return remote(i, remoteAddress, rkey);
    }

    /** Entry {@code i} as an RDMA WRITE to the peer's {@code remoteAddress} under {@code rkey}. */
    public SendWorkRequests rdmaWrite(int i, long wrId, int flags, long remoteAddress, int rkey) {
        set(i, wrId, OPCODE_RDMA_WRITE, flags);
        return remote(i, remoteAddress, rkey);
    }

    /** The remote address and key of RDMA READ/WRITE entry {@code i}. */
    public SendWorkRequests remote(int i, long remoteAddress, int rkey) {
        int e = entry(i);
        buffer.putLong(e + REMOTE_ADDR, remoteAddress);
        buffer.putInt(e + RKEY, rkey);
        return this;
    }

    /** Immediate data (network order) of a *_WITH_IMM entry, or the rkey of a SEND_WITH_INV one. */
    public SendWorkRequests immediateOrInvalidateRkey(int i, int value) {
        buffer.putInt(entry(i) + IMM_DATA, value);
        return this;
    }

    /**
     * SGE {@code j} of entry {@code i}: {@code length} bytes at native {@code address} under {@code lkey}; sets the
     * entry's SGE count to {@code j + 1}.
     */
    public SendWorkRequests sge(int i, int j, long sgeAddress, int length, int lkey) {
        if (j < 0 || j >= maxSge) {
            throw new IndexOutOfBoundsException("SGE " + j + " of at most " + maxSge);
        }
        entry(i);
        int s = sgeOffset(i, j);
        buffer.putLong(s + SGE_ADDR, sgeAddress);
        buffer.putInt(s + SGE_LENGTH, length);
        buffer.putInt(s + SGE_LKEY, lkey);
        buffer.putInt(i * WR_SIZE + NUM_SGE, j + 1);
        return this;
    }

    /** Sets entry {@code i}'s flags ({@code FLAG_*}). */
    public SendWorkRequests flags(int i, int flags) {
        buffer.putInt(entry(i) + SEND_FLAGS, flags);
        return this;
    }

    public long wrId(int i) {
        return buffer.getLong(entry(i) + WR_ID);
    }

    public int opcode(int i) {
        return buffer.getInt(entry(i) + OPCODE);
    }

    public int flags(int i) {
        return buffer.getInt(entry(i) + SEND_FLAGS);
    }

    public int numSge(int i) {
        return buffer.getInt(entry(i) + NUM_SGE);
    }

    /** After a failed post: the index of the first entry not posted (entries before it were); -1 after success. */
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

    /** Ends the chain after {@code count} entries (entry count-1's next = NULL) for one post. */
    void terminate(int count) {
        buffer.putLong((count - 1) * WR_SIZE + NEXT, 0L);
    }

    /** Restores the link the post's terminate removed. */
    void relink(int count) {
        if (count < capacity) {
            buffer.putLong((count - 1) * WR_SIZE + NEXT, address + (long) count * WR_SIZE);
        }
    }

    private int entry(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("work request " + i + " of " + capacity);
        }
        return i * WR_SIZE;
    }

    private int sgeOffset(int index, int j) {
        return sgeBase + (index * maxSge + j) * SGE_SIZE;
    }
}
