package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.Nqn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 4096-byte Identify Controller data structure (CNS 01h; NVMe Base 2.0, 5.17.2.1 Figure 275;
 * NVMe-oF 1.1, 4.1; wire reference 2.6).
 *
 * <pre>
 *    0 VID(2)   2 SSVID(2)  4 SN(20, space padded)  24 MN(40, space padded)  64 FR(8, space padded)
 *   72 RAB     73 IEEE(3)  76 CMIC   77 MDTS   78 CNTLID(2)   80 VER(4)   84 RTD3R(4)   88 RTD3E(4)
 *   92 OAES(4) 96 CTRATT(4) 111 CNTRLTYPE
 *  256 OACS(2) 258 ACL  259 AERL  260 FRMW  261 LPA  262 ELPE  263 NPSS  320 KAS(2)
 *  343 ANATT  344 ANACAP  348 ANAGRPMAX(4)  352 NANAGRPID(4)
 *  512 SQES   513 CQES  514 MAXCMD(2)  516 NN(4)  520 ONCS(2)  522 FUSES(2)  524 FNA  525 VWC
 *  526 AWUN(2) 528 AWUPF(2)  532 ACWU(2)  534 OCFS(2)  536 SGLS(4)  540 MNAN(4)
 *  768 SUBNQN(256, NUL terminated)
 * 1792 IOCCSZ(4)  1796 IORCSZ(4)  1800 ICDOFF(2)  1802 FCATT  1803 MSDBD  1804 OFCS(2)  1806 DCTYPE
 * 2048 PSD0..PSD31 (32 each)   3072 vendor specific
 * </pre>
 * The fabrics fields at 1792.. are what the Linux host checks for the transport (wire reference 2.6 and 7):
 * ICDOFF 0, IOCCSZ ≥ 4, SGLS bits 1:0 ≠ 0; KAS must be non-zero on I/O controllers. Little-endian.
 */
public final class IdentifyController {
    public static final int LENGTH = 4096;

    public static final int VID_OFFSET = 0;
    public static final int SSVID_OFFSET = 2;
    public static final int SN_OFFSET = 4;
    public static final int SN_LENGTH = 20;
    public static final int MN_OFFSET = 24;
    public static final int MN_LENGTH = 40;
    public static final int FR_OFFSET = 64;
    public static final int FR_LENGTH = 8;
    public static final int RAB_OFFSET = 72;
    public static final int IEEE_OFFSET = 73;
    public static final int CMIC_OFFSET = 76;
    public static final int MDTS_OFFSET = 77;
    public static final int CNTLID_OFFSET = 78;
    public static final int VER_OFFSET = 80;
    public static final int RTD3R_OFFSET = 84;
    public static final int RTD3E_OFFSET = 88;
    public static final int OAES_OFFSET = 92;
    public static final int CTRATT_OFFSET = 96;
    public static final int CNTRLTYPE_OFFSET = 111;
    public static final int OACS_OFFSET = 256;
    public static final int ACL_OFFSET = 258;
    public static final int AERL_OFFSET = 259;
    public static final int FRMW_OFFSET = 260;
    public static final int LPA_OFFSET = 261;
    public static final int ELPE_OFFSET = 262;
    public static final int NPSS_OFFSET = 263;
    public static final int KAS_OFFSET = 320;
    public static final int ANATT_OFFSET = 343;
    public static final int ANACAP_OFFSET = 344;
    public static final int ANAGRPMAX_OFFSET = 348;
    public static final int NANAGRPID_OFFSET = 352;
    public static final int SQES_OFFSET = 512;
    public static final int CQES_OFFSET = 513;
    public static final int MAXCMD_OFFSET = 514;
    public static final int NN_OFFSET = 516;
    public static final int ONCS_OFFSET = 520;
    public static final int FUSES_OFFSET = 522;
    public static final int FNA_OFFSET = 524;
    public static final int VWC_OFFSET = 525;
    public static final int AWUN_OFFSET = 526;
    public static final int AWUPF_OFFSET = 528;
    public static final int ACWU_OFFSET = 532;
    public static final int OCFS_OFFSET = 534;
    public static final int SGLS_OFFSET = 536;
    public static final int MNAN_OFFSET = 540;
    public static final int SUBNQN_OFFSET = 768;
    public static final int IOCCSZ_OFFSET = 1792;
    public static final int IORCSZ_OFFSET = 1796;
    public static final int ICDOFF_OFFSET = 1800;
    public static final int FCATT_OFFSET = 1802;
    public static final int MSDBD_OFFSET = 1803;
    public static final int OFCS_OFFSET = 1804;
    public static final int DCTYPE_OFFSET = 1806;
    public static final int PSD0_OFFSET = 2048;

    // CMIC
    public static final int CMIC_MULTI_PORT = 1;
    public static final int CMIC_MULTI_CONTROLLER = 1 << 1;
    public static final int CMIC_SRIOV = 1 << 2;
    public static final int CMIC_ANA = 1 << 3;
    // ANACAP: states the controller reports (bits 0-4), bit 6 ANAGRPID does not change while attached
    public static final int ANACAP_OPTIMIZED = 1;
    public static final int ANACAP_NON_OPTIMIZED = 1 << 1;
    public static final int ANACAP_INACCESSIBLE = 1 << 2;
    public static final int ANACAP_PERSISTENT_LOSS = 1 << 3;
    public static final int ANACAP_CHANGE = 1 << 4;
    public static final int ANACAP_GRPID_NOT_CHANGED = 1 << 6;
    public static final int ANACAP_ALL_STATES = 0x1F;
    // OAES
    public static final int OAES_NAMESPACE_ATTRIBUTE_NOTICES = 1 << 8;
    public static final int OAES_FIRMWARE_ACTIVATION_NOTICES = 1 << 9;
    public static final int OAES_ANA_CHANGE_NOTICES = 1 << 11;
    public static final int OAES_DISCOVERY_LOG_CHANGE_NOTICES = 1 << 31;
    // CTRATT
    public static final int CTRATT_HOST_ID_128_BIT = 1;
    public static final int CTRATT_TRAFFIC_BASED_KEEP_ALIVE = 1 << 6;
    // CNTRLTYPE
    public static final int CNTRLTYPE_IO = 1;
    public static final int CNTRLTYPE_DISCOVERY = 2;
    public static final int CNTRLTYPE_ADMINISTRATIVE = 3;
    // FRMW
    public static final int FRMW_SLOT1_READ_ONLY = 1;
    // LPA
    public static final int LPA_SMART_PER_NAMESPACE = 1;
    public static final int LPA_COMMANDS_EFFECTS = 1 << 1;
    public static final int LPA_EXTENDED_DATA = 1 << 2;
    // ONCS
    public static final int ONCS_COMPARE = 1;
    public static final int ONCS_WRITE_UNCORRECTABLE = 1 << 1;
    public static final int ONCS_DATASET_MANAGEMENT = 1 << 2;
    public static final int ONCS_WRITE_ZEROES = 1 << 3;
    public static final int ONCS_SAVE_SELECT = 1 << 4;
    public static final int ONCS_RESERVATIONS = 1 << 5;
    public static final int ONCS_TIMESTAMP = 1 << 6;
    public static final int ONCS_VERIFY = 1 << 7;
    public static final int ONCS_COPY = 1 << 8;
    // FUSES
    public static final int FUSES_COMPARE_AND_WRITE = 1;
    // OCFS: Copy source range descriptor formats
    public static final int OCFS_FORMAT_0 = 1;
    // VWC
    public static final int VWC_PRESENT = 1;
    // SGLS
    public static final int SGLS_SUPPORTED_BYTE_ALIGNED = 0x1;
    public static final int SGLS_KEYED_DATA_BLOCK = 1 << 2;
    public static final int SGLS_BIT_BUCKET = 1 << 16;
    public static final int SGLS_OFFSET_SUPPORTED = 1 << 20;
    // SQES / CQES: required (3:0) and maximum (7:4) entry sizes, log2
    public static final int SQES_NVM = 0x66;
    public static final int CQES_NVM = 0x44;

    private ByteBuffer buffer;
    private int offset;

    public IdentifyController wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("Identify Controller needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    /** Zeroes all 4096 bytes: every field not set afterwards reads as 0 (not supported / not reported). */
    public IdentifyController clear() {
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

    private int u32(int at) {
        return buffer.getInt(offset + at);
    }

    private void u32(int at, int v) {
        buffer.putInt(offset + at, v);
    }

    public int vendorId() { return u16(VID_OFFSET); }
    public IdentifyController vendorId(int v) { u16(VID_OFFSET, v); return this; }

    public int subsystemVendorId() { return u16(SSVID_OFFSET); }
    public IdentifyController subsystemVendorId(int v) { u16(SSVID_OFFSET, v); return this; }

    public String serialNumber() { return AsciiFields.read(buffer, offset + SN_OFFSET, SN_LENGTH); }
    public IdentifyController serialNumber(String sn) {
        AsciiFields.writeSpacePadded(buffer, offset + SN_OFFSET, SN_LENGTH, sn);
        return this;
    }

    public String modelNumber() { return AsciiFields.read(buffer, offset + MN_OFFSET, MN_LENGTH); }
    public IdentifyController modelNumber(String mn) {
        AsciiFields.writeSpacePadded(buffer, offset + MN_OFFSET, MN_LENGTH, mn);
        return this;
    }

    public String firmwareRevision() { return AsciiFields.read(buffer, offset + FR_OFFSET, FR_LENGTH); }
    public IdentifyController firmwareRevision(String fr) {
        AsciiFields.writeSpacePadded(buffer, offset + FR_OFFSET, FR_LENGTH, fr);
        return this;
    }

    public int recommendedArbitrationBurst() { return u8(RAB_OFFSET); }
    public IdentifyController recommendedArbitrationBurst(int v) { u8(RAB_OFFSET, v); return this; }

    /** IEEE OUI, 24 bits, stored least significant byte first. */
    public int ieeeOui() { return u8(IEEE_OFFSET) | u8(IEEE_OFFSET + 1) << 8 | u8(IEEE_OFFSET + 2) << 16; }
    public IdentifyController ieeeOui(int oui) {
        u8(IEEE_OFFSET, oui);
        u8(IEEE_OFFSET + 1, oui >>> 8);
        u8(IEEE_OFFSET + 2, oui >>> 16);
        return this;
    }

    public int multiPathCapabilities() { return u8(CMIC_OFFSET); }
    public IdentifyController multiPathCapabilities(int v) { u8(CMIC_OFFSET, v); return this; }

    /** MDTS: 2^MDTS units of the minimum page size (4 KiB); 0 = no limit. */
    public int maximumDataTransferSize() { return u8(MDTS_OFFSET); }
    public IdentifyController maximumDataTransferSize(int v) { u8(MDTS_OFFSET, v); return this; }

    public int controllerId() { return u16(CNTLID_OFFSET); }
    public IdentifyController controllerId(int v) { u16(CNTLID_OFFSET, v); return this; }

    public int version() { return u32(VER_OFFSET); }
    public IdentifyController version(int v) { u32(VER_OFFSET, v); return this; }

    public int rtd3ResumeLatency() { return u32(RTD3R_OFFSET); }
    public IdentifyController rtd3ResumeLatency(int v) { u32(RTD3R_OFFSET, v); return this; }

    public int rtd3EntryLatency() { return u32(RTD3E_OFFSET); }
    public IdentifyController rtd3EntryLatency(int v) { u32(RTD3E_OFFSET, v); return this; }

    public int optionalAsyncEvents() { return u32(OAES_OFFSET); }
    public IdentifyController optionalAsyncEvents(int v) { u32(OAES_OFFSET, v); return this; }

    public int controllerAttributes() { return u32(CTRATT_OFFSET); }
    public IdentifyController controllerAttributes(int v) { u32(CTRATT_OFFSET, v); return this; }

    public int controllerType() { return u8(CNTRLTYPE_OFFSET); }
    public IdentifyController controllerType(int v) { u8(CNTRLTYPE_OFFSET, v); return this; }

    public int optionalAdminCommands() { return u16(OACS_OFFSET); }
    public IdentifyController optionalAdminCommands(int v) { u16(OACS_OFFSET, v); return this; }

    /** ACL, 0-based. */
    public int abortCommandLimit() { return u8(ACL_OFFSET); }
    public IdentifyController abortCommandLimit(int v) { u8(ACL_OFFSET, v); return this; }

    /** AERL, 0-based: AERL + 1 Asynchronous Event Requests may be outstanding. */
    public int asyncEventRequestLimit() { return u8(AERL_OFFSET); }
    public IdentifyController asyncEventRequestLimit(int v) { u8(AERL_OFFSET, v); return this; }

    public int firmwareUpdates() { return u8(FRMW_OFFSET); }
    public IdentifyController firmwareUpdates(int v) { u8(FRMW_OFFSET, v); return this; }

    public int logPageAttributes() { return u8(LPA_OFFSET); }
    public IdentifyController logPageAttributes(int v) { u8(LPA_OFFSET, v); return this; }

    /** ELPE, 0-based: error log entries. */
    public int errorLogPageEntries() { return u8(ELPE_OFFSET); }
    public IdentifyController errorLogPageEntries(int v) { u8(ELPE_OFFSET, v); return this; }

    public int powerStates() { return u8(NPSS_OFFSET); }
    public IdentifyController powerStates(int v) { u8(NPSS_OFFSET, v); return this; }

    /** KAS: keep-alive granularity in 100 ms units. */
    public int keepAliveSupport() { return u16(KAS_OFFSET); }
    public IdentifyController keepAliveSupport(int v) { u16(KAS_OFFSET, v); return this; }

    public int submissionQueueEntrySize() { return u8(SQES_OFFSET); }
    public IdentifyController submissionQueueEntrySize(int v) { u8(SQES_OFFSET, v); return this; }

    public int completionQueueEntrySize() { return u8(CQES_OFFSET); }
    public IdentifyController completionQueueEntrySize(int v) { u8(CQES_OFFSET, v); return this; }

    public int maxOutstandingCommands() { return u16(MAXCMD_OFFSET); }
    public IdentifyController maxOutstandingCommands(int v) { u16(MAXCMD_OFFSET, v); return this; }

    /** NN, unsigned 32 bit. */
    public int numberOfNamespaces() { return u32(NN_OFFSET); }
    public IdentifyController numberOfNamespaces(int v) { u32(NN_OFFSET, v); return this; }

    public int optionalNvmCommands() { return u16(ONCS_OFFSET); }
    public IdentifyController optionalNvmCommands(int v) { u16(ONCS_OFFSET, v); return this; }

    public int fusedOperations() { return u16(FUSES_OFFSET); }
    public IdentifyController fusedOperations(int v) { u16(FUSES_OFFSET, v); return this; }

    /** OCFS: the Copy descriptor formats supported (bit n: format n). */
    public int optionalCopyFormats() { return u16(OCFS_OFFSET); }
    public IdentifyController optionalCopyFormats(int v) { u16(OCFS_OFFSET, v); return this; }

    public int formatNvmAttributes() { return u8(FNA_OFFSET); }
    public IdentifyController formatNvmAttributes(int v) { u8(FNA_OFFSET, v); return this; }

    public int volatileWriteCache() { return u8(VWC_OFFSET); }
    public IdentifyController volatileWriteCache(int v) { u8(VWC_OFFSET, v); return this; }

    /** AWUN, 0-based logical blocks. */
    public int atomicWriteUnitNormal() { return u16(AWUN_OFFSET); }
    public IdentifyController atomicWriteUnitNormal(int v) { u16(AWUN_OFFSET, v); return this; }

    public int atomicWriteUnitPowerFail() { return u16(AWUPF_OFFSET); }
    public IdentifyController atomicWriteUnitPowerFail(int v) { u16(AWUPF_OFFSET, v); return this; }

    public int sglSupport() { return u32(SGLS_OFFSET); }
    public IdentifyController sglSupport(int v) { u32(SGLS_OFFSET, v); return this; }

    /** ANATT: seconds a group may stay in ANA Change before the host gives up on the transition. */
    public int anaTransitionTime() { return u8(ANATT_OFFSET); }
    public IdentifyController anaTransitionTime(int v) { u8(ANATT_OFFSET, v); return this; }

    public int anaCapabilities() { return u8(ANACAP_OFFSET); }
    public IdentifyController anaCapabilities(int v) { u8(ANACAP_OFFSET, v); return this; }

    public int anaGroupIdMax() { return u32(ANAGRPMAX_OFFSET); }
    public IdentifyController anaGroupIdMax(int v) { u32(ANAGRPMAX_OFFSET, v); return this; }

    public int anaGroupIdCount() { return u32(NANAGRPID_OFFSET); }
    public IdentifyController anaGroupIdCount(int v) { u32(NANAGRPID_OFFSET, v); return this; }

    public int maxAllowedNamespaces() { return u32(MNAN_OFFSET); }
    public IdentifyController maxAllowedNamespaces(int v) { u32(MNAN_OFFSET, v); return this; }

    public String subsystemNqn() { return Nqn.readField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH); }
    public IdentifyController subsystemNqn(String nqn) {
        Nqn.writeField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH, nqn);
        return this;
    }

    /** IOCCSZ: I/O command capsule size in 16-byte units (64-byte SQE + in-capsule data). */
    public int ioCommandCapsuleSize() { return u32(IOCCSZ_OFFSET); }
    public IdentifyController ioCommandCapsuleSize(int v) { u32(IOCCSZ_OFFSET, v); return this; }

    /** IORCSZ: I/O response capsule size in 16-byte units. */
    public int ioResponseCapsuleSize() { return u32(IORCSZ_OFFSET); }
    public IdentifyController ioResponseCapsuleSize(int v) { u32(IORCSZ_OFFSET, v); return this; }

    /** ICDOFF: in-capsule data offset in 16-byte units after the SQE. */
    public int inCapsuleDataOffset() { return u16(ICDOFF_OFFSET); }
    public IdentifyController inCapsuleDataOffset(int v) { u16(ICDOFF_OFFSET, v); return this; }

    /** FCATT bit 0: 0 = dynamic controller model, 1 = static. */
    public int fabricsControllerAttributes() { return u8(FCATT_OFFSET); }
    public IdentifyController fabricsControllerAttributes(int v) { u8(FCATT_OFFSET, v); return this; }

    /** MSDBD: maximum SGL data block descriptors per command (0 = no limit). */
    public int maxSglDataBlockDescriptors() { return u8(MSDBD_OFFSET); }
    public IdentifyController maxSglDataBlockDescriptors(int v) { u8(MSDBD_OFFSET, v); return this; }

    /** OFCS: optional fabrics commands (bit 0 Disconnect). */
    public int optionalFabricsCommands() { return u16(OFCS_OFFSET); }
    public IdentifyController optionalFabricsCommands(int v) { u16(OFCS_OFFSET, v); return this; }

    /** DCTYPE (discovery controllers): 0 not reported, 1 direct, 2 central. */
    public int discoveryControllerType() { return u8(DCTYPE_OFFSET); }
    public IdentifyController discoveryControllerType(int v) { u8(DCTYPE_OFFSET, v); return this; }
}
