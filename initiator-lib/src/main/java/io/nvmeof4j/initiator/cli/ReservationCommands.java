package io.nvmeof4j.initiator.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.initiator.ConnectOptions;
import io.nvmeof4j.initiator.NvmeofController;
import io.nvmeof4j.initiator.NvmeofHost;
import io.nvmeof4j.initiator.NvmeofIoException;
import io.nvmeof4j.initiator.NvmeofNamespace;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationStatusData;
import io.nvmeof4j.protocol.reservation.ReservationType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code resv-register}, {@code resv-acquire}, {@code resv-release} and {@code resv-report} with nvme-cli's long
 * option names ({@code --crkey --nrkey --prkey --rtype --rrega --racqa --rrela --cptpl --iekey --numd --eds
 * --output-format}). nvme-cli's short letters collide with the connection options here ({@code -n -t -a -i -k}),
 * so these are long-only. Keys accept decimal or 0x-prefixed hex, as nvme-cli's do.
 */
final class ReservationCommands {
    private ReservationCommands() {
    }

    /** Connects, runs one reservation command on the namespace, prints nvme-cli's success line. */
    abstract static class Base extends CliCommand {
        @Mixin
        NamespaceIdOption namespaceId;

        @Option(names = "--iekey", description = "Ignore Existing Key (IEKEY).")
        boolean iekey;

        @Override
        final int execute() throws Exception {
            String nqn = connection.requireNqn();
            ConnectOptions options = connection.connectOptions(false, 1, 0, 0);
            try (NvmeofHost host = createHost(1);
                 NvmeofController ctrl = host.connect(connection.address(ConnectionOptions.IO_PORT_DEFAULT), nqn,
                     options)) {
                NvmeofNamespace ns = BlockIoCommand.namespace(ctrl, namespaceId.value);
                run(ns, options);
            }
            return NvmeofCli.EXIT_OK;
        }

        abstract void run(NvmeofNamespace ns, ConnectOptions options) throws Exception;

        static <T> T await(CompletableFuture<T> f, ConnectOptions options) throws Exception {
            return f.get(ioWait(options).toMillis(), TimeUnit.MILLISECONDS);
        }

        static long key(String text, String option) {
            try {
                String t = text.trim().toLowerCase(Locale.ROOT);
                return t.startsWith("0x") ? Long.parseUnsignedLong(t.substring(2), 16) : Long.parseUnsignedLong(t);
            } catch (NumberFormatException e) {
                throw new CliUsageException(option + " '" + text + "' is not a 64-bit key (decimal or 0x hex)");
            }
        }
    }

    /** The commands that name the host's current key: all but report. */
    abstract static class KeyedBase extends Base {
        @Option(names = "--crkey", paramLabel = "KEY", defaultValue = "0", description = "Current reservation key.")
        String crkey;
    }

    @Command(name = "resv-register", sortOptions = false, mixinStandardHelpOptions = true,
        description = {"Reservation Register: register (--rrega 0), unregister (1) or replace (2) a",
            "reservation key on a namespace.", ""})
    static final class Register extends KeyedBase {
        @Option(names = "--nrkey", paramLabel = "KEY", defaultValue = "0", description = "New reservation key.")
        String nrkey;

        @Option(names = "--rrega", paramLabel = "N", defaultValue = "0",
            description = "Action: 0 register, 1 unregister, 2 replace. Default: ${DEFAULT-VALUE}.")
        int rrega;

        @Option(names = "--cptpl", paramLabel = "N", defaultValue = "0",
            description = "Change Persist Through Power Loss: 0 no change, 2 clear, 3 set. Default: ${DEFAULT-VALUE}.")
        int cptpl;

        @Override
        void run(NvmeofNamespace ns, ConnectOptions options) throws Exception {
            await(ns.reservationRegister(range(rrega, 0, 2, "--rrega"), iekey, range(cptpl, 0, 3, "--cptpl"),
                key(crkey, "--crkey"), key(nrkey, "--nrkey")), options);
            out().println("NVME Reservation Register success");
        }
    }

    @Command(name = "resv-acquire", sortOptions = false, mixinStandardHelpOptions = true,
        description = {"Reservation Acquire: acquire (--racqa 0), preempt (1) or preempt and abort (2) a",
            "reservation of type --rtype (1 write exclusive, 2 exclusive access, 3/4 ... registrants only,",
            "5/6 ... all registrants).", ""})
    static final class Acquire extends KeyedBase {
        @Option(names = "--prkey", paramLabel = "KEY", defaultValue = "0", description = "Key to preempt.")
        String prkey;

        @Option(names = "--rtype", paramLabel = "N", defaultValue = "0", description = "Reservation type (1..6).")
        int rtype;

        @Option(names = "--racqa", paramLabel = "N", defaultValue = "0",
            description = "Action: 0 acquire, 1 preempt, 2 preempt and abort. Default: ${DEFAULT-VALUE}.")
        int racqa;

        @Override
        void run(NvmeofNamespace ns, ConnectOptions options) throws Exception {
            await(ns.reservationAcquire(range(racqa, 0, 2, "--racqa"), iekey, range(rtype, 0, 6, "--rtype"),
                key(crkey, "--crkey"), key(prkey, "--prkey")), options);
            out().println("NVME Reservation Acquire success");
        }
    }

    @Command(name = "resv-release", sortOptions = false, mixinStandardHelpOptions = true,
        description = {"Reservation Release: release (--rrela 0) the reservation of type --rtype, or clear",
            "(1) the reservation and every registration.", ""})
    static final class Release extends KeyedBase {
        @Option(names = "--rtype", paramLabel = "N", defaultValue = "0", description = "Reservation type (1..6).")
        int rtype;

        @Option(names = "--rrela", paramLabel = "N", defaultValue = "0",
            description = "Action: 0 release, 1 clear. Default: ${DEFAULT-VALUE}.")
        int rrela;

        @Override
        void run(NvmeofNamespace ns, ConnectOptions options) throws Exception {
            await(ns.reservationRelease(range(rrela, 0, 1, "--rrela"), iekey, range(rtype, 0, 6, "--rtype"),
                key(crkey, "--crkey")), options);
            out().println("NVME Reservation Release success");
        }
    }

    @Command(name = "resv-report", sortOptions = false, mixinStandardHelpOptions = true,
        description = {"Reservation Report: the reservation holder, type and every registered controller",
            "with its host identifier and key.", ""})
    static final class Report extends Base {
        @Option(names = "--numd", paramLabel = "N", defaultValue = "1023",
            description = "Dwords to read, 0-based (the data is (N + 1) x 4 bytes). Default: ${DEFAULT-VALUE}.")
        int numd;

        @Option(names = "--eds", description = "Extended data structure (128-bit host identifiers).")
        boolean eds;

        @Option(names = "--output-format", paramLabel = "FMT", defaultValue = "normal",
            description = "normal or json. Default: ${DEFAULT-VALUE}.")
        String outputFormat;

        @Override
        void run(NvmeofNamespace ns, ConnectOptions options) throws Exception {
            boolean json = switch (outputFormat.toLowerCase(Locale.ROOT)) {
                case "normal" -> false;
                case "json" -> true;
                default -> throw new CliUsageException("--output-format '" + outputFormat + "' is not normal or json");
            };
            range(numd, 5, 1 << 20, "--numd");
            ByteBuffer data;
            try {
                data = await(ns.reservationReport(eds, (numd + 1) * 4), options);
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof NvmeofIoException io && !eds
                    && NvmeStatus.code(io.status()) == NvmeStatus.HOST_IDENTIFIER_INCONSISTENT_FORMAT) {
                    // NVMe-oF hosts always have a 128-bit host identifier: the regular format cannot name them.
                    throw new NvmeofIoException(io.getMessage() + " (an NVMe over Fabrics host has a 128-bit host "
                        + "identifier: ask for the extended data structure with --eds)", io.status());
                }
                throw e;
            }
            ReservationStatusData status = new ReservationStatusData().wrap(data, 0, eds);
            int registrants = status.registeredControllers();
            int shown = Math.min(registrants, Math.max(0, (data.capacity() - ReservationStatusData.length(0, eds))
                / (ReservationStatusData.length(1, eds) - ReservationStatusData.length(0, eds))));
            if (json) {
                ObjectNode o = new ObjectMapper().createObjectNode();
                o.put("gen", Integer.toUnsignedLong(status.generation()));
                o.put("rtype", status.type());
                o.put("regctl", registrants);
                o.put("ptpls", status.persistThroughPowerLoss() ? 1 : 0);
                ArrayNode list = o.putArray("regctls");
                for (int i = 0; i < shown; i++) {
                    ObjectNode r = list.addObject();
                    r.put("cntlid", status.controllerId(i));
                    r.put("rcsts", status.holdsReservation(i) ? 1 : 0);
                    r.put("hostid", eds ? status.hostId(i).uuid().toString().replace("-", "")
                        : String.format("%x", status.hostId64(i)));
                    r.put("rkey", Long.toUnsignedString(status.key(i)));
                }
                out().println(o.toPrettyString());
            } else {
                out().println("NVME Reservation status:");
                out().println();
                out().printf("gen       : %d%n", Integer.toUnsignedLong(status.generation()));
                out().printf("rtype     : %d (%s)%n", status.type(), ReservationType.name(status.type()));
                out().printf("regctl    : %d%n", registrants);
                out().printf("ptpls     : %d%n", status.persistThroughPowerLoss() ? 1 : 0);
                for (int i = 0; i < shown; i++) {
                    out().printf("regctl[%d] :%n", i);
                    out().printf("  cntlid  : %x%n", status.controllerId(i));
                    out().printf("  rcsts   : %x%n", status.holdsReservation(i) ? 1 : 0);
                    out().printf("  hostid  : %s%n", eds ? status.hostId(i).uuid().toString().replace("-", "")
                        : String.format("%x", status.hostId64(i)));
                    out().printf("  rkey    : %x%n", status.key(i));
                }
            }
            if (shown < registrants) {
                err().println("resv-report: " + (registrants - shown) + " registrant(s) beyond --numd " + numd
                    + " not shown");
            }
        }
    }
}
