package io.nvmeof4j.jni.bdev;

import io.nvmeof4j.jni.NativeLibrary;

import java.nio.ByteBuffer;

/**
 * The natives of {@code libnvmeof4j-bdev} (registered from C in {@code JNI_OnLoad}) and the layout of the arrays
 * shared with C, asked from C at load time. Every native returns a value or {@code -errno}.
 */
final class BdevNative {
    static final Throwable UNAVAILABILITY_CAUSE = NativeLibrary.load("bdev");

    static final int OPEN_BUFFERED = 0x1;
    static final int OPEN_CREATE = 0x2;
    static final int OPEN_READ_ONLY = 0x4;
    static final int OPEN_CONFINED = 0x8;
    static final int OPEN_BLOCK_DEVICE = 0x10;
    static final int OPEN_NO_DISCARD_CMD = 0x20;
    static final int OPEN_SHARED = 0x40;

    static final int IO_FUA = 0x1;
    static final int IO_FIXED = 0x2;

    static final int SUB_SIZE;
    static final int SUB_CHANNEL;
    static final int SUB_OFFSET;
    static final int SUB_ADDR;
    static final int SUB_LENGTH;
    static final int SUB_OP;
    static final int SUB_FLAGS;
    static final int SUB_TAG;
    static final int CPL_SIZE;
    static final int CPL_TAG;
    static final int CPL_RESULT;
    static final int MAX_CAPACITY;
    static final int RESULT_BLOCKING;
    static final int OP_DELAY;

    static {
        int[] layout = new int[14];
        if (UNAVAILABILITY_CAUSE == null) {
            layout0(layout);
        }
        SUB_SIZE = layout[0];
        SUB_CHANNEL = layout[1];
        SUB_OFFSET = layout[2];
        SUB_ADDR = layout[3];
        SUB_LENGTH = layout[4];
        SUB_OP = layout[5];
        SUB_FLAGS = layout[6];
        SUB_TAG = layout[7];
        CPL_SIZE = layout[8];
        CPL_TAG = layout[9];
        CPL_RESULT = layout[10];
        MAX_CAPACITY = layout[11];
        RESULT_BLOCKING = layout[12];
        OP_DELAY = layout[13];
    }

    private BdevNative() {
    }

    static void requireAvailable() {
        if (UNAVAILABILITY_CAUSE != null) {
            throw new UnsupportedOperationException("libnvmeof4j-bdev is not available: " + UNAVAILABILITY_CAUSE,
                UNAVAILABILITY_CAUSE);
        }
    }

    static native long uringOpen0(String path, int flags, int blockSize, long sizeBytes);


    static native int info0(long device, long[] out);

    static native long resize0(long device, long sizeBytes);

    static native int closeDevice0(long device);

    static native long openDesc0(long device, boolean writable);

    static native int closeDesc0(long desc);

    static native long groupCreate0(int capacity, ByteBuffer region);

    static native int groupArrays0(long group, ByteBuffer[] out);

    static native int groupInfo0(long group, long[] out);

    static native int groupDestroy0(long group);

    static native int groupPending0(long group);

    static native long channelCreate0(long desc, long group);

    static native int channelDestroy0(long channel);

    static native int submit0(long group, int count);

    static native int poll0(long group, int max);

    static native int wait0(long group, long timeoutNanos);

    static native int wakeSelector0(long group, java.nio.channels.Selector selector);

    static native int arm0(long group);

    static native int disarm0(long group);

    static native long regionMap0(long length, boolean hugetlb, boolean transparent, int[] fellBack);

    static native ByteBuffer regionBuffer0(long address, long length);

    static native int regionUnmap0(long address, long length, boolean hugepages);

    static native long address0(ByteBuffer buffer);

    static native int layout0(int[] out);

    static native int discardBlocking0(long device, long offset, long length);
}
