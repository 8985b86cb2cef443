package io.nvmeof4j.protocol.ana;

import io.nvmeof4j.protocol.command.NvmeStatus;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;

class AnaLogPageTest {
    @Test
    void shouldLayOutHeaderDescriptorsAndNsidsAtSpecOffsets() {
        ByteBuffer buffer = ByteBuffer.allocate(AnaLogPage.length(2, 3)).order(ByteOrder.LITTLE_ENDIAN);
        AnaLogPage page = new AnaLogPage().wrap(buffer, 0);
        page.changeCount(7).groupCount(2);
        int next = page.putDescriptor(AnaLogPage.HEADER_LENGTH, 1, 2, 5, AnaState.OPTIMIZED);
        page.nsid(AnaLogPage.HEADER_LENGTH, 0, 1).nsid(AnaLogPage.HEADER_LENGTH, 1, 3);
        int end = page.putDescriptor(next, 2, 1, 6, AnaState.INACCESSIBLE);
        page.nsid(next, 0, 2);

        assertEquals(buffer.capacity(), end);
        assertEquals(7, buffer.getLong(0));
        assertEquals(2, buffer.getShort(8));
        assertEquals(1, buffer.getInt(16));
        assertEquals(2, buffer.getInt(20));
        assertEquals(5, buffer.getLong(24));
        assertEquals(AnaState.OPTIMIZED, buffer.get(32));
        assertEquals(3, buffer.getInt(16 + 32 + 4));
        assertEquals(16 + 32 + 8, page.descriptorOffset(1));
        assertEquals(2, page.groupId(page.descriptorOffset(1)));
        assertEquals(AnaState.INACCESSIBLE, page.state(page.descriptorOffset(1)));
        assertEquals(2, page.nsid(page.descriptorOffset(1), 0));
    }

    @Test
    void shouldMapStatesToPathStatusesAndNvmetNames() {
        assertEquals(NvmeStatus.SUCCESS, AnaState.ioStatus(AnaState.OPTIMIZED));
        assertEquals(NvmeStatus.SUCCESS, AnaState.ioStatus(AnaState.NON_OPTIMIZED));
        assertEquals(0x302, AnaState.ioStatus(AnaState.INACCESSIBLE));
        assertEquals(0x301, AnaState.ioStatus(AnaState.PERSISTENT_LOSS));
        assertEquals(0x303, AnaState.ioStatus(AnaState.CHANGE));
        for (int s : new int[] {1, 2, 3, 4, 0xF}) {
            assertEquals(s, AnaState.parse(AnaState.name(s)));
        }
        assertEquals(AnaState.PERSISTENT_LOSS, AnaState.parse("persistent_loss"));
        assertEquals(-1, AnaState.parse("bogus"));
    }
}
