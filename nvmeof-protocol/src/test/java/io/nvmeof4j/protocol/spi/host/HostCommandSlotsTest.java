package io.nvmeof4j.protocol.spi.host;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostCommandSlotsTest {
    private static final int WRITE = 0x01;
    private static final int READ = 0x02;
    private static final int FLUSH = 0x00;

    /** Records what the slots tell the transport, as a transport's slot would act on it. */
    static final class Slot extends HostCommandSlot {
        final List<String> ends = new ArrayList<>();

        Slot(int tag) {
            super(tag);
        }

        @Override
        protected void onEnd(CompletionQueueEntry cqe) {
            // The transport still sees the command's data here, before the slot is freed.
            ends.add(cqe.commandId() + ":" + Integer.toHexString(cqe.status()) + ":" + (data != null));
        }
    }

    private final List<String> completions = new ArrayList<>();
    private final HostCommandCallback callback = (cqe, context) ->
        completions.add(context + ":" + cqe.commandId() + ":" + Integer.toHexString(NvmeStatus.code(cqe.status())));
    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry()
        .wrap(ByteBuffer.allocate(SubmissionQueueEntry.LENGTH).order(ByteOrder.LITTLE_ENDIAN), 0);
    private final ByteBuffer data = ByteBuffer.allocateDirect(8192);

    private static HostCommandSlots<Slot> slots(int depth) {
        Slot[] slots = new Slot[depth];
        for (int tag = 0; tag < depth; tag++) {
            slots[tag] = new Slot(tag);
        }
        return new HostCommandSlots<>("test host", slots);
    }

    @Test
    void shouldGiveEachSlotANewGenerationInItsCidOnEveryReuse() {
        HostCommandSlots<Slot> slots = slots(2);
        List<Integer> cids = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            Slot slot = slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "c" + i);
            cids.add(slot.cid);
            slots.complete(slot, slots.syntheticCqe(slot.cid));
        }
        // Tag 0 every time (the slot just freed is taken again); generation 1..15, then 0 (4 bits, wraps).
        assertThat(cids.subList(0, 3)).containsExactly(0x1000, 0x2000, 0x3000);
        assertThat(cids.get(14)).isEqualTo(0xF000);
        assertThat(cids.get(15)).isEqualTo(0x0000);
        assertThat(cids.get(16)).isEqualTo(0x1000);
        assertThat(slots.outstandingCount()).isZero();
    }

    @Test
    void shouldReturnNullWhenEverySlotIsTakenAndFindOnlyOutstandingCids() {
        HostCommandSlots<Slot> slots = slots(2);
        Slot first = slots.take(sqe.opcode(READ), data, 0, 4096, callback, "a");
        Slot second = slots.take(sqe.opcode(WRITE), data, 4096, 4096, callback, "b");
        assertThat(slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "c")).isNull();
        assertThat(slots.outstandingCount()).isEqualTo(2);
        assertThat(first.tag).isEqualTo(0);
        assertThat(first.hostToController).isFalse();
        assertThat(second.hostToController).isTrue();
        assertThat(second.dataOffset).isEqualTo(4096);
        assertThat(slots.outstanding(first.cid)).isSameAs(first);
        // The same tag with another generation is a stale or bogus CID; a tag beyond the depth is none.
        assertThat(slots.outstanding(first.cid ^ 0x1000)).isNull();
        assertThat(slots.outstanding(0x0FFF)).isNull();
        assertThat(slots.at(5)).isNull();
        assertThat(slots.at(1)).isSameAs(second);
    }

    @Test
    void shouldFreeTheSlotBeforeTheCallbackSoTheCallbackCanSubmitAgain() {
        HostCommandSlots<Slot> slots = slots(1);
        List<Integer> resubmitted = new ArrayList<>();
        HostCommandCallback resubmit = (cqe, context) ->
            resubmitted.add(slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "again").cid);
        Slot slot = slots.take(sqe.opcode(FLUSH), null, 0, 0, resubmit, "first");
        CompletionQueueEntry cqe = slots.syntheticCqe(slot.cid);
        slots.complete(slot, cqe);
        assertThat(resubmitted).containsExactly(0x2000);
        assertThat(slot.ends).containsExactly("4096:0:false");
        assertThat(slots.outstandingCount()).isEqualTo(1);
    }

    @Test
    void shouldFailEveryOutstandingCommandWithTheHostPathErrorAndLeaveAllSlotsFree() {
        HostCommandSlots<Slot> slots = slots(4);
        Slot read = slots.take(sqe.opcode(READ), data, 0, 512, callback, "read");
        Slot done = slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "flush");
        Slot write = slots.take(sqe.opcode(WRITE), data, 512, 512, callback, "write");
        slots.complete(done, slots.syntheticCqe(done.cid));
        slots.failAll(HostStatus.HOST_PATH_ERROR);
        assertThat(completions).containsExactly("flush:" + done.cid + ":0",
            "read:" + read.cid + ":370", "write:" + write.cid + ":370");
        assertThat(read.ends).containsExactly(read.cid + ":370:true");
        assertThat(read.state).isEqualTo(HostCommandSlot.FREE);
        assertThat(read.data).isNull();
        assertThat(slots.outstandingCount()).isZero();
        for (int i = 0; i < 4; i++) {
            assertThat(slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "x")).isNotNull();
        }
    }

    @Test
    void shouldKeepServingAfterACallbackThrows() {
        HostCommandSlots<Slot> slots = slots(1);
        Slot slot = slots.take(sqe.opcode(FLUSH), null, 0, 0, (cqe, context) -> {
            throw new AssertionError("callback bug");
        }, null);
        slots.complete(slot, slots.syntheticCqe(slot.cid));
        assertThat(slots.outstandingCount()).isZero();
        assertThat(slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "next")).isNotNull();
    }

    @Test
    void shouldUntakeWithoutRunningTheCallback() {
        HostCommandSlots<Slot> slots = slots(1);
        Slot slot = slots.take(sqe.opcode(WRITE), data, 0, 512, callback, "never");
        slots.untake(slot);
        assertThat(slots.outstandingCount()).isZero();
        assertThat(slot.ends).isEmpty();
        slots.failAll(HostStatus.HOST_PATH_ERROR);
        assertThat(completions).isEmpty();
    }

    @Test
    void shouldRefuseBadDataRangesWithoutTakingASlot() {
        HostCommandSlots<Slot> slots = slots(1);
        assertThatThrownBy(() -> slots.take(sqe.opcode(READ), data, 8000, 4096, callback, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside the buffer");
        assertThatThrownBy(() -> slots.take(sqe.opcode(READ), null, 0, 512, callback, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside the buffer");
        assertThatThrownBy(() -> slots.take(sqe.opcode(FLUSH), data, 0, 512, callback, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("moves no data");
        assertThatThrownBy(() -> slots.take(sqe.opcode(FLUSH), null, 0, -1, callback, null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative data length");
        assertThat(slots.outstandingCount()).isZero();
        assertThat(slots.take(sqe.opcode(FLUSH), null, 0, 0, callback, "ok")).isNotNull();
    }

    @Test
    void shouldRefuseSlotsWhoseTagIsNotTheirIndex() {
        assertThatThrownBy(() -> new HostCommandSlots<>("test host", new Slot[] {new Slot(1)}))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("slot 0 carries tag 1");
        assertThatThrownBy(() -> new HostCommandSlots<>("test host", new Slot[0]))
            .isInstanceOf(IllegalArgumentException.class);
    }
}
