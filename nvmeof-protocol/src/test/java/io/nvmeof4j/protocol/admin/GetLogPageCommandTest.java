package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GetLogPageCommandTest {
    @Test
    void shouldDecodeLibnvmesDiscoveryHeaderRead() {
        // Get Log Page 70h, RAE 1, NUMDL 4 (20 bytes), LPO 0.
        ByteBuffer b = Bytes.hex(64,
            "02 40 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          + "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          + "14 00 00 00 00 00 00 5a 70 80 04 00 00 00 00 00"
          + "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
        GetLogPageCommand c = new GetLogPageCommand().wrap(b, 0);
        assertThat(c.logPageId()).isEqualTo(LogPageIdentifier.DISCOVERY);
        assertThat(c.retainAsyncEvent()).isTrue();
        assertThat(c.logSpecificField()).isZero();
        assertThat(c.numberOfDwordsLower()).isEqualTo(4);
        assertThat(c.lengthBytes()).isEqualTo(20);
        assertThat(c.logPageOffset()).isZero();
        assertThat(c.validate()).isEqualTo(NvmeStatus.SUCCESS);
    }

    @Test
    void shouldEncodeLengthsThatNeedNumdu() {
        ByteBuffer b = Bytes.zeroes(64);
        GetLogPageCommand c = new GetLogPageCommand().wrap(b, 0)
            .init(1, -1, LogPageIdentifier.DISCOVERY, (0x12345L + 1) * 4, 1024).retainAsyncEvent(true);
        assertThat(Bytes.toHex(b, 40, 8)).isEqualTo("70" + "80" + "4523" + "0100" + "0000");
        assertThat(Bytes.toHex(b, 48, 8)).as("LPO 1024").isEqualTo("0004000000000000");
        assertThat(c.numberOfDwordsUpper()).isEqualTo(1);
        assertThat(c.numberOfDwords()).isEqualTo(0x12345);
        assertThat(c.lengthBytes()).isEqualTo((0x12345L + 1) * 4);
        assertThat(c.logPageOffset()).isEqualTo(1024);
        assertThat(b.getInt(4)).as("NSID").isEqualTo(-1);
        c.retainAsyncEvent(false).logSpecificField(0x7F);
        assertThat(b.get(41) & 0xFF).isEqualTo(0x7F);
        c.retainAsyncEvent(true);
        assertThat(b.get(41) & 0xFF).isEqualTo(0xFF);
        assertThat(c.logSpecificField()).isEqualTo(0x7F);
        c.logSpecificId(0xBEEF).commandSetIdentifier(2);
        assertThat(b.getShort(46) & 0xFFFF).isEqualTo(0xBEEF);
        assertThat(b.get(59)).isEqualTo((byte) 2);
        assertThat(c.lengthBytes()).as("LSP/LSI do not disturb NUMD").isEqualTo((0x12345L + 1) * 4);
    }

    @Test
    void shouldRejectUnalignedOffsetsAndLengths() {
        ByteBuffer b = Bytes.zeroes(64);
        GetLogPageCommand c = new GetLogPageCommand().wrap(b, 0).init(1, 0, LogPageIdentifier.SMART_HEALTH, 512, 0);
        b.putLong(48, 1026);
        assertThat(c.validate()).isEqualTo(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
        b.putLong(48, 1028);
        assertThat(c.validate()).isEqualTo(NvmeStatus.SUCCESS);
        assertThatThrownBy(() -> c.logPageOffset(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> c.lengthBytes(10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> c.lengthBytes(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
