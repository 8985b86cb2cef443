package io.nvmeof4j.target.backend;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

class NullBlockDeviceTest {
    @Test
    void shouldDropWritesAndReadZeros() {
        try (NullBlockDevice device = new NullBlockDevice("", 1L << 40, 4096)) {
            assertThat(device.blockCount()).isEqualTo((1L << 40) / 4096);
            assertThat(SyncIo.run(device, BlockIo.Op.WRITE, 8192, 4096, SyncIo.pattern(4096, 9), true)).isZero();
            ByteBuffer back = ByteBuffer.allocate(4096);
            RamBlockDeviceTest.fill(back, (byte) 0x33);
            assertThat(SyncIo.run(device, BlockIo.Op.READ, 8192, 4096, back, false)).isZero();
            assertThat(SyncIo.allZero(back, 0, 4096)).isTrue();
            assertThat(SyncIo.run(device, BlockIo.Op.READ, 1L << 40, 4096, back, false))
                .isEqualTo(NvmeStatus.LBA_OUT_OF_RANGE | NvmeStatus.DNR);
            assertThat(device.description()).isEqualTo("null 1 TiB");
        }
    }
}
