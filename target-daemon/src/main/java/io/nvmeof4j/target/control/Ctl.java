package io.nvmeof4j.target.control;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code bin/nvmeof-target-ctl}: calls the daemon's SPDK JSON-RPC socket. {@code nvmeof-target-ctl METHOD
 * [NAME=VALUE ...]} calls any method with SPDK's parameter names (a dotted name builds a nested object:
 * {@code listen_address.traddr=127.0.0.1}; a value that is JSON – a number, true, an object – is taken as such,
 * anything else as a string); {@code ls} prints the whole tree as nvmetcli's {@code ls} does; {@code save [FILE]}
 * writes {@code save_config}'s SPDK configuration (for {@code bin/nvmeof-target --json FILE}).
 */
@Command(name = "nvmeof-target-ctl", mixinStandardHelpOptions = true,
    description = {"Drive a running nvmeof4j target through its JSON-RPC socket (SPDK's method names).",
        "  nvmeof-target-ctl ls",
        "  nvmeof-target-ctl save [--nvmetcli] [FILE]",
        "  nvmeof-target-ctl bdev_malloc_create num_blocks=262144 block_size=512",
        "  nvmeof-target-ctl nvmf_create_subsystem nqn=nqn.2016-06.io.spdk:cnode1 allow_any_host=true",
        "  nvmeof-target-ctl nvmf_subsystem_add_listener nqn=nqn.2016-06.io.spdk:cnode1 \\",
        "      listen_address.trtype=tcp listen_address.traddr=127.0.0.1 listen_address.trsvcid=4420",
        "  nvmeof-target-ctl nvmf_subsystem_add_ns nqn=nqn.2016-06.io.spdk:cnode1 namespace.bdev_name=Malloc0",
        "Exit status: 0 done; 1 the daemon answered an error (printed); 2 usage or no connection."})
public final class Ctl implements Callable<Integer> {
    /** SPDK's default socket ({@code rpc.py -s}). */
    public static final String DEFAULT_SOCKET = "/var/tmp/spdk.sock";
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @Option(names = {"-s", "--server"}, paramLabel = "PATH", description = "The daemon's socket. Default: "
        + DEFAULT_SOCKET + ".")
    private Path socket = Path.of(DEFAULT_SOCKET);

    @Option(names = {"-t", "--timeout"}, paramLabel = "SECONDS", description = "How long to wait for the answer. "
        + "Default: 60 (as rpc.py).")
    private int timeoutSeconds = 60;

    @Option(names = "--nvmetcli", description = "save: write the nvmetcli-shaped configuration (--config's "
        + "format) instead of SPDK's.")
    private boolean nvmetcli;

    @Parameters(index = "0", paramLabel = "COMMAND", description = "ls, save, or an SPDK method name.")
    private String command;

    @Parameters(index = "1..*", paramLabel = "ARG", description = "NAME=VALUE parameters (save: the file).")
    private List<String> args = new ArrayList<>();

    private PrintWriter out;

    public static void main(String[] argv) {
        System.exit(run(new PrintWriter(System.out, true), new PrintWriter(System.err, true), argv));
    }

    static int run(PrintWriter out, PrintWriter err, String... argv) {
        Ctl ctl = new Ctl();
        ctl.out = out;
        CommandLine cl = new CommandLine(ctl).setOut(out).setErr(err)
            .setExecutionExceptionHandler((e, line, parsed) -> {
                err.println("nvmeof-target-ctl: " + e.getMessage());
                return 2;
            });
        return cl.execute(argv);
    }

    @Override
    public Integer call() throws Exception {
        switch (command) {
            case "ls" -> {
                JsonNode subsystems = result("nvmf_get_subsystems", null);
                JsonNode bdevs = result("bdev_get_bdevs", null);
                JsonNode referrals = result("nvmf_discovery_get_referrals", null);
                if (subsystems == null || bdevs == null || referrals == null) {
                    return 1;
                }
                printTree(subsystems, bdevs, referrals);
                return 0;
            }
            case "save" -> {
                JsonNode config = result(nvmetcli ? "nvmeof4j_get_config" : "save_config", null);
                if (config == null) {
                    return 1;
                }
                String text = MAPPER.writeValueAsString(config) + "\n";
                if (args.isEmpty()) {
                    out.print(text);
                    out.flush();
                } else {
                    AtomicFile.write(Path.of(args.get(0)), text);
                }
                return 0;
            }
            default -> {
                JsonNode r = result(command, params(args));
                if (r == null) {
                    return 1;
                }
                out.println(MAPPER.writeValueAsString(r));
                return 0;
            }
        }
    }

    /** NAME=VALUE pairs as a params object; null when there are none. */
    static ObjectNode params(List<String> pairs) {
        if (pairs.isEmpty()) {
            return null;
        }
        ObjectNode params = MAPPER.createObjectNode();
        for (String pair : pairs) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("'" + pair + "' is not NAME=VALUE");
            }
            String[] path = pair.substring(0, eq).split("\\.");
            String text = pair.substring(eq + 1);
            ObjectNode at = params;
            for (int i = 0; i < path.length - 1; i++) {
                at = at.has(path[i]) && at.get(path[i]).isObject() ? (ObjectNode) at.get(path[i]) : at.putObject(path[i]);
            }
            JsonNode value;
            try {
                value = MAPPER.readTree(text);
                if (value == null || value.isMissingNode() || value.isTextual()
                    || (value.isNumber() && text.startsWith("0") && text.length() > 1)) {
                    // keep "4420"-like service ids, NQNs, names, leading zeros as written
                    value = MAPPER.getNodeFactory().textNode(text);
                }
            } catch (JsonProcessingException e) {
                value = MAPPER.getNodeFactory().textNode(text);
            }
            if (path[path.length - 1].equals("trsvcid")) {
                value = MAPPER.getNodeFactory().textNode(text);
            }
            at.set(path[path.length - 1], value);
        }
        return params;
    }

    /** Calls the method; prints the error and returns null when the daemon answers one. */
    private JsonNode result(String method, JsonNode params) throws IOException {
        ObjectNode request = MAPPER.createObjectNode();
        request.put("jsonrpc", "2.0");
        request.put("method", method);
        request.put("id", 1);
        if (params != null) {
            request.set("params", params);
        }
        JsonNode response;
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
            } catch (IOException e) {
                throw new IOException("cannot connect to " + socket + " (is the daemon running with -r " + socket
                    + "?): " + e.getMessage(), e);
            }
            ByteBuffer b = ByteBuffer.wrap(new ObjectMapper().writeValueAsBytes(request));
            while (b.hasRemaining()) {
                ch.write(b);
            }
            CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> readLine(ch));
            String text;
            try {
                text = line.get(timeoutSeconds, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IOException(method + ": no answer from " + socket + " within " + timeoutSeconds + " s");
            } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
                throw new IOException(method + ": " + e.getMessage(), e);
            }
            if (text == null) {
                throw new IOException(method + ": " + socket + " closed the connection without an answer");
            }
            response = MAPPER.readTree(text);
        }
        if (response.has("error")) {
            System.err.println("nvmeof-target-ctl: " + method + ": error " + response.at("/error/code").asInt() + ": "
                + response.at("/error/message").asText());
            return null;
        }
        return response.get("result");
    }

    private static String readLine(SocketChannel ch) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer in = ByteBuffer.allocate(65536);
        try {
            while (sb.indexOf("\n") < 0) {
                in.clear();
                int n = ch.read(in);
                if (n < 0) {
                    return sb.length() == 0 ? null : sb.toString();
                }
                sb.append(new String(in.array(), 0, n, StandardCharsets.UTF_8));
            }
            return sb.substring(0, sb.indexOf("\n"));
        } catch (IOException e) {
            return null;
        }
    }

    /** ", qos rw_ios_per_sec=20000 ..." for the limits a bdev has (bdev_set_qos_limit), or nothing. */
    private static String qos(JsonNode limits) {
        StringBuilder sb = new StringBuilder();
        limits.fields().forEachRemaining(e -> {
            if (e.getValue().asLong() > 0) {
                sb.append(sb.length() == 0 ? ", qos " : " ").append(e.getKey()).append('=').append(e.getValue().asLong());
            }
        });
        return sb.toString();
    }

    /**
     * The tree as nvmetcli's {@code ls} shows it: bdevs, then subsystems with listeners, hosts and namespaces, then
     * the discovery referrals.
     */
    private void printTree(JsonNode subsystems, JsonNode bdevs, JsonNode referrals) {
        out.println("o- / ");
        out.println("  o- bdevs [" + bdevs.size() + "]");
        for (JsonNode b : bdevs) {
            out.println("  | o- " + b.get("name").asText() + " [" + b.get("product_name").asText() + ", "
                + b.get("num_blocks").asLong() + " x " + b.get("block_size").asInt() + " B"
                + (b.get("claimed").asBoolean() ? ", claimed" : "") + qos(b.path("assigned_rate_limits")) + "]");
        }
        out.println("  o- subsystems [" + subsystems.size() + "]");
        for (JsonNode s : subsystems) {
            out.println("    o- " + s.get("nqn").asText() + " [" + s.get("subtype").asText()
                + (s.path("allow_any_host").asBoolean() ? ", allow_any_host" : "")
                + (s.has("serial_number") ? ", serial " + s.get("serial_number").asText() : "") + "]");
            out.println("    | o- listen_addresses [" + s.path("listen_addresses").size() + "]");
            for (JsonNode a : s.path("listen_addresses")) {
                out.println("    | | o- " + a.get("trtype").asText() + " " + a.get("traddr").asText() + ":"
                    + a.get("trsvcid").asText());
            }
            out.println("    | o- hosts [" + s.path("hosts").size() + "]");
            for (JsonNode h : s.path("hosts")) {
                out.println("    | | o- " + h.get("nqn").asText());
            }
            out.println("    | o- namespaces [" + s.path("namespaces").size() + "]");
            for (JsonNode n : s.path("namespaces")) {
                out.println("    |   o- " + n.get("nsid").asLong() + " [" + n.path("bdev_name").asText("-") + ", uuid "
                    + n.get("uuid").asText() + "]");
            }
        }
        out.println("  o- referrals [" + referrals.size() + "]");
        for (JsonNode r : referrals) {
            JsonNode a = r.path("address");
            out.println("    o- " + a.path("trtype").asText() + " " + a.path("traddr").asText() + ":"
                + a.path("trsvcid").asText() + " [" + r.path("subnqn").asText()
                + (r.path("secure_channel").asBoolean() ? ", secure channel" : "") + "]");
        }
        out.flush();
    }
}
