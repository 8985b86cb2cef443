package io.nvmeof4j.tcp.host;

import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostPollGroup;
import io.nvmeof4j.protocol.spi.host.HostQueue;
import io.nvmeof4j.protocol.spi.host.HostQueueListener;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTransport;
import io.nvmeof4j.protocol.spi.host.TransportConnectException;
import io.nvmeof4j.protocol.tcp.ICReqPdu;
import io.nvmeof4j.protocol.tcp.ICRespPdu;
import io.nvmeof4j.protocol.tcp.PduType;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import io.nvmeof4j.protocol.spi.host.HostTlsPsk;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;
import io.nvmeof4j.tcp.tls.DerivedPsk;
import io.nvmeof4j.tcp.tls.NvmeTlsKeys;
import io.nvmeof4j.tcp.tls.PskHash;
import io.nvmeof4j.tcp.tls.TcpStream;
import io.nvmeof4j.tcp.tls.TlsStream;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * NVMe/TCP in the host role. {@link #connect} is the Linux host's {@code nvme_tcp_alloc_queue} +
 * {@code nvme_tcp_init_connection}: TCP connect with TCP_NODELAY, ICReq (PFV 0, HPDA 0, the digests asked for,
 * MAXR2T 0), then ICResp checked field by field (type, PLEN 128, PFV 0, digest bits exactly echoed, CPDA 0,
 * MAXH2CDATA at least 4096 and a multiple of 4). Every wait is bounded by the options' connect timeout, and every
 * failure names the peer and the step.
 */
public final class TcpHostTransport implements HostTransport {
    private volatile boolean closed;

    @Override
    public TransportType type() {
        return TransportType.TCP;
    }

    @Override
    public TcpHostPollGroup createPollGroup() {
        if (closed) {
            throw new IllegalStateException("NVMe/TCP host transport is closed");
        }
        return new TcpHostPollGroup();
    }

    @Override
    public HostQueue connect(HostPollGroup group, TransportAddress address, HostQueueOptions options,
                             HostQueueListener listener) throws IOException {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(options, "options");
        if (!(group instanceof TcpHostPollGroup)) {
            throw new IllegalArgumentException("poll group " + group + " is not an NVMe/TCP host poll group");
        }
        if (address.type() != TransportType.TCP) {
            throw new IllegalArgumentException("not a TCP address: " + address);
        }
        if (closed) {
            throw new IllegalStateException("NVMe/TCP host transport is closed");
        }
        TcpHostPollGroup tcpGroup = (TcpHostPollGroup) group;
        String where = address.toString();
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        InetSocketAddress remote;
        try {
            remote = new InetSocketAddress(address.inetAddress(), address.port());
        } catch (UnknownHostException e) {
            throw new TransportConnectException(where, TransportConnectException.STEP_RESOLVE,
                "'" + address.traddr() + "' is not an IP address; TRADDR is an IPv4 or IPv6 address (host names are "
                    + "not resolved, so a connect never waits on DNS)", e);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new TransportConnectException(where, TransportConnectException.STEP_RESOLVE, e.getMessage(), e);
        }
        SocketChannel channel = SocketChannel.open();
        boolean handedOver = false;
        try (Selector selector = Selector.open()) {
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            int maxH2CData;
            TcpStream stream;
            try {
                connectSocket(channel, selector, remote, deadline, where);
                stream = options.tls() == null ? TcpStream.plain(channel)
                    : tlsHandshake(channel, selector, options.tls(), deadline, where);
                maxH2CData = initializeConnection(stream, selector, options, deadline, where);
            } finally {
                for (SelectionKey key : selector.keys()) {
                    key.cancel();
                }
                selector.selectNow(); // flush the cancelled key so the channel can join the group's selector
            }
            String peer = describe(channel);
            TcpHostQueue queue = new TcpHostQueue(tcpGroup, stream, address, peer, options, maxH2CData, listener);
            register(tcpGroup, queue, deadline, where);
            handedOver = true;
            return queue;
        } finally {
            if (!handedOver) {
                closeQuietly(channel);
            }
        }
    }

    private static void connectSocket(SocketChannel channel, Selector selector, InetSocketAddress remote,
                                      long deadline, String where) throws TransportConnectException {
        try {
            if (channel.connect(remote)) {
                return;
            }
            channel.register(selector, SelectionKey.OP_CONNECT);
            while (true) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new TransportConnectException(where, TransportConnectException.STEP_CONNECT,
                        "no connection within the connect timeout", null);
                }
                selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                if (channel.finishConnect()) {
                    return;
                }
            }
        } catch (TransportConnectException e) {
            throw e;
        } catch (IOException e) {
            throw new TransportConnectException(where, TransportConnectException.STEP_CONNECT,
                e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
    }

    /**
     * TLS 1.3 with the PSK identity libnvme would derive (NVMe/TCP 1.0c 3.6.1), or the kernel for a PSK that
     * DH-HMAC-CHAP generated, before anything else.
     */
    private static TcpStream tlsHandshake(SocketChannel channel, Selector selector, HostTlsPsk tls, long deadline,
                                          String where) throws TransportConnectException {
        String step = TransportConnectException.STEP_TLS;
        DerivedPsk psk;
        try {
            psk = tls.generated() != null
                ? NvmeTlsKeys.deriveGenerated(PskHash.byId(tls.generated().hash().id()), tls.generated().key(),
                    tls.hostNqn(), tls.subsystemNqn())
                : NvmeTlsKeys.derive(ConfiguredPsk.parse(tls.configuredPsk()), tls.hostNqn(), tls.subsystemNqn(),
                    tls.identityVersion(), tls.libnvmeCompat() ? NvmeTlsKeys.Derivation.LIBNVME_COMPAT
                        : NvmeTlsKeys.Derivation.RFC8446);
        } catch (IllegalArgumentException e) {
            throw new TransportConnectException(where, step, "TLS PSK: " + e.getMessage(), null);
        }
        try {
            TlsStream stream = TlsStream.client(channel, psk);
            SelectionKey key = channel.register(selector, 0);
            while (!stream.handshake()) {
                key.interestOps(stream.hasPendingOutput() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                waitReady(selector, deadline, where, step, "TLS handshake not finished within the connect timeout"
                    + " (identity " + psk.identity() + ")");
            }
            return stream;
        } catch (TransportConnectException e) {
            throw e;
        } catch (IOException e) {
            throw new TransportConnectException(where, step, e.getMessage() == null ? e.toString() : e.getMessage(), e);
        } finally {
            psk.clear();
        }
    }

    /** ICReq out, ICResp in and checked; returns MAXH2CDATA. */
    private static int initializeConnection(TcpStream stream, Selector selector, HostQueueOptions options,
                                            long deadline, String where) throws TransportConnectException {
        SocketChannel channel = stream.channel();
        String step = TransportConnectException.STEP_ICREQ;
        int digest = (options.headerDigest() ? ICReqPdu.DIGEST_HEADER : 0)
            | (options.dataDigest() ? ICReqPdu.DIGEST_DATA : 0);
        ByteBuffer icreq = ByteBuffer.allocate(ICReqPdu.PDU_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        new ICReqPdu().wrap(icreq, 0).init().pduFormatVersion(ICReqPdu.PFV_1_0).hostPduDataAlignment(0)
            .digest(digest).maxR2T(0);
        ByteBuffer icresp = ByteBuffer.allocate(ICRespPdu.PDU_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        try {
            SelectionKey key = channel.keyFor(selector);
            if (key == null) {
                key = channel.register(selector, 0);
            }
            ByteBuffer[] icreqIov = {icreq};
            while (icreq.hasRemaining() || !stream.flushPending()) {
                stream.write(icreqIov, 0, 1);
                if (icreq.hasRemaining() || stream.hasPendingOutput()) {
                    key.interestOps(SelectionKey.OP_WRITE);
                    waitReady(selector, deadline, where, step, "ICReq not sent within the connect timeout");
                }
            }
            key.interestOps(SelectionKey.OP_READ);
            while (icresp.hasRemaining()) {
                int n = stream.read(icresp);
                if (n < 0) {
                    throw new TransportConnectException(where, step, "controller closed the connection after "
                        + icresp.position() + " bytes of ICResp", null);
                }
                if (n == 0) {
                    waitReady(selector, deadline, where, step, "no ICResp within the connect timeout ("
                        + icresp.position() + " of 128 bytes received)");
                }
            }
        } catch (TransportConnectException e) {
            throw e;
        } catch (IOException e) {
            throw new TransportConnectException(where, step, e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
        ICRespPdu resp = new ICRespPdu().wrap(icresp, 0);
        if (resp.pduType() != PduType.IC_RESP) {
            throw new TransportConnectException(where, step, "expected ICResp, got " + PduType.name(resp.pduType())
                + (resp.pduType() == PduType.C2H_TERM_REQ ? " (the controller rejected the ICReq)" : ""), null);
        }
        if (resp.pduLength() != ICRespPdu.PDU_LENGTH) {
            throw new TransportConnectException(where, step, "ICResp PLEN " + resp.pduLength() + ", expected 128", null);
        }
        if (resp.pduFormatVersion() != ICReqPdu.PFV_1_0) {
            throw new TransportConnectException(where, step, "ICResp PFV " + resp.pduFormatVersion()
                + ", expected 0", null);
        }
        if ((resp.digest() & (ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA)) != digest) {
            throw new TransportConnectException(where, step, "ICResp digest bits 0x" + Integer.toHexString(resp.digest())
                + " do not echo the requested 0x" + Integer.toHexString(digest), null);
        }
        if (resp.controllerPduDataAlignment() != 0) {
            throw new TransportConnectException(where, step, "ICResp CPDA " + resp.controllerPduDataAlignment()
                + " not supported (only 0, as the Linux host)", null);
        }
        long maxH2CData = resp.maxH2CDataLength();
        if (maxH2CData < ICRespPdu.MIN_MAX_H2C_DATA || (maxH2CData & 3) != 0) {
            throw new TransportConnectException(where, step, "ICResp MAXH2CDATA " + maxH2CData
                + " invalid (at least 4096 and a multiple of 4)", null);
        }
        return (int) Math.min(maxH2CData, 1 << 30);
    }

    private static void waitReady(Selector selector, long deadline, String where, String step, String timeoutMessage)
        throws IOException {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new TransportConnectException(where, step, timeoutMessage, null);
        }
        selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        selector.selectedKeys().clear();
    }

    private static void register(TcpHostPollGroup group, TcpHostQueue queue, long deadline, String where)
        throws TransportConnectException {
        String step = TransportConnectException.STEP_REGISTER;
        if (group.inPollGroupThread()) {
            try {
                group.register(queue);
                return;
            } catch (IOException e) {
                throw new TransportConnectException(where, step, e.getMessage(), e);
            }
        }
        CompletableFuture<Void> registered = new CompletableFuture<>();
        try {
            group.execute(() -> {
                try {
                    group.register(queue);
                    registered.complete(null);
                } catch (IOException | RuntimeException e) {
                    registered.completeExceptionally(e);
                }
            });
        } catch (IllegalStateException e) {
            throw new TransportConnectException(where, step, e.getMessage(), e);
        }
        try {
            registered.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // The task may still run later: make sure the queue it registers is closed.
            registered.completeExceptionally(e);
            queue.close("registration timed out");
            throw new TransportConnectException(where, step, "poll group did not take the queue within the "
                + "connect timeout (is its reactor thread running?)", e);
        } catch (ExecutionException e) {
            throw new TransportConnectException(where, step, String.valueOf(e.getCause().getMessage()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportConnectException(where, step, "interrupted", e);
        }
    }

    private static String describe(SocketChannel channel) {
        try {
            return hostPort(channel.getRemoteAddress()) + " from " + hostPort(channel.getLocalAddress());
        } catch (IOException e) {
            return String.valueOf(channel);
        }
    }

    private static String hostPort(java.net.SocketAddress address) {
        if (address instanceof InetSocketAddress) {
            InetSocketAddress inet = (InetSocketAddress) address;
            String host = inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString();
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + inet.getPort();
        }
        return String.valueOf(address);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // the socket is being thrown away
        }
    }

    @Override
    public void close() {
        closed = true;
    }
}
