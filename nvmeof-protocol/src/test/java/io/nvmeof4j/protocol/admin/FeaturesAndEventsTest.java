package io.nvmeof4j.protocol.admin;

import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.fabrics.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

class FeaturesAndEventsTest {
    @Test
    void shouldEncodeSetFeaturesNumberOfQueues() {
        ByteBuffer b = Bytes.zeroes(64);
        SetFeaturesCommand c = new SetFeaturesCommand().wrap(b, 0).init(2, FeatureIdentifier.NUMBER_OF_QUEUES, 3 | 3 << 16);
        assertThat(Bytes.toHex(b, 0, 4)).isEqualTo("09400200");
        assertThat(Bytes.toHex(b, 40, 8)).isEqualTo("07000000" + "03000300");
        assertThat(c.featureId()).isEqualTo(7);
        assertThat(c.save()).isFalse();
        c.save(true);
        assertThat(b.get(43) & 0xFF).as("SV is CDW10 bit 31").isEqualTo(0x80);
        assertThat(c.save()).isTrue();
        assertThat(c.featureId()).isEqualTo(7);
        assertThat(FeatureIdentifier.requestedSubmissionQueues0Based(c.value())).isEqualTo(3);
        assertThat(FeatureIdentifier.requestedCompletionQueues0Based(0xFFFF_0001)).isEqualTo(0xFFFF);
        assertThat(FeatureIdentifier.numberOfQueuesResult(4, 8)).isEqualTo(3 | 7 << 16);
        assertThat(FeatureIdentifier.numberOfQueuesResult(65536, 65536)).isEqualTo(0xFFFF_FFFF);
    }

    @Test
    void shouldEncodeGetFeaturesWithSelect() {
        ByteBuffer b = Bytes.zeroes(64);
        GetFeaturesCommand c = new GetFeaturesCommand().wrap(b, 0)
            .init(1, FeatureIdentifier.KEEP_ALIVE_TIMER, GetFeaturesCommand.SEL_SUPPORTED_CAPABILITIES).cdw11(1);
        assertThat(Bytes.toHex(b, 0, 4)).isEqualTo("0a400100");
        assertThat(Bytes.toHex(b, 40, 8)).isEqualTo("0f030000" + "01000000");
        assertThat(c.featureId()).isEqualTo(0x0F);
        assertThat(c.select()).isEqualTo(3);
        assertThat(c.cdw11()).isEqualTo(1);
    }

    @Test
    void shouldComposeAsyncEventCompletions() {
        assertThat(AsyncEvent.NAMESPACE_ATTRIBUTE_CHANGED_DW0).isEqualTo(0x0004_0002);
        assertThat(AsyncEvent.DISCOVERY_LOG_CHANGED_DW0).isEqualTo(0x0070_F002);
        assertThat(AsyncEvent.dw0(AsyncEvent.TYPE_NOTICE, AsyncEvent.NOTICE_ANA_CHANGE, LogPageIdentifier.ANA))
            .isEqualTo(0x000C_0302);
        assertThat(AsyncEvent.type(0x0070_F002)).isEqualTo(AsyncEvent.TYPE_NOTICE);
        assertThat(AsyncEvent.info(0x0070_F002)).isEqualTo(0xF0);
        assertThat(AsyncEvent.logPageId(0x0070_F002)).isEqualTo(0x70);
    }

    @Test
    void shouldWriteKeepAlive() {
        ByteBuffer b = Bytes.zeroes(64);
        for (int i = 0; i < 64; i++) {
            b.put(i, (byte) 0x11);
        }
        SubmissionQueueEntry sqe = KeepAlive.init(new SubmissionQueueEntry().wrap(b, 0), 0x0102);
        assertThat(Bytes.toHex(b, 0, 8)).isEqualTo("1840020100000000");
        assertThat(sqe.cdw10()).isZero();
        assertThat(AdminOpcode.name(KeepAlive.OPCODE)).isEqualTo("KEEP_ALIVE");
        assertThat(AdminOpcode.name(0x55)).isEqualTo("OPCODE 0x55");
    }

    @Test
    void shouldReadBothPaddingStyles() {
        ByteBuffer b = Bytes.zeroes(16);
        AsciiFields.writeSpacePadded(b, 0, 8, "4420");
        AsciiFields.writeNulPadded(b, 8, 8, "4420");
        assertThat(Bytes.toHex(b, 0, 16)).isEqualTo("3434323020202020" + "3434323000000000");
        assertThat(AsciiFields.read(b, 0, 8)).isEqualTo("4420");
        assertThat(AsciiFields.read(b, 8, 8)).isEqualTo("4420");
        AsciiFields.writeNulPadded(b, 0, 4, "full");
        assertThat(AsciiFields.read(b, 0, 4)).as("a field may be filled completely").isEqualTo("full");
    }
}
