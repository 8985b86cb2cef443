package io.nvmeof4j.protocol.discovery;

import io.nvmeof4j.protocol.Nqn;
import io.nvmeof4j.protocol.admin.AsciiFields;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over one 1024-byte Discovery log page entry (NVMe-oF 1.1, 5.3 Figure 32; wire reference 2.8).
 *
 * <pre>
 *  0 TRTYPE   1 ADRFAM   2 SUBTYPE   3 TREQ   4 PORTID(2)   6 CNTLID(2)   8 ASQSZ(2)   10 EFLAGS(2)
 * 12.. reserved      32 TRSVCID (32, ASCII)      64.. reserved
 * 256 SUBNQN (256, NUL terminated)
 * 512 TRADDR (256, ASCII)
 * 768 TSAS (256): RDMA  QPTYPE@0 PRTYPE@1 CMS@2 PKEY@8(2);  TCP  SECTYPE@0
 * </pre>
 * TRSVCID and TRADDR are written NUL padded, as the Linux target does (hosts accept space padding too and the
 * readers here trim both). TREQ bits 1:0: secure channel (0 not specified, 1 required, 2 not required);
 * bit 2: the controller supports disabling SQ flow control.
 */
public final class DiscoveryLogEntry {
    public static final int LENGTH = 1024;

    public static final int TRTYPE_OFFSET = 0;
    public static final int ADRFAM_OFFSET = 1;
    public static final int SUBTYPE_OFFSET = 2;
    public static final int TREQ_OFFSET = 3;
    public static final int PORTID_OFFSET = 4;
    public static final int CNTLID_OFFSET = 6;
    public static final int ASQSZ_OFFSET = 8;
    public static final int EFLAGS_OFFSET = 10;
    public static final int TRSVCID_OFFSET = 32;
    public static final int TRSVCID_LENGTH = 32;
    public static final int SUBNQN_OFFSET = 256;
    public static final int TRADDR_OFFSET = 512;
    public static final int TRADDR_LENGTH = 256;
    public static final int TSAS_OFFSET = 768;
    public static final int TSAS_LENGTH = 256;

    /** SUBTYPE: referral to another discovery service. */
    public static final int SUBTYPE_DISCOVERY_REFERRAL = 1;
    /** SUBTYPE: an NVM subsystem. */
    public static final int SUBTYPE_NVM = 2;
    /** SUBTYPE: the discovery subsystem answering this very request (the port it is reached through). */
    public static final int SUBTYPE_CURRENT_DISCOVERY = 3;

    public static final int TREQ_SECURE_CHANNEL_NOT_SPECIFIED = 0;
    public static final int TREQ_SECURE_CHANNEL_REQUIRED = 1;
    public static final int TREQ_SECURE_CHANNEL_NOT_REQUIRED = 2;
    public static final int TREQ_DISABLE_SQ_FLOW_CONTROL = 1 << 2;

    /** EFLAGS bit 0: duplicate returned information; bit 1: explicit persistent connection support. */
    public static final int EFLAGS_DUPLICATE_RETURNED_INFO = 1;
    public static final int EFLAGS_EXPLICIT_PERSISTENT_CONNECTION = 1 << 1;

    /** CNTLID of the dynamic controller model. */
    public static final int CNTLID_DYNAMIC = 0xFFFF;

    // TSAS
    public static final int TSAS_RDMA_QPTYPE_OFFSET = 0;
    public static final int TSAS_RDMA_PRTYPE_OFFSET = 1;
    public static final int TSAS_RDMA_CMS_OFFSET = 2;
    public static final int TSAS_RDMA_PKEY_OFFSET = 8;
    public static final int RDMA_QPTYPE_CONNECTED = 1;
    public static final int RDMA_PRTYPE_NOT_SPECIFIED = 1;
    public static final int RDMA_CMS_RDMA_CM = 1;
    public static final int TSAS_TCP_SECTYPE_OFFSET = 0;
    public static final int TCP_SECTYPE_NONE = 0;
    public static final int TCP_SECTYPE_TLS12 = 1;
    public static final int TCP_SECTYPE_TLS13 = 2;

    private ByteBuffer buffer;
    private int offset;

    public DiscoveryLogEntry wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        if (buffer.capacity() - offset < LENGTH) {
            throw new IllegalArgumentException("discovery log entry needs " + LENGTH + " bytes from offset " + offset);
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public DiscoveryLogEntry clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int transportType() { return buffer.get(offset + TRTYPE_OFFSET) & 0xFF; }
    public DiscoveryLogEntry transportType(int v) { buffer.put(offset + TRTYPE_OFFSET, (byte) v); return this; }

    public int addressFamily() { return buffer.get(offset + ADRFAM_OFFSET) & 0xFF; }
    public DiscoveryLogEntry addressFamily(int v) { buffer.put(offset + ADRFAM_OFFSET, (byte) v); return this; }

    public int subsystemType() { return buffer.get(offset + SUBTYPE_OFFSET) & 0xFF; }
    public DiscoveryLogEntry subsystemType(int v) { buffer.put(offset + SUBTYPE_OFFSET, (byte) v); return this; }

    public int transportRequirements() { return buffer.get(offset + TREQ_OFFSET) & 0xFF; }
    public DiscoveryLogEntry transportRequirements(int v) { buffer.put(offset + TREQ_OFFSET, (byte) v); return this; }

    public int portId() { return buffer.getShort(offset + PORTID_OFFSET) & 0xFFFF; }
    public DiscoveryLogEntry portId(int v) { buffer.putShort(offset + PORTID_OFFSET, (short) v); return this; }

    public int controllerId() { return buffer.getShort(offset + CNTLID_OFFSET) & 0xFFFF; }
    public DiscoveryLogEntry controllerId(int v) { buffer.putShort(offset + CNTLID_OFFSET, (short) v); return this; }

    /** ASQSZ: largest admin submission queue, in entries (1-based). */
    public int adminMaxSqSize() { return buffer.getShort(offset + ASQSZ_OFFSET) & 0xFFFF; }
    public DiscoveryLogEntry adminMaxSqSize(int v) { buffer.putShort(offset + ASQSZ_OFFSET, (short) v); return this; }

    public int entryFlags() { return buffer.getShort(offset + EFLAGS_OFFSET) & 0xFFFF; }
    public DiscoveryLogEntry entryFlags(int v) { buffer.putShort(offset + EFLAGS_OFFSET, (short) v); return this; }

    public String transportServiceId() { return AsciiFields.read(buffer, offset + TRSVCID_OFFSET, TRSVCID_LENGTH); }
    public DiscoveryLogEntry transportServiceId(String trsvcid) {
        AsciiFields.writeNulPadded(buffer, offset + TRSVCID_OFFSET, TRSVCID_LENGTH, trsvcid);
        return this;
    }

    public String subsystemNqn() { return Nqn.readField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH); }
    public DiscoveryLogEntry subsystemNqn(String nqn) {
        Nqn.writeField(buffer, offset + SUBNQN_OFFSET, Nqn.FIELD_LENGTH, nqn);
        return this;
    }

    public String transportAddress() { return AsciiFields.read(buffer, offset + TRADDR_OFFSET, TRADDR_LENGTH); }
    public DiscoveryLogEntry transportAddress(String traddr) {
        AsciiFields.writeNulPadded(buffer, offset + TRADDR_OFFSET, TRADDR_LENGTH, traddr);
        return this;
    }

    public int tsasByte(int index) {
        checkTsas(index);
        return buffer.get(offset + TSAS_OFFSET + index) & 0xFF;
    }

    public DiscoveryLogEntry tsasByte(int index, int value) {
        checkTsas(index);
        buffer.put(offset + TSAS_OFFSET + index, (byte) value);
        return this;
    }

    /** TSAS for NVMe/TCP: SECTYPE, rest zero. */
    public DiscoveryLogEntry tcpSecurityType(int sectype) {
        AsciiFields.zero(buffer, offset + TSAS_OFFSET, TSAS_LENGTH);
        return tsasByte(TSAS_TCP_SECTYPE_OFFSET, sectype);
    }

    /** TSAS for RDMA: QP type, provider type, connection management service, rest zero. */
    public DiscoveryLogEntry rdmaAttributes(int qptype, int prtype, int cms) {
        AsciiFields.zero(buffer, offset + TSAS_OFFSET, TSAS_LENGTH);
        tsasByte(TSAS_RDMA_QPTYPE_OFFSET, qptype);
        tsasByte(TSAS_RDMA_PRTYPE_OFFSET, prtype);
        return tsasByte(TSAS_RDMA_CMS_OFFSET, cms);
    }

    private static void checkTsas(int index) {
        if (index < 0 || index >= TSAS_LENGTH) {
            throw new IndexOutOfBoundsException("TSAS byte " + index + " outside 0.." + (TSAS_LENGTH - 1));
        }
    }
}
