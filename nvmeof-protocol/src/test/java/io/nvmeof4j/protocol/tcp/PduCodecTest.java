package io.nvmeof4j.protocol.tcp;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PduCodecTest {

    private static ByteBuffer le(int capacity) {
        return ByteBuffer.allocate(capacity).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static ByteBuffer wire(int... bytes) {
        ByteBuffer b = le(bytes.length);
        for (int i = 0; i < bytes.length; i++) {
            b.put(i, (byte) bytes[i]);
        }
        return b;
    }

    private static byte[] bytes(ByteBuffer b, int offset, int length) {
        byte[] out = new byte[length];
        for (int i = 0; i < length; i++) {
            out[i] = b.get(offset + i);
        }
        return out;
    }

    @Test
    void shouldDecodeICRespAsNvmetSendsIt() {
        // nvmet_tcp_handle_icreq: type 1, HLEN 128, PDO 0, PLEN 128, PFV 0, CPDA 0, no digests, MAXH2CDATA 0x400000.
        ByteBuffer b = le(128);
        int[] head = {0x01, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00};
        for (int i = 0; i < head.length; i++) {
            b.put(i, (byte) head[i]);
        }
        ICRespPdu icresp = new ICRespPdu().wrap(b, 0);
        assertThat(icresp.pduType()).isEqualTo(PduType.IC_RESP);
        assertThat(icresp.headerLength()).isEqualTo(128);
        assertThat(icresp.pduDataOffset()).isZero();
        assertThat(icresp.pduLength()).isEqualTo(128);
        assertThat(icresp.pduFormatVersion()).isEqualTo(ICReqPdu.PFV_1_0);
        assertThat(icresp.controllerPduDataAlignment()).isZero();
        assertThat(icresp.digest()).isZero();
        assertThat(icresp.maxH2CDataLength()).isEqualTo(0x400000);
    }

    @Test
    void shouldEncodeICRespByteForByte() {
        ByteBuffer b = le(128);
        for (int i = 0; i < 128; i++) {
            b.put(i, (byte) 0xEE); // init must clear whatever was there
        }
        new ICRespPdu().wrap(b, 0).init().digest(ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA).maxH2CDataLength(0x40000);
        assertThat(bytes(b, 0, 16)).containsExactly(
            0x01, 0x00, (byte) 0x80, 0x00, (byte) 0x80, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x04, 0x00);
        assertThat(bytes(b, 16, 112)).containsOnly(0);
    }

    @Test
    void shouldDecodeICReqAsTheLinuxHostSendsIt() {
        // nvme_tcp_init_connection with hdr and data digest on: PFV 0, HPDA 0, DGST 3, MAXR2T 0.
        ByteBuffer b = le(128);
        int[] head = {0x00, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00};
        for (int i = 0; i < head.length; i++) {
            b.put(i, (byte) head[i]);
        }
        ICReqPdu icreq = new ICReqPdu().wrap(b, 0);
        assertThat(icreq.pduType()).isEqualTo(PduType.IC_REQ);
        assertThat(icreq.headerLength()).isEqualTo(ICReqPdu.HEADER_LENGTH);
        assertThat(icreq.pduLength()).isEqualTo(ICReqPdu.PDU_LENGTH);
        assertThat(icreq.hostPduDataAlignment()).isZero();
        assertThat(icreq.digest()).isEqualTo(ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA);
        assertThat(icreq.maxR2T()).isZero();
    }

    @Test
    void shouldRoundTripICReq() {
        ByteBuffer b = le(128 + 8);
        ICReqPdu w = new ICReqPdu().wrap(b, 8).init().hostPduDataAlignment(31).digest(1).maxR2T(0xFFFF_FFFFL);
        ICReqPdu r = new ICReqPdu().wrap(b, 8);
        assertThat(r.pduType()).isZero();
        assertThat(r.hostPduDataAlignment()).isEqualTo(31);
        assertThat(r.digest()).isEqualTo(1);
        assertThat(r.maxR2T()).isEqualTo(0xFFFF_FFFFL);
        assertThat(w.toString()).contains("ICReq");
    }

    @Test
    void shouldDecodeCapsuleCmdWithHeaderDigestAndInCapsuleData() {
        // Linux host, header digest on, 4 KiB in-capsule write: flags HDGSTF|DDGSTF, HLEN 72, PDO 76,
        // PLEN 76 + 4096 + 4 = 4176 (0x1050).
        ByteBuffer b = le(76);
        int[] head = {0x04, 0x03, 0x48, 0x4C, 0x50, 0x10, 0x00, 0x00};
        for (int i = 0; i < head.length; i++) {
            b.put(i, (byte) head[i]);
        }
        b.put(8, (byte) 0x01).put(9, (byte) 0x40).putShort(10, (short) 0x1234).putInt(12, 1);
        b.putLong(8 + 24, 0L).putInt(8 + 32, 4096).put(8 + 39, (byte) SglDescriptor.ID_IN_CAPSULE);
        CapsuleCmdPdu cmd = new CapsuleCmdPdu().wrap(b, 0);
        assertThat(cmd.pduType()).isEqualTo(PduType.CAPSULE_CMD);
        assertThat(cmd.hasFlag(PduFlyweight.FLAG_HDGSTF)).isTrue();
        assertThat(cmd.hasFlag(PduFlyweight.FLAG_DDGSTF)).isTrue();
        assertThat(cmd.headerLength()).isEqualTo(CapsuleCmdPdu.HEADER_LENGTH);
        assertThat(cmd.pduDataOffset()).isEqualTo(76);
        assertThat(cmd.pduLength()).isEqualTo(4176);
        assertThat(cmd.sqe().opcode()).isEqualTo(0x01);
        assertThat(cmd.sqe().commandId()).isEqualTo(0x1234);
        assertThat(cmd.sqe().nsid()).isEqualTo(1);
        assertThat(cmd.sqe().sgl1().id()).isEqualTo(SglDescriptor.ID_IN_CAPSULE);
        assertThat(cmd.sqe().sgl1().length()).isEqualTo(4096);
    }

    @Test
    void shouldEncodeCapsuleRespWithCqe() {
        ByteBuffer b = le(28);
        CapsuleRespPdu resp = new CapsuleRespPdu().wrap(b, 0).init(4).flags(PduFlyweight.FLAG_HDGSTF);
        resp.cqe().dw0(0x11223344).sqHead(0xFFFF).sqId(3).commandId(0x2A).status(NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR);
        assertThat(bytes(b, 0, 24)).containsExactly(
            0x05, 0x01, 0x18, 0x00, 0x1C, 0x00, 0x00, 0x00,
            0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00, 0x00,
            (byte) 0xFF, (byte) 0xFF, 0x03, 0x00, 0x2A, 0x00, 0x22, (byte) 0x80);
    }

    @Test
    void shouldRoundTripR2T() {
        ByteBuffer b = le(24);
        new R2TPdu().wrap(b, 0).init(0).commandCapsuleCid(7).transferTag(12).r2tOffset(0).r2tLength(131072);
        assertThat(bytes(b, 0, 24)).containsExactly(
            0x09, 0x00, 0x18, 0x00, 0x18, 0x00, 0x00, 0x00,
            0x07, 0x00, 0x0C, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00);
        R2TPdu r = new R2TPdu().wrap(b, 0);
        assertThat(r.commandCapsuleCid()).isEqualTo(7);
        assertThat(r.transferTag()).isEqualTo(12);
        assertThat(r.r2tLength()).isEqualTo(131072);
    }

    @Test
    void shouldRoundTripH2CData() {
        ByteBuffer b = wire(0x06, 0x04, 0x18, 0x18, 0x18, 0x10, 0x00, 0x00,
            0x05, 0x00, 0x02, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0, 0, 0, 0);
        H2CDataPdu h2c = new H2CDataPdu().wrap(b, 0);
        assertThat(h2c.pduType()).isEqualTo(PduType.H2C_DATA);
        assertThat(h2c.hasFlag(PduFlyweight.FLAG_LAST_PDU)).isTrue();
        assertThat(h2c.pduDataOffset()).isEqualTo(24);
        assertThat(h2c.pduLength()).isEqualTo(24 + 4096);
        assertThat(h2c.commandCapsuleCid()).isEqualTo(5);
        assertThat(h2c.transferTag()).isEqualTo(2);
        assertThat(h2c.dataOffset()).isEqualTo(4096);
        assertThat(h2c.dataLength()).isEqualTo(4096);

        ByteBuffer c = le(24);
        new H2CDataPdu().wrap(c, 0).init(24 + 4096).flags(PduFlyweight.FLAG_LAST_PDU).pduDataOffset(24)
            .commandCapsuleCid(5).transferTag(2).dataOffset(4096).dataLength(4096);
        assertThat(bytes(c, 0, 24)).isEqualTo(bytes(b, 0, 24));
    }

    @Test
    void shouldEncodeC2HDataWithSuccessFlag() {
        ByteBuffer b = le(24);
        new C2HDataPdu().wrap(b, 0).init(24 + 512)
            .flags(PduFlyweight.FLAG_LAST_PDU | PduFlyweight.FLAG_SUCCESS).pduDataOffset(24)
            .commandCapsuleCid(0x1001).dataOffset(0).dataLength(512);
        assertThat(bytes(b, 0, 24)).containsExactly(
            0x07, 0x0C, 0x18, 0x18, 0x18, 0x02, 0x00, 0x00,
            0x01, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
        C2HDataPdu r = new C2HDataPdu().wrap(b, 0);
        assertThat(r.dataLength()).isEqualTo(512);
        assertThat(r.commandCapsuleCid()).isEqualTo(0x1001);
    }

    @Test
    void shouldEncodeC2HTermReq() {
        ByteBuffer b = le(TermReqPdu.MAX_PDU_LENGTH);
        new TermReqPdu().wrap(b, 0).init(PduType.C2H_TERM_REQ, 8)
            .fatalErrorStatus(TermReqPdu.FES_INVALID_HEADER_FIELD).fatalErrorInformation(2);
        assertThat(bytes(b, 0, 24)).containsExactly(
            0x03, 0x00, 0x18, 0x00, 0x20, 0x00, 0x00, 0x00,
            0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
        TermReqPdu r = new TermReqPdu().wrap(b, 0);
        assertThat(r.errorDataLength()).isEqualTo(8);
        assertThat(TermReqPdu.fesName(r.fatalErrorStatus())).isEqualTo("invalid PDU header field");
    }

    @Test
    void shouldRejectTermReqOfWrongTypeOrTooMuchData() {
        ByteBuffer b = le(TermReqPdu.MAX_PDU_LENGTH);
        assertThatThrownBy(() -> new TermReqPdu().wrap(b, 0).init(PduType.R2T, 0))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TermReqPdu().wrap(b, 0).init(PduType.H2C_TERM_REQ, 129))
            .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldRefuseBigEndianBuffers() {
        assertThatThrownBy(() -> new CommonHeader().wrap(ByteBuffer.allocate(8), 0))
            .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldKnowHeaderLengthsAndDigestsPerType() {
        assertThat(PduType.headerLength(PduType.IC_REQ)).isEqualTo(128);
        assertThat(PduType.headerLength(PduType.CAPSULE_CMD)).isEqualTo(72);
        assertThat(PduType.headerLength(PduType.H2C_DATA)).isEqualTo(24);
        assertThat(PduType.headerLength(PduType.R2T)).isEqualTo(24);
        assertThat(PduType.headerLength(0x08)).isEqualTo(-1);
        assertThat(PduType.hasHeaderDigest(PduType.IC_REQ)).isFalse();
        assertThat(PduType.hasHeaderDigest(PduType.C2H_TERM_REQ)).isFalse();
        assertThat(PduType.hasHeaderDigest(PduType.CAPSULE_CMD)).isTrue();
        assertThat(PduType.hasHeaderDigest(PduType.R2T)).isTrue();
        assertThat(PduType.hasHeaderDigest(0x08)).isFalse();
        assertThat(PduType.name(PduType.C2H_DATA)).isEqualTo("C2HData");
        assertThat(PduType.name(0x0B)).isEqualTo("type 0x0b");
    }
}
