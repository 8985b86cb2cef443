package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.auth.DhchapSecret;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import io.nvmeof4j.protocol.spi.host.HostTlsPsk;
import io.nvmeof4j.tcp.tls.ConfiguredPsk;

import java.time.Duration;
import java.util.Objects;

/**
 * How to connect to a controller (and, for {@link NvmeofHost#discover}, to a discovery controller). Defaults follow
 * the Linux host ({@code nvme connect}) where it has one; change them with the {@code with*} methods.
 *
 * @param ioQueues              I/O queues to create (Linux: one per CPU), each its own connection; the controller may
 *                              grant fewer (Set Features Number of Queues)
 * @param queueDepth            entries per I/O queue (Linux {@code queue_size} 128), clamped to MQES + 1 and MAXCMD
 * @param keepAliveTimeout      KATO sent in the admin Connect (Linux 5 s); the host sends Keep Alive every KATO/2.
 *                              Zero disables keep-alive (the default for discovery)
 * @param headerDigest          CRC32C header digests ({@code --hdr-digest})
 * @param dataDigest            CRC32C data digests ({@code --data-digest})
 * @param disableSqFlowControl  Connect with CATTR bit 2 (what libnvme does when the discovery entry's TREQ bit 2 is
 *                              set): the controller may then finish a read with the C2HData SUCCESS flag, saving a PDU
 * @param connectTimeout        bound on each queue's transport connect and on each bring-up command
 * @param commandTimeout        per I/O command (Linux {@code io_timeout} 30 s): a command without completion in time
 *                              fails with HOST_ABORTED_COMMAND, and the controller is reset and reconnected
 * @param adminTimeout          per admin command (Linux 60 s)
 * @param reconnectDelay        first wait before reconnecting after a failure (Linux {@code reconnect_delay} 10 s); each
 *                              failed attempt doubles it, up to {@code maxReconnectDelay}
 * @param maxReconnectDelay     back-off ceiling
 * @param controllerLossTimeout how long to keep reconnecting (Linux {@code ctrl_loss_tmo} 600 s); then waiting I/O fails
 * @param maxOutstandingRequests per I/O queue: requests the callback API accepts at once (queued in the host when
 *                              the queue is full); preallocated, so it bounds memory
 * @param dhchapSecret          DH-HMAC-CHAP host secret, used when the controller requires authentication, or null
 * @param dhchapControllerSecret DH-HMAC-CHAP controller secret (bidirectional), or null; needs a host secret
 * @param tls                   NVMe/TCP TLS 1.3 with a configured PSK on every queue ({@code nvme connect --tls
 *                              --tls-key}), or null for plain NVMe/TCP
 * @param secureChannelConcat   secure channel concatenation ({@code nvme connect --concat}, NVMe/TCP only): the
 *                              admin queue connects without TLS and authenticates with DH-HMAC-CHAP (SC_C
 *                              NEWTLSPSK, a DH group, the host secret), which generates a TLS PSK; then the admin
 *                              and every I/O queue connect again, TLS 1.3 under that PSK. Needs {@code dhchapSecret};
 *                              excludes {@code tls}. Each (re)connect generates a new PSK
 */
public record ConnectOptions(int ioQueues, int queueDepth, Duration keepAliveTimeout, boolean headerDigest,
                             boolean dataDigest, boolean disableSqFlowControl, Duration connectTimeout,
                             Duration commandTimeout, Duration adminTimeout, Duration reconnectDelay,
                             Duration maxReconnectDelay, Duration controllerLossTimeout, int maxOutstandingRequests,
                             DhchapSecret dhchapSecret, DhchapSecret dhchapControllerSecret,
                             Tls tls, boolean secureChannelConcat) {
    public static final int QUEUE_DEPTH_DEFAULT = 128;
    public static final Duration KEEP_ALIVE_TIMEOUT_DEFAULT = Duration.ofSeconds(5);
    public static final Duration COMMAND_TIMEOUT_DEFAULT = Duration.ofSeconds(30);
    public static final Duration ADMIN_TIMEOUT_DEFAULT = Duration.ofSeconds(60);
    public static final Duration RECONNECT_DELAY_DEFAULT = Duration.ofSeconds(10);
    public static final Duration MAX_RECONNECT_DELAY_DEFAULT = Duration.ofSeconds(60);
    public static final Duration CONTROLLER_LOSS_TIMEOUT_DEFAULT = Duration.ofSeconds(600);

    public ConnectOptions {
        if (ioQueues < 1 || ioQueues > 256) {
            throw new IllegalArgumentException("I/O queues " + ioQueues + " outside 1..256");
        }
        if (queueDepth < 2 || queueDepth > HostQueueOptions.MAX_DEPTH) {
            throw new IllegalArgumentException("queue depth " + queueDepth + " outside 2.." + HostQueueOptions.MAX_DEPTH);
        }
        positive(connectTimeout, "connectTimeout");
        positive(commandTimeout, "commandTimeout");
        positive(adminTimeout, "adminTimeout");
        positive(reconnectDelay, "reconnectDelay");
        positive(maxReconnectDelay, "maxReconnectDelay");
        Objects.requireNonNull(keepAliveTimeout, "keepAliveTimeout");
        Objects.requireNonNull(controllerLossTimeout, "controllerLossTimeout");
        if (keepAliveTimeout.isNegative() || controllerLossTimeout.isNegative()) {
            throw new IllegalArgumentException("negative keep-alive or controller-loss timeout");
        }
        if (keepAliveTimeout.toMillis() > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("keep-alive timeout " + keepAliveTimeout + " does not fit KATO");
        }
        if (dhchapControllerSecret != null && dhchapSecret == null) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP controller secret needs a host secret");
        }
        if (maxOutstandingRequests < 1) {
            throw new IllegalArgumentException("max outstanding requests " + maxOutstandingRequests + " below 1");
        }
    }

    private static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " " + d + " must be positive");
        }
    }

    /** Linux host defaults; I/O queues: one per CPU, at most 4. */
    public static ConnectOptions defaults() {
        return new ConnectOptions(Math.min(4, Runtime.getRuntime().availableProcessors()), QUEUE_DEPTH_DEFAULT,
            KEEP_ALIVE_TIMEOUT_DEFAULT, false, false, false, HostQueueOptions.CONNECT_TIMEOUT_DEFAULT,
            COMMAND_TIMEOUT_DEFAULT, ADMIN_TIMEOUT_DEFAULT, RECONNECT_DELAY_DEFAULT, MAX_RECONNECT_DELAY_DEFAULT,
            CONTROLLER_LOSS_TIMEOUT_DEFAULT, 1024, null, null, null, false);
    }

    /** For {@link NvmeofHost#discover}: no keep-alive, as {@code nvme discover} without {@code --persistent}. */
    public static ConnectOptions discoveryDefaults() {
        return defaults().withKeepAliveTimeout(Duration.ZERO);
    }

    public ConnectOptions withIoQueues(int n) {
        return new ConnectOptions(n, queueDepth, keepAliveTimeout, headerDigest, dataDigest, disableSqFlowControl,
            connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay, controllerLossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    public ConnectOptions withQueueDepth(int depth) {
        return new ConnectOptions(ioQueues, depth, keepAliveTimeout, headerDigest, dataDigest, disableSqFlowControl,
            connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay, controllerLossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    public ConnectOptions withKeepAliveTimeout(Duration kato) {
        return new ConnectOptions(ioQueues, queueDepth, kato, headerDigest, dataDigest, disableSqFlowControl,
            connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay, controllerLossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    public ConnectOptions withDigests(boolean header, boolean data) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, header, data, disableSqFlowControl,
            connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay, controllerLossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    public ConnectOptions withDisableSqFlowControl(boolean disable) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest, disable,
            connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay, controllerLossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    public ConnectOptions withConnectTimeout(Duration timeout) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, timeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls,
            secureChannelConcat);
    }

    public ConnectOptions withCommandTimeout(Duration timeout) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, timeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls,
            secureChannelConcat);
    }

    public ConnectOptions withAdminTimeout(Duration timeout) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, timeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls,
            secureChannelConcat);
    }

    public ConnectOptions withReconnect(Duration delay, Duration maxDelay, Duration lossTimeout) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, adminTimeout, delay, maxDelay, lossTimeout,
            maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    /** {@code queue} with this connection's TLS settings for {@code host} and {@code subsystemNqn}. */
    HostQueueOptions queueOptions(HostQueueOptions queue, HostIdentity host, String subsystemNqn) {
        return tls == null ? queue : queue.withTls(tls.forQueue(host.hostNqn().value(), subsystemNqn));
    }

    /** TLS 1.3 with this configured PSK ({@code NVMeTLSkey-1:hh:...:}) and PSK identity version 1. */
    public ConnectOptions withTls(String configuredPsk) {
        return withTls(new Tls(configuredPsk, 1, false));
    }

    public ConnectOptions withTls(Tls settings) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, settings,
            secureChannelConcat);
    }

    /**
     * The host's configured TLS PSK, the PSK identity version to offer (1, with the PSK digest, as libnvme's
     * {@code --identity 1}; 0 for controllers that only know the older identity), and whether to derive the
     * TLS PSK as libnvme before 1.16 did (a Linux target whose keys an older nvme-cli inserted).
     */
    public record Tls(String configuredPsk, int identityVersion, boolean libnvmeCompat) {
        public Tls {
            ConfiguredPsk.parse(configuredPsk); // fail here, naming the problem (never the key), not at connect
            if (identityVersion != 0 && identityVersion != 1) {
                throw new IllegalArgumentException("PSK identity version " + identityVersion + " is not 0 or 1");
            }
        }

        /** The queue-level settings for one host and subsystem. */
        public HostTlsPsk forQueue(String hostNqn, String subsystemNqn) {
            return new HostTlsPsk(configuredPsk, hostNqn, subsystemNqn, identityVersion, libnvmeCompat);
        }

        @Override
        public String toString() {
            return "Tls[identity v" + identityVersion + (libnvmeCompat ? ", libnvme compat" : "") + "]";
        }
    }

    /**
     * Secure channel concatenation ({@code nvme connect --concat}): TLS under a PSK that DH-HMAC-CHAP generates on
     * a first admin connection without TLS. Needs {@link #withDhchap}; not with {@link #withTls}.
     */
    public ConnectOptions withSecureChannelConcat(boolean concat) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, dhchapSecret, dhchapControllerSecret, tls, concat);
    }

    public ConnectOptions withMaxOutstandingRequests(int n) {
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, n, dhchapSecret, dhchapControllerSecret, tls, secureChannelConcat);
    }

    /**
     * DH-HMAC-CHAP secrets in the {@code DHHC-1:hh:<base64>:} form ({@code nvme gen-dhchap-key}); the controller
     * secret may be null (unidirectional).
     *
     * @throws IllegalArgumentException when a secret is malformed (the message never quotes it)
     */
    public ConnectOptions withDhchap(String hostSecret, String controllerSecret) {
        DhchapSecret host = hostSecret == null ? null : DhchapSecret.parse(hostSecret);
        DhchapSecret ctrl = controllerSecret == null ? null : DhchapSecret.parse(controllerSecret);
        return new ConnectOptions(ioQueues, queueDepth, keepAliveTimeout, headerDigest, dataDigest,
            disableSqFlowControl, connectTimeout, commandTimeout, adminTimeout, reconnectDelay, maxReconnectDelay,
            controllerLossTimeout, maxOutstandingRequests, host, ctrl, tls, secureChannelConcat);
    }
}
