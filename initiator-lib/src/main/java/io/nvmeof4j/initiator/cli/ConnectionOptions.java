package io.nvmeof4j.initiator.cli;

import java.nio.file.Path;

import java.nio.file.Files;

import java.io.IOException;

import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.HostIdentity;
import io.nvmeof4j.initiator.IoPolicy;
import io.nvmeof4j.protocol.spi.TransportAddress;
import io.nvmeof4j.protocol.spi.TransportType;
import io.nvmeof4j.protocol.spi.host.HostQueueOptions;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The connection options of every subcommand, named as nvme-cli's {@code nvme connect} names them. They are given
 * after the subcommand (as with nvme-cli), so {@code -n} is the subsystem NQN and {@code -s} the port everywhere;
 * I/O options that nvme-cli abbreviates with the same letters ({@code -n/--namespace-id}, {@code -s/--start-block})
 * are long-only here.
 */
public final class ConnectionOptions {
    /** nvme-cli's default NVMe/TCP I/O port ({@code nvme connect} without {@code -s}). */
    public static final int IO_PORT_DEFAULT = 4420;
    /** The discovery port the Linux host uses when {@code nvme discover} is given no {@code -s}. */
    public static final int DISCOVERY_PORT_DEFAULT = 8009;
    public static final long CONNECT_TIMEOUT_MS_DEFAULT = HostQueueOptions.CONNECT_TIMEOUT_DEFAULT.toMillis();

    @Option(names = {"-t", "--transport"}, paramLabel = "TRTYPE", defaultValue = "tcp",
        description = "Transport: tcp or rdma (NVMe-oF/RDMA needs rdma-core and an RDMA device). "
            + "Default: ${DEFAULT-VALUE}.")
    String transport;

    @Option(names = {"-a", "--traddr"}, paramLabel = "TRADDR", required = true,
        description = {"Address of the target (IPv4, IPv6 or host name). perf: a comma-separated list gives",
            "one path per address to one subsystem (multipath; see --iopolicy)."})
    String traddr;

    @Option(names = {"-s", "--trsvcid"}, paramLabel = "TRSVCID",
        description = {"Port of the target. Default: 8009 for discover over tcp, 4420 otherwise. With several",
            "addresses: one port for all, or a comma-separated list, one per address."})
    String trsvcid;

    @Option(names = "--iopolicy", paramLabel = "POLICY", defaultValue = "numa",
        description = {"With several paths: numa (the first usable path), round-robin or queue-depth, as the",
            "Linux host's iopolicy; optimized ANA paths first. Default: ${DEFAULT-VALUE}."})
    String iopolicy;

    @Option(names = {"-n", "--nqn"}, paramLabel = "SUBNQN",
        description = "Subsystem NQN (required except for discover).")
    String nqn;

    @Option(names = {"-q", "--hostnqn"}, paramLabel = "HOSTNQN",
        description = "Host NQN. Default: the persisted identity (~/.config/nvmeof4j/hostnqn).")
    String hostnqn;

    @Option(names = {"-I", "--hostid"}, paramLabel = "UUID",
        description = "Host id. Default: the persisted one, or with -q the NQN's UUID (uuid-form NQN) or a UUID "
            + "derived from the NQN.")
    String hostid;

    @Option(names = "--hdr-digest", description = "CRC32C header digests.")
    boolean headerDigest;

    @Option(names = "--data-digest", description = "CRC32C data digests.")
    boolean dataDigest;

    @Option(names = {"-i", "--nr-io-queues"}, paramLabel = "N",
        description = "I/O queues to create. Default: 1 (perf: --queues).")
    Integer ioQueues;

    @Option(names = {"-Q", "--queue-size"}, paramLabel = "N",
        description = "Entries per I/O queue. Default: 128 (perf: at least --queue-depth + 1).")
    Integer queueSize;

    @Option(names = {"-k", "--keep-alive-tmo"}, paramLabel = "SECONDS",
        description = "Keep-alive timeout. Default: 5 (discover: 0, no keep-alive).")
    Integer keepAliveSeconds;

    @Option(names = "--connect-timeout", paramLabel = "MS",
        description = "Bound on each connect step (TCP connect, ICReq, each bring-up command). Default: "
            + "10000.")
    Long connectTimeoutMs;

    @Option(names = {"-S", "--dhchap-secret"}, paramLabel = "DHHC-1:hh:KEY:",
        description = "DH-HMAC-CHAP host secret (nvme gen-dhchap-key), used when the controller requires "
            + "authentication. Also read from NVMEOF_DHCHAP_SECRET so it stays out of the process list.")
    String dhchapSecret;

    @Option(names = {"-C", "--dhchap-ctrl-secret"}, paramLabel = "DHHC-1:hh:KEY:",
        description = "DH-HMAC-CHAP controller secret: the controller must prove it too (bidirectional). Also read "
            + "from NVMEOF_DHCHAP_CTRL_SECRET.")
    String dhchapControllerSecret;

    @Option(names = "--tls", description = "NVMe/TCP over TLS 1.3 with a pre-shared key (needs --tls-key).")
    boolean tls;

    @Option(names = "--tls-key", paramLabel = "KEY|@FILE",
        description = "The host's configured TLS PSK in the interchange format (NVMeTLSkey-1:01:...:, as "
            + "'nvme gen-tls-key' prints it), or @FILE to read it from a file (keeps it out of the process list).")
    String tlsKey;

    @Option(names = "--tls-identity", paramLabel = "0|1", defaultValue = "1",
        description = "PSK identity version: 1 (with the PSK digest, TP 8018) or 0. Default: ${DEFAULT-VALUE}.")
    int tlsIdentity;

    @Option(names = "--tls-compat",
        description = "Derive the TLS PSK as nvme-cli/libnvme before 2.16/1.16 did (a Linux target whose key an older "
            + "'nvme check-tls-key --insert' put into its keyring).")
    boolean tlsCompat;

    @Option(names = "--concat",
        description = {"Secure channel concatenation, as 'nvme connect --concat': DH-HMAC-CHAP (needs",
            "--dhchap-secret) on an admin connection without TLS generates a TLS PSK; then every queue connects",
            "with TLS 1.3 under it. NVMe/TCP, a port with tsas tls1.3 and treq 'not required'; not with --tls."})
    boolean concat;

    @Option(names = "--reconnect-delay", paramLabel = "SECONDS",
        description = "First wait before reconnecting a lost controller (doubling up to 60). Default: 10.")
    Integer reconnectDelaySeconds;

    @Option(names = "--ctrl-loss-tmo", paramLabel = "SECONDS",
        description = "How long to keep reconnecting before the controller counts as lost. Default: 600.")
    Integer ctrlLossSeconds;

    @Option(names = {"-v", "--verbose"}, description = "Debug logging, and stack traces with errors.")
    boolean verbose;

    /** The one address of a single-path subcommand. */
    TransportAddress address(int defaultPort) {
        List<TransportAddress> all = addresses(defaultPort);
        if (all.size() != 1) {
            throw new CliUsageException("this subcommand takes one address (-a), not " + all.size());
        }
        return all.get(0);
    }

    /** Every address of {@code -a a1,a2,...} with its port from {@code -s p} or {@code -s p1,p2,...}. */
    List<TransportAddress> addresses(int defaultPort) {
        TransportType type;
        try {
            type = TransportType.fromConfigName(transport);
        } catch (IllegalArgumentException e) {
            throw new CliUsageException("unknown transport '" + transport + "' (expected tcp or rdma)");
        }
        if (type != TransportType.TCP && type != TransportType.RDMA) {
            throw new CliUsageException("transport '" + type.configName() + "' is not supported (tcp or rdma)");
        }
        if (type == TransportType.RDMA) {
            Throwable cause = io.nvmeof4j.jni.rdma.Rdma.unavailabilityCause();
            if (cause != null) {
                throw new CliUsageException("transport 'rdma' is not available here: " + cause.getMessage());
            }
        }
        String[] hosts = traddr.split(",", -1);
        String[] ports = trsvcid == null ? new String[0] : trsvcid.split(",", -1);
        if (ports.length > 1 && ports.length != hosts.length) {
            throw new CliUsageException("-s/--trsvcid lists " + ports.length + " ports for " + hosts.length
                + " addresses (give one port, or one per address)");
        }
        List<TransportAddress> result = new ArrayList<>();
        for (int i = 0; i < hosts.length; i++) {
            // The Linux host discovers over RDMA on 4420 (8009 is NVMe/TCP's discovery port).
            int port;
            if (ports.length == 0) {
                port = type == TransportType.RDMA ? IO_PORT_DEFAULT : defaultPort;
            } else {
                String text = ports[ports.length == 1 ? 0 : i].trim();
                try {
                    port = Integer.parseInt(text);
                } catch (NumberFormatException e) {
                    throw new CliUsageException("-s/--trsvcid '" + text + "' is not a TCP port (1..65535)");
                }
            }
            if (port < 1 || port > 65535) {
                throw new CliUsageException("-s/--trsvcid " + port + " is not a TCP port (1..65535)");
            }
            String h = hosts[i].trim();
            if (h.isEmpty()) {
                throw new CliUsageException("-a/--traddr '" + traddr + "' has an empty address");
            }
            String host = h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
            TransportAddress tcp = TransportAddress.tcp(host, port);
            result.add(type == TransportType.TCP ? tcp : new TransportAddress(type, tcp.family(), host,
                tcp.trsvcid()));
        }
        return result;
    }

    IoPolicy ioPolicy() {
        try {
            return IoPolicy.fromConfigName(iopolicy);
        } catch (IllegalArgumentException e) {
            throw new CliUsageException("--iopolicy: " + e.getMessage());
        }
    }

    String requireNqn() {
        if (nqn == null || nqn.isBlank()) {
            throw new CliUsageException("-n/--nqn (the subsystem NQN) is required; 'nvmeof discover' lists them");
        }
        return nqn;
    }

    HostIdentity identity() {
        try {
            if (hostnqn == null && hostid == null) {
                return HostIdentity.defaultIdentity();
            }
            if (hostnqn == null) {
                return HostIdentity.of(HostIdentity.defaultIdentity().hostNqn().value(), UUID.fromString(hostid));
            }
            UUID id;
            if (hostid != null) {
                id = UUID.fromString(hostid);
            } else {
                int at = hostnqn.toLowerCase(Locale.ROOT).lastIndexOf(":uuid:");
                id = at >= 0 ? UUID.fromString(hostnqn.substring(at + 6))
                    : UUID.nameUUIDFromBytes(hostnqn.getBytes(StandardCharsets.UTF_8));
            }
            return HostIdentity.of(hostnqn, id);
        } catch (IllegalArgumentException e) {
            throw new CliUsageException("invalid host identity: " + e.getMessage());
        }
    }

    private String readTlsKey() {
        if (!tlsKey.startsWith("@")) {
            return tlsKey.trim();
        }
        try {
            return Files.readString(Path.of(tlsKey.substring(1))).trim();
        } catch (IOException e) {
            throw new CliUsageException("cannot read the TLS key file " + tlsKey.substring(1) + ": " + e.getMessage());
        }
    }

    /**
     * @param minQueueSize entries per queue at least (perf: its depth + 1), unless {@code -Q} says otherwise
     * @param minOutstanding requests per queue the callback API must accept at once
     */
    ConnectOptions connectOptions(boolean discovery, int defaultIoQueues, int minQueueSize, int minOutstanding) {
        try {
            ConnectOptions o = discovery ? ConnectOptions.discoveryDefaults() : ConnectOptions.defaults();
            o = o.withIoQueues(ioQueues != null ? ioQueues : defaultIoQueues)
                .withQueueDepth(queueSize != null ? queueSize
                    : Math.min(HostQueueOptions.MAX_DEPTH, Math.max(ConnectOptions.QUEUE_DEPTH_DEFAULT, minQueueSize)))
                .withDigests(headerDigest, dataDigest)
                .withMaxOutstandingRequests(Math.max(o.maxOutstandingRequests(), minOutstanding));
            if (keepAliveSeconds != null) {
                o = o.withKeepAliveTimeout(Duration.ofSeconds(keepAliveSeconds));
            }
            if (reconnectDelaySeconds != null || ctrlLossSeconds != null) {
                Duration delay = reconnectDelaySeconds != null ? Duration.ofSeconds(reconnectDelaySeconds)
                    : o.reconnectDelay();
                o = o.withReconnect(delay, delay.compareTo(o.maxReconnectDelay()) > 0 ? delay : o.maxReconnectDelay(),
                    ctrlLossSeconds != null ? Duration.ofSeconds(ctrlLossSeconds) : o.controllerLossTimeout());
            }
            if (connectTimeoutMs != null) {
                o = o.withConnectTimeout(Duration.ofMillis(connectTimeoutMs));
            }
            String secret = dhchapSecret != null ? dhchapSecret : System.getenv("NVMEOF_DHCHAP_SECRET");
            String ctrlSecret = dhchapControllerSecret != null ? dhchapControllerSecret
                : System.getenv("NVMEOF_DHCHAP_CTRL_SECRET");
            if (secret != null || ctrlSecret != null) {
                o = o.withDhchap(blankToNull(secret), blankToNull(ctrlSecret));
            }
            if (tls != (tlsKey != null)) {
                throw new CliUsageException("--tls and --tls-key go together");
            }
            if (tls) {
                o = o.withTls(new ConnectOptions.Tls(readTlsKey(), tlsIdentity, tlsCompat));
            }
            if (concat) {
                if (discovery) {
                    throw new CliUsageException("--concat: discovery controllers do not authenticate");
                }
                if (tls) {
                    throw new CliUsageException("--concat generates its own TLS PSK: not together with --tls");
                }
                if (o.dhchapSecret() == null) {
                    throw new CliUsageException("--concat needs a DH-HMAC-CHAP host secret (--dhchap-secret or "
                        + "NVMEOF_DHCHAP_SECRET)");
                }
                o = o.withSecureChannelConcat(true);
            }
            return o;
        } catch (IllegalArgumentException e) {
            throw new CliUsageException(e.getMessage());
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }
}
