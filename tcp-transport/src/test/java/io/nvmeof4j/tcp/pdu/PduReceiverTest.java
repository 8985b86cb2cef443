package io.nvmeof4j.tcp.pdu;

import io.nvmeof4j.protocol.tcp.Crc32cDigest;
import io.nvmeof4j.protocol.tcp.PduType;
import io.nvmeof4j.protocol.tcp.TermReqPdu;
import io.nvmeof4j.tcp.tls.TcpStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.nvmeof4j.tcp.pdu.TestPdus.le;
import static io.nvmeof4j.tcp.pdu.TestPdus.pattern;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The receive half of the PDU engine over a real loopback socket, with a minimal role that takes data PDUs of HLEN 24
 * (DATAL at byte 16) into one destination buffer, as both roles do with their data PDUs.
 */
class PduReceiverTest {
    private SocketPair pair;
    private Role role;
    private PduReceiver receiver;

    @BeforeEach
    void open() throws IOException {
        pair = new SocketPair();
    }

    @AfterEach
    void close() throws IOException {
        pair.close();
    }

    private void start(int headerDigest, int dataDigest, int destinationSize) {
        role = new Role(destinationSize, headerDigest, dataDigest);
        receiver = new PduReceiver(role, new Crc32cDigest(), TcpStream.plain(pair.near), 4096);
        receiver.digests(headerDigest, dataDigest);
        role.receiver = receiver;
    }

    /** Sends {@code bytes} in pieces cut at {@code cuts}, letting the receiver read after each piece. */
    private void deliver(byte[] bytes, int... cuts) throws IOException {
        int from = 0;
        for (int i = 0; i <= cuts.length; i++) {
            int to = i < cuts.length ? cuts[i] : bytes.length;
            pair.send(bytes, from, to - from);
            assertThat(pair.awaitReadable(5_000)).as("bytes arrived").isTrue();
            receiver.onReadable();
            from = to;
        }
        // A piece may arrive in parts: read on until the socket stays quiet (bounded).
        for (int rounds = 0; rounds < 100 && pair.awaitReadable(20); rounds++) {
            receiver.onReadable();
        }
    }

    private static int[] everyByte(int length) {
        int[] cuts = new int[length - 1];
        for (int i = 0; i < cuts.length; i++) {
            cuts[i] = i + 1;
        }
        return cuts;
    }

    @Test
    void shouldFramePdusDeliveredOneByteAtATime() throws IOException {
        start(4, 4, 4096);
        byte[] first = pattern(1000, 1);
        byte[] second = pattern(20, 2);
        byte[] stream = concat(dataPdu(first, true, true), dataPdu(second, true, true), termReq(24 + 8, 2, 77));
        deliver(stream, everyByte(stream.length));
        assertThat(role.events).containsExactly("payload 1000", "payload 20", "TermReq FES 2 FEI 77");
        assertThat(Arrays.copyOf(role.received.toByteArray(), 1020)).isEqualTo(concat(first, second));
    }

    @Test
    void shouldSayWhetherAReadBroughtBytes() throws IOException {
        start(0, 0, 4096);
        assertThat(receiver.onReadable()).as("an empty socket (a direct read that finds nothing)").isFalse();

        byte[] pdu = dataPdu(pattern(100, 5), false, false);
        pair.send(pdu, 0, pdu.length);
        assertThat(pair.awaitReadable(5_000)).as("bytes arrived").isTrue();
        assertThat(receiver.onReadable()).isTrue();
        for (int rounds = 0; rounds < 100 && pair.awaitReadable(20); rounds++) {
            receiver.onReadable(); // the PDU may arrive in parts
        }

        assertThat(receiver.onReadable()).isFalse();
        assertThat(role.events).containsExactly("payload 100");
    }

    @Test
    void shouldFrameTheSameStreamWhateverTheSplit() throws IOException {
        start(4, 4, 1 << 20);
        byte[] a = pattern(100, 3);
        byte[] b = pattern(30, 4);
        byte[] stream = concat(dataPdu(a, true, true), dataPdu(b, true, true));
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        List<String> expectedEvents = new ArrayList<>();
        for (int cut = 1; cut < stream.length; cut++) {
            deliver(stream, cut);
            expected.write(a);
            expected.write(b);
            expectedEvents.add("payload 100");
            expectedEvents.add("payload 30");
        }
        assertThat(role.events).isEqualTo(expectedEvents);
        assertThat(role.received.toByteArray()).isEqualTo(expected.toByteArray());
    }

    @Test
    void shouldReadALargePayloadStraightIntoItsBuffer() throws IOException {
        start(0, 4, 1 << 20);
        byte[] large = pattern(48 << 10, 5);
        byte[] pdu = dataPdu(large, false, true);
        // The header alone first: the payload then finds the receive buffer empty and is read into its buffer.
        deliver(pdu, 24, 24 + 16_384);
        assertThat(role.events).containsExactly("payload " + large.length);
        assertThat(role.received.toByteArray()).isEqualTo(large);
    }

    @Test
    void shouldReadTheHeaderAloneAfterALargePayloadSoThatTheNextGoesStraightIntoItsBuffer() throws IOException {
        for (int dataDigest : new int[] {0, 4}) {
            start(0, dataDigest, 1 << 20);
            byte[] a = pattern(32 << 10, 6);
            byte[] b = pattern(32 << 10, 7);
            byte[] small = pattern(100, 8);
            byte[] stream = concat(dataPdu(a, false, dataDigest > 0), dataPdu(b, false, dataDigest > 0),
                dataPdu(small, false, dataDigest > 0));
            deliver(stream); // all of it in the socket at once, as at a queue depth
            assertThat(role.events).containsExactly("payload " + a.length, "payload " + b.length, "payload 100");
            assertThat(role.received.toByteArray()).isEqualTo(concat(a, b, small));
            // The first read fills the 4 KiB receive buffer (header and the start of a); after a went straight into
            // its buffer, each read takes a header's worth: b's start and the small payload are all that is copied.
            assertThat(receiver.stagedPayloadBytes()).as("digest %d", dataDigest)
                .isEqualTo(4096 - 24 + (PduReceiver.HEADER_READ_BYTES - 24 - dataDigest) + small.length);
            close();
            open();
        }
    }

    @Test
    void shouldReadTheRestOfAPayloadStraightIntoItsBufferOnceItsStartWentThere() throws IOException {
        start(0, 0, 1 << 20);
        byte[] large = pattern(32 << 10, 9);
        // The header alone, most of the payload, then a tail below the direct-read threshold.
        deliver(dataPdu(large, false, false), 24, 24 + 28_000);
        assertThat(role.events).containsExactly("payload " + large.length);
        assertThat(role.received.toByteArray()).isEqualTo(large);
        assertThat(receiver.stagedPayloadBytes()).isZero();
    }

    @Test
    void shouldReportADataDigestMismatchWithBothValues() throws IOException {
        start(4, 4, 4096);
        byte[] data = pattern(512, 6);
        byte[] pdu = dataPdu(data, true, true);
        int sent = le(pdu).getInt(pdu.length - 4) ^ 0x10;
        le(pdu).putInt(pdu.length - 4, sent);
        deliver(pdu, everyByte(pdu.length));
        assertThat(role.events).containsExactly("data digest received " + sent + " computed "
            + Crc32cDigest.of(data, 0, data.length));
    }

    @Test
    void shouldLetTheRoleFindAHeaderDigestMismatch() throws IOException {
        start(4, 0, 4096);
        byte[] pdu = dataPdu(pattern(64, 7), true, false);
        pdu[8] ^= 0x01; // a PDU-specific header byte
        deliver(pdu);
        assertThat(role.events).containsExactly("header digest mismatch");
    }

    @Test
    void shouldFrameTermReqsAndReportBadLengthsAsMalformed() throws IOException {
        start(0, 0, 4096);
        deliver(termReq(23, 1, 2));
        assertThat(role.events).containsExactly("malformed TermReq HLEN 24 PLEN 23");
        start(0, 0, 4096);
        deliver(termReq(TermReqPdu.MAX_PDU_LENGTH + 1, 1, 2));
        assertThat(role.events).containsExactly("malformed TermReq HLEN 24 PLEN 153");
        start(0, 0, 4096);
        byte[] longest = termReq(TermReqPdu.MAX_PDU_LENGTH, 5, 0x1234);
        deliver(longest, everyByte(30));
        assertThat(role.events).containsExactly("TermReq FES 5 FEI 4660");
    }

    @Test
    void shouldSkipDiscardedBytesAndFrameWhatFollows() throws IOException {
        start(0, 4, 4096);
        role.discardNext = true;
        byte[] kept = pattern(40, 8);
        byte[] stream = concat(dataPdu(pattern(3000, 9), false, true), dataPdu(kept, false, true));
        deliver(stream, 10, 1000, 3030);
        assertThat(role.events).containsExactly("discarded 3004", "payload 40");
        assertThat(role.received.toByteArray()).isEqualTo(kept);
    }

    @Test
    void shouldQuoteTheOffendingHeaderWithItsDigestInATermReq() throws IOException {
        start(4, 0, 4096);
        role.terminateOnHeader = true;
        byte[] pdu = dataPdu(pattern(16, 10), true, false);
        deliver(pdu);
        ControlPduJob job = role.termReq;
        ByteBuffer sent = job.pdu;
        assertThat(sent.limit()).isEqualTo(24 + 28);
        assertThat(sent.get(0)).isEqualTo((byte) PduType.C2H_TERM_REQ);
        assertThat(sent.get(2)).isEqualTo((byte) 24);
        assertThat(sent.getInt(4)).isEqualTo(24 + 28);
        assertThat(sent.getShort(8)).isEqualTo((short) TermReqPdu.FES_HEADER_DIGEST_ERROR);
        assertThat(sent.getInt(10)).isEqualTo(16);
        byte[] quoted = new byte[28];
        sent.get(24, quoted);
        assertThat(quoted).isEqualTo(Arrays.copyOf(pdu, 28));
    }

    @Test
    void shouldReportTheEndOfTheStreamAndDrainUntilIt() throws IOException {
        start(0, 0, 4096);
        receiver.drain();
        pair.send(pattern(5000, 11), 0, 5000); // what a peer still sends after our TermReq is dropped
        pair.awaitReadable(5_000);
        assertThat(receiver.onReadable()).as("dropped bytes count as bytes").isTrue();
        pair.far.close();
        for (int spins = 0; spins < 100 && role.events.isEmpty(); spins++) {
            pair.awaitReadable(5_000);
            receiver.onReadable();
        }
        assertThat(role.events).containsExactly("end of stream");
        assertThat(role.received.size()).isZero();
    }

    // ---- a minimal role ----------------------------------------------------------------------------------------

    private static final class Role implements PduReceiver.Handler {
        final List<String> events = new ArrayList<>();
        final ByteArrayOutputStream received = new ByteArrayOutputStream();
        final ByteBuffer destination;
        final ControlPduJob termReq = new ControlPduJob(TermReqPdu.MAX_PDU_LENGTH, null);
        final int headerDigest;
        PduReceiver receiver;
        boolean discardNext;
        boolean terminateOnHeader;

        Role(int destinationSize, int headerDigest, int dataDigest) {
            destination = ByteBuffer.allocateDirect(destinationSize);
            this.headerDigest = headerDigest;
        }

        @Override
        public boolean onPduHeader(int type, int flags, int hlen, int pdo, long plen, int available) {
            if (type == PduType.C2H_TERM_REQ) {
                return receiver.receiveTermReq(hlen, plen, available);
            }
            if (terminateOnHeader) {
                termReq.armTermReq(PduType.C2H_TERM_REQ, TermReqPdu.FES_HEADER_DIGEST_ERROR, 16, receiver);
                receiver.stop();
                return false;
            }
            if (available < pdo) {
                return false;
            }
            if (!receiver.headerDigestMatches(hlen)) {
                events.add("header digest mismatch");
                receiver.stop();
                return false;
            }
            int datal = (int) receiver.u32(16);
            receiver.consume(pdo);
            if (discardNext) {
                discardNext = false;
                events.add("discarded " + (plen - pdo));
                receiver.discard(plen - pdo);
                return true;
            }
            receiver.receivePayload(destination, 0, datal);
            return true;
        }

        @Override
        public void onPayloadReceived(int length) {
            events.add("payload " + length);
            byte[] bytes = new byte[length];
            destination.get(0, bytes);
            received.writeBytes(bytes);
        }

        @Override
        public void onDataDigestError(int receivedDigest, int computed) {
            events.add("data digest received " + receivedDigest + " computed " + computed);
            receiver.stop();
        }

        @Override
        public void onTermReq(int fes, long fei) {
            events.add("TermReq FES " + fes + " FEI " + fei);
            receiver.stop();
        }

        @Override
        public void onMalformedTermReq(int hlen, long plen) {
            events.add("malformed TermReq HLEN " + hlen + " PLEN " + plen);
            receiver.stop();
        }

        @Override
        public void onStreamEnded(IOException error) {
            events.add(error == null ? "end of stream" : "read failed");
            receiver.stop();
        }

        @Override
        public void readLater() {
            events.add("read later");
        }
    }

    // ---- PDUs --------------------------------------------------------------------------------------------------

    /** A data PDU of HLEN 24 (C2HData's layout: DATAL at 16) with the digests asked for. */
    private static byte[] dataPdu(byte[] data, boolean headerDigest, boolean dataDigest) {
        return TestPdus.c2hData(0, data, headerDigest, dataDigest, false);
    }

    /** A C2HTermReq with PLEN {@code plen} (HLEN 24 and error data up to it, or just the header when shorter). */
    private static byte[] termReq(int plen, int fes, int fei) {
        byte[] pdu = new byte[Math.max(24, plen)];
        le(pdu).put(0, (byte) PduType.C2H_TERM_REQ).put(2, (byte) 24).putInt(4, plen).putShort(8, (short) fes)
            .putInt(10, fei);
        return pdu;
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }
}
