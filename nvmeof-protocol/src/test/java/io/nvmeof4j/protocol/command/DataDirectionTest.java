package io.nvmeof4j.protocol.command;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class DataDirectionTest {
    @Test
    void shouldTakeTheDirectionFromOpcodeBits1To0() {
        assertThat(DataDirection.fromOpcodeBits(0x18)).isEqualTo(DataDirection.NONE); // Keep Alive
        assertThat(DataDirection.fromOpcodeBits(0x01)).isEqualTo(DataDirection.HOST_TO_CONTROLLER); // Write
        assertThat(DataDirection.fromOpcodeBits(0x02)).isEqualTo(DataDirection.CONTROLLER_TO_HOST); // Read
        assertThat(DataDirection.fromOpcodeBits(0x7F)).isEqualTo(DataDirection.BIDIRECTIONAL);
        assertThat(DataDirection.fromOpcodeBits(0xFE)).isEqualTo(DataDirection.CONTROLLER_TO_HOST);
    }
}
