package io.nvmeof4j.tcp;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link SocketSelector#selectNow()} on real loopback sockets: the sockets an epoll round found readable are read
 * directly by the next rounds (no epoll, the consumer not called) until every {@link SocketSelector#EPOLL_EVERY}th
 * round asks epoll again, which keeps those that brought bytes and drops the others; an idle socket beside them is
 * not read, and its data is seen by that epoll round; more busy
 * sockets than the option allows, a socket waiting for OP_WRITE, or a closed one make the round ask epoll; the option
 * is checked by name.
 */
class SocketSelectorTest {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final List<SelectionKey> readyKeys = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        System.clearProperty(SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME);
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    @Test
    void shouldReadTheSocketEpollFoundReadableDirectlyUntilTheNextEpollRound() throws IOException {
        SocketSelector selector = selector();
        Socket busy = socket(selector);
        Socket idle = socket(selector);

        send(busy, 3);
        assertThat(roundsUntilWork(selector)).isEqualTo(1); // an epoll round: the consumer got the key
        assertThat(readyKeys).containsExactly(busy.key);
        readyKeys.clear();
        busy.onReadable(); // what the poll group's consumer does with a readable key

        for (int round = 1; round < SocketSelector.EPOLL_EVERY; round++) {
            assertThat(selector.selectNow()).isZero();
        }
        assertThat(busy.reads).isEqualTo(SocketSelector.EPOLL_EVERY); // the consumer's read, then one per round
        assertThat(idle.reads).isZero();
        assertThat(readyKeys).isEmpty();

        send(idle, 2);
        assertThat(roundsUntilWork(selector)).isEqualTo(1); // the epoll round, which also picks the sockets anew
        assertThat(readyKeys).containsExactly(idle.key);
        assertThat(busy.reads).isEqualTo(SocketSelector.EPOLL_EVERY);
    }

    @Test
    void shouldReadADirectSocketsNewBytesInTheNextRound() throws IOException {
        SocketSelector selector = selector();
        Socket socket = directSocket(selector);

        send(socket, 5);
        assertThat(roundsUntilWork(selector)).isEqualTo(1);

        assertThat(socket.received).isEqualTo(6);
        assertThat(readyKeys).isEmpty();
    }

    @Test
    void shouldKeepReadingASocketThatBroughtBytesSinceTheLastEpollRoundAndDropOneThatDidNot() throws IOException {
        SocketSelector selector = selector();
        Socket socket = directSocket(selector); // epoll round 0: the socket joins
        send(socket, 1);
        assertThat(roundsUntilWork(selector)).isEqualTo(1); // a direct round brings the byte
        while (socket.reads < SocketSelector.EPOLL_EVERY) {
            selector.selectNow(); // the other direct rounds of the window
        }

        assertThat(selector.selectNow()).isZero(); // the epoll round: nothing ready, the socket stays
        assertThat(selector.selectNow()).isZero();
        assertThat(socket.reads).isEqualTo(SocketSelector.EPOLL_EVERY + 1);

        for (int round = 2; round <= SocketSelector.EPOLL_EVERY; round++) {
            selector.selectNow(); // a window without bytes: the next epoll round drops it
        }
        int reads = socket.reads;
        selector.selectNow();
        assertThat(socket.reads).isEqualTo(reads);
        assertThat(readyKeys).isEmpty();
    }

    @Test
    void shouldAskEpollEveryRoundWhenMoreSocketsAreBusyThanTheOptionAllows() throws IOException {
        SocketSelector selector = selector();
        List<Socket> sockets = List.of(socket(selector), socket(selector), socket(selector));
        for (Socket s : sockets) {
            send(s, 1);
        }
        awaitReady(selector, 3);

        for (int round = 0; round < 5; round++) {
            assertThat(selector.selectNow()).isEqualTo(3); // nobody read them: level-triggered epoll says so again
        }
        assertThat(sockets).allSatisfy(s -> assertThat(s.reads).isZero());
    }

    @Test
    void shouldAskEpollWhileADirectSocketWaitsForOpWrite() throws IOException {
        SocketSelector selector = selector();
        Socket socket = directSocket(selector);

        socket.key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
        assertThat(selector.selectNow()).isEqualTo(1); // an empty socket is writable

        assertThat(readyKeys).containsExactly(socket.key);
        assertThat(socket.reads).isEqualTo(1);
    }

    @Test
    void shouldLetAClosedDirectSocketsRegistrationGoInTheNextRound() throws IOException {
        SocketSelector selector = selector();
        Socket socket = socket(selector);
        send(socket, 1);
        roundsUntilWork(selector);

        socket.channel.close(); // as a queue closes itself
        assertThat(socket.channel.isRegistered()).isTrue(); // the JDK keeps the descriptor until the selector lets go
        selector.selectNow();

        assertThat(socket.channel.isRegistered()).isFalse();
        assertThat(socket.reads).isZero();
    }

    @Test
    void shouldNeverReadDirectlyWhenTheOptionIsZero() throws IOException {
        System.setProperty(SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME, "0");
        SocketSelector selector = selector();
        Socket socket = socket(selector);
        send(socket, 1);
        awaitReady(selector, 1);

        for (int round = 0; round < 5; round++) {
            assertThat(selector.selectNow()).isEqualTo(1);
        }
        assertThat(socket.reads).isZero();
    }

    @Test
    void shouldRefuseAMalformedOptionNamingIt() {
        System.setProperty(SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME, "two");
        assertThatThrownBy(SocketSelector::directReadSocketsFromProperty)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("-Dnvmeof4j.tcp.direct_read_sockets=two: not a whole number; must be 0..64");
        System.setProperty(SocketSelector.DIRECT_READ_SOCKETS_PROP_NAME, "65");
        assertThatThrownBy(() -> new SocketSelector("test poll group", key -> { }))
            .hasMessage("-Dnvmeof4j.tcp.direct_read_sockets=65: must be 0..64");
    }

    // ---- helpers -----------------------------------------------------------------------------------------------

    /** The work of the first round that reported some (loopback bytes arrive at once, but not within the call). */
    private static int roundsUntilWork(SocketSelector selector) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        int work = 0;
        while (work == 0 && System.nanoTime() < deadline) {
            work = selector.selectNow();
        }
        return work;
    }

    /** Waits (bounded) until epoll sees {@code count} sockets readable, without handing them to the consumer. */
    private static void awaitReady(SocketSelector selector, int count) throws IOException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (selector.nioSelector().selectNow() < count && System.nanoTime() < deadline) {
            selector.nioSelector().selectedKeys().clear();
        }
        selector.nioSelector().selectedKeys().clear();
    }

    /** A socket that an epoll round found readable (its byte read as the poll group's consumer reads it). */
    private Socket directSocket(SocketSelector selector) throws IOException {
        Socket socket = socket(selector);
        send(socket, 1);
        roundsUntilWork(selector);
        socket.onReadable();
        readyKeys.clear();
        return socket;
    }

    private static void send(Socket socket, int bytes) throws IOException {
        socket.peer.write(ByteBuffer.allocate(bytes));
    }

    private SocketSelector selector() {
        SocketSelector selector = new SocketSelector("test poll group", readyKeys::add);
        open.add(selector::close);
        return selector;
    }

    private Socket socket(SocketSelector selector) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        open.add(server);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        SocketChannel peer = SocketChannel.open(server.getLocalAddress());
        open.add(peer);
        SocketChannel channel = server.accept();
        open.add(channel);
        channel.configureBlocking(false);
        Socket socket = new Socket(channel, peer);
        socket.key = selector.register(channel, SelectionKey.OP_READ, socket);
        return socket;
    }

    /** A poll group's socket that counts its reads and the bytes they brought. */
    private static final class Socket implements SocketSelector.ReadableSocket {
        final SocketChannel channel;
        final SocketChannel peer;
        final ByteBuffer buffer = ByteBuffer.allocate(64);
        SelectionKey key;
        int reads;
        int received;

        Socket(SocketChannel channel, SocketChannel peer) {
            this.channel = channel;
            this.peer = peer;
        }

        @Override
        public boolean onReadable() {
            reads++;
            buffer.clear();
            try {
                int n = channel.read(buffer);
                received += Math.max(0, n);
                return n > 0;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
