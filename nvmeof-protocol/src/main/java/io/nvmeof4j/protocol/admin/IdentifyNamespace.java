package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte Identify Namespace data structure for the NVM command set (CNS 00h;
 * NVMe Base 2.0 / NVM Command Set 1.0, 4.1.5.1; wire reference 2.7).
 *
 * <pre>
 *   0 NSZE(8)   8 NCAP(8)   16 NUSE(8)   24 NSFEAT   25 NLBAF (0-based)   26 FLBAS   27 MC   28 DPC   29 DPS
 *  30 NMIC     31 RESCAP   32 FPI       33 DLFEAT   34 NAWUN(2)   36 NAWUPF(2)   38 NACWU(2)
 *  64 NPWG(2)  66 NPWA(2)  68 NPDG(2)   70 NPDA(2)  72 NOWS(2)  74 MSSRL(2)  76 MCL(4)  80 MSRC
 *  92 ANAGRPID(4)   99 NSATTR   100 NVMSETID(2)   102 ENDGID(2)   104 NGUID(16)   120 EUI64(8)
 * 128 LBAF[0..63], 4 bytes each:  MS(2) | LBADS(1) | RP(1)
 * </pre>
 * An inactive NSID is answered with all zeroes. Little-endian.
 */
public final class IdentifyNamespace {
    public static final int LENGTH = 4096;

    public static final int NSZE_OFFSET = 0;
    public static final int NCAP_OFFSET = 8;
    public static final int NUSE_OFFSET = 16;
    public static final int NSFEAT_OFFSET = 24;
    public static final int NLBAF_OFFSET = 25;
    public static final int FLBAS_OFFSET = 26;
    public static final int MC_OFFSET = 27;
    public static final int DPC_OFFSET = 28;
    public static final int DPS_OFFSET = 29;
    public static final int NMIC_OFFSET = 30;
    public static final int RESCAP_OFFSET = 31;
    public static final int FPI_OFFSET = 32;
    public static final int DLFEAT_OFFSET = 33;
    public static final int NAWUN_OFFSET = 34;
    public static final int NAWUPF_OFFSET = 36;
    public static final int NACWU_OFFSET = 38;
    public static final int NPWG_OFFSET = 64;
    public static final int NPWA_OFFSET = 66;
    public static final int NPDG_OFFSET = 68;
    public static final int NPDA_OFFSET = 70;
    public static final int NOWS_OFFSET = 72;
    public static final int MSSRL_OFFSET = 74;
    public static final int MCL_OFFSET = 76;
    public static final int MSRC_OFFSET = 80;
    public static final int ANAGRPID_OFFSET = 92;
    public static final int NSATTR_OFFSET = 99;
    public static final int NVMSETID_OFFSET = 100;
    public static final int ENDGID_OFFSET = 102;
    public static final int NGUID_OFFSET = 104;
    public static final int NGUID_LENGTH = 16;
    public static final int EUI64_OFFSET = 120;
    public static final int EUI64_LENGTH = 8;
    public static final int LBAF_OFFSET = 128;
    public static final int LBAF_LENGTH = 4;
    public static final int LBAF_COUNT_MAX = 64;

    // NSFEAT
    public static final int NSFEAT_THIN_PROVISIONING = 1;
    public static final int NSFEAT_NS_ATOMIC_WRITE_UNITS = 1 << 1;
    public static final int NSFEAT_DEALLOCATED_ERROR = 1 << 2;
    public static final int NSFEAT_IO_OPTIMIZATION = 1 << 4;
    // NMIC
    public static final int NMIC_SHARED = 1;
    // NSATTR
    public static final int NSATTR_WRITE_PROTECTED = 1;
    // DLFEAT bits 2:0: what a deallocated block reads as
    public static final int DLFEAT_READ_NOT_REPORTED = 0;
    public static final int DLFEAT_READ_ZEROES = 1;
    public static final int DLFEAT_READ_ONES = 2;
    /** DLFEAT bit 3: Write Zeroes supports the Deallocate bit. */
    public static final int DLFEAT_WRITE_ZEROES_DEALLOCATE = 1 << 3;
    /** DLFEAT bit 4: the guard field of deallocated blocks holds the CRC of their data. */
    public static final int DLFEAT_GUARD_CRC = 1 << 4;

    private ByteBuffer buffer;
    private int offset;

    public IdentifyNamespace wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("Identify Namespace needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public IdentifyNamespace clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    private int u8(int at) {
        return buffer.get(offset + at) & 0xFF;
    }

    private void u8(int at, int v) {
        buffer.put(offset + at, (byte) v);
    }

    private int u16(int at) {
        return buffer.getShort(offset + at) & 0xFFFF;
    }

    private void u16(int at, int v) {
        buffer.putShort(offset + at, (short) v);
    }

    /** NSZE: size in logical blocks. */
    public long size() { return buffer.getLong(offset + NSZE_OFFSET); }
    public IdentifyNamespace size(long blocks) { buffer.putLong(offset + NSZE_OFFSET, blocks); return this; }

    /** NCAP: capacity in logical blocks. */
    public long capacity() { return buffer.getLong(offset + NCAP_OFFSET); }
    public IdentifyNamespace capacity(long blocks) { buffer.putLong(offset + NCAP_OFFSET, blocks); return this; }

    /** NUSE: utilization in logical blocks. */
    public long utilization() { return buffer.getLong(offset + NUSE_OFFSET); }
    public IdentifyNamespace utilization(long blocks) { buffer.putLong(offset + NUSE_OFFSET, blocks); return this; }

    public int features() { return u8(NSFEAT_OFFSET); }
    public IdentifyNamespace features(int v) { u8(NSFEAT_OFFSET, v); return this; }

    /** NLBAF, 0-based: the number of LBA formats minus one. */
    public int lbaFormatCount() { return u8(NLBAF_OFFSET); }
    public IdentifyNamespace lbaFormatCount(int zeroBased) { u8(NLBAF_OFFSET, zeroBased); return this; }

    public int formattedLbaSize() { return u8(FLBAS_OFFSET); }
    public IdentifyNamespace formattedLbaSize(int v) { u8(FLBAS_OFFSET, v); return this; }

    public int metadataCapabilities() { return u8(MC_OFFSET); }
    public IdentifyNamespace metadataCapabilities(int v) { u8(MC_OFFSET, v); return this; }

    public int multiPathCapabilities() { return u8(NMIC_OFFSET); }
    public IdentifyNamespace multiPathCapabilities(int v) { u8(NMIC_OFFSET, v); return this; }

    public int reservationCapabilities() { return u8(RESCAP_OFFSET); }
    public IdentifyNamespace reservationCapabilities(int v) { u8(RESCAP_OFFSET, v); return this; }

    public int deallocateFeatures() { return u8(DLFEAT_OFFSET); }
    public IdentifyNamespace deallocateFeatures(int v) { u8(DLFEAT_OFFSET, v); return this; }

    public int atomicWriteUnitNormal() { return u16(NAWUN_OFFSET); }
    public IdentifyNamespace atomicWriteUnitNormal(int v) { u16(NAWUN_OFFSET, v); return this; }

    public int atomicWriteUnitPowerFail() { return u16(NAWUPF_OFFSET); }
    public IdentifyNamespace atomicWriteUnitPowerFail(int v) { u16(NAWUPF_OFFSET, v); return this; }

    /** NPWG, 0-based: preferred write granularity in logical blocks. */
    public int preferredWriteGranularity() { return u16(NPWG_OFFSET); }
    public IdentifyNamespace preferredWriteGranularity(int v) { u16(NPWG_OFFSET, v); return this; }

    public int preferredWriteAlignment() { return u16(NPWA_OFFSET); }
    public IdentifyNamespace preferredWriteAlignment(int v) { u16(NPWA_OFFSET, v); return this; }

    public int preferredDeallocateGranularity() { return u16(NPDG_OFFSET); }
    public IdentifyNamespace preferredDeallocateGranularity(int v) { u16(NPDG_OFFSET, v); return this; }

    public int preferredDeallocateAlignment() { return u16(NPDA_OFFSET); }
    public IdentifyNamespace preferredDeallocateAlignment(int v) { u16(NPDA_OFFSET, v); return this; }

    /** NOWS, 0-based: optimal write size in logical blocks. */
    public int optimalWriteSize() { return u16(NOWS_OFFSET); }
    public IdentifyNamespace optimalWriteSize(int v) { u16(NOWS_OFFSET, v); return this; }

    /** MSSRL: the most logical blocks one Copy source range may name (1-based). */
    public int maxSingleSourceRangeLength() { return u16(MSSRL_OFFSET); }
    public IdentifyNamespace maxSingleSourceRangeLength(int v) { u16(MSSRL_OFFSET, v); return this; }

    /** MCL: the most logical blocks one Copy may write (1-based, unsigned 32 bit). */
    public int maxCopyLength() { return buffer.getInt(offset + MCL_OFFSET); }
    public IdentifyNamespace maxCopyLength(int v) { buffer.putInt(offset + MCL_OFFSET, v); return this; }

    /** MSRC: the most source ranges one Copy may carry, 0-based (0 means one range). */
    public int maxSourceRangeCount() { return u8(MSRC_OFFSET); }
    public IdentifyNamespace maxSourceRangeCount(int v) { u8(MSRC_OFFSET, v); return this; }

    public int anaGroupId() { return buffer.getInt(offset + ANAGRPID_OFFSET); }
    public IdentifyNamespace anaGroupId(int v) { buffer.putInt(offset + ANAGRPID_OFFSET, v); return this; }

    public int attributes() { return u8(NSATTR_OFFSET); }
    public IdentifyNamespace attributes(int v) { u8(NSATTR_OFFSET, v); return this; }

    public int nvmSetId() { return u16(NVMSETID_OFFSET); }
    public IdentifyNamespace nvmSetId(int v) { u16(NVMSETID_OFFSET, v); return this; }

    public int enduranceGroupId() { return u16(ENDGID_OFFSET); }
    public IdentifyNamespace enduranceGroupId(int v) { u16(ENDGID_OFFSET, v); return this; }

    public byte[] nguid() { return bytes(NGUID_OFFSET, NGUID_LENGTH); }
    public IdentifyNamespace nguid(byte[] nguid) { putBytes(NGUID_OFFSET, NGUID_LENGTH, nguid); return this; }

    public byte[] eui64() { return bytes(EUI64_OFFSET, EUI64_LENGTH); }
    public IdentifyNamespace eui64(byte[] eui64) { putBytes(EUI64_OFFSET, EUI64_LENGTH, eui64); return this; }

    /** LBA format {@code index}: metadata size in bytes. */
    public int lbaFormatMetadataSize(int index) {
        return u16(lbafOffset(index));
    }

    /** LBA format {@code index}: LBADS, log2 of the data size (9 = 512 B, 12 = 4 KiB). */
    public int lbaFormatDataSizeShift(int index) {
        return u8(lbafOffset(index) + 2);
    }

    /** LBA format {@code index}: relative performance (0 best .. 3 degraded). */
    public int lbaFormatRelativePerformance(int index) {
        return u8(lbafOffset(index) + 3) & 0x3;
    }

    public IdentifyNamespace lbaFormat(int index, int metadataSize, int dataSizeShift, int relativePerformance) {
        int at = lbafOffset(index);
        u16(at, metadataSize);
        u8(at + 2, dataSizeShift);
        u8(at + 3, relativePerformance & 0x3);
        return this;
    }

    private static int lbafOffset(int index) {
        if (index < 0 || index >= LBAF_COUNT_MAX) {
            throw new IndexOutOfBoundsException("LBA format " + index + " outside 0.." + (LBAF_COUNT_MAX - 1));
        }
        return LBAF_OFFSET + index * LBAF_LENGTH;
    }

    private byte[] bytes(int at, int length) {
        byte[] out = new byte[length];
        for (int i = 0; i < length; i++) {
            out[i] = buffer.get(offset + at + i);
        }
        return out;
    }

    private void putBytes(int at, int length, byte[] value) {
        if (value.length != length) {
            throw new IllegalArgumentException("field needs " + length + " bytes, got " + value.length);
        }
        for (int i = 0; i < length; i++) {
            buffer.put(offset + at + i, value[i]);
        }
    }
}
