package io.nvmeof4j.target.reservation;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationNotificationLog;
import io.nvmeof4j.protocol.reservation.ReservationType;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The persistent reservation state of one namespace (NVMe Base 2.0, 8.19): registrants (a host identifier and its
 * reservation key), the reservation (a type and its holder) and PRGENERATION, with the rules of Reservation
 * Register, Acquire and Release and the data Reservation Report returns.
 *
 * <h2>Who is who</h2>
 * Registrations belong to hosts, named by their 128-bit host identifier (Connect data HOSTID), not to controllers:
 * every controller of one host on this namespace shares its registration, as the spec's "host" model and SPDK have it.
 * For the two all-registrants types every registrant holds the reservation; otherwise one host does.
 *
 * <h2>The data path</h2>
 * {@link #check} runs for every I/O command. While no reservation is held it reads one volatile field and returns:
 * no lock, no allocation. With a reservation it scans an immutable array of registrant ids (a handful) and applies
 * the spec's table ({@link ReservationType#permits}).
 *
 * <h2>Persistence</h2>
 * With a state file, every change is written before the command completes: the new state goes to a temporary file in
 * the same directory, which is forced to disk, renamed over the old one, and the directory is forced too, so a power
 * loss leaves either the old or the new state. A change whose write fails is not applied (Internal Error). At start
 * the file is read back; when PTPL (Persist Through Power Loss, Register CPTPL or feature 83h) was off, what it held is
 * dropped, as a controller without PTPL loses its reservations at power loss. Changes are serialised by this object's
 * lock; they run on the reactor that received the command, so a slow disk delays that reactor for one fsync.
 */
public final class Reservations {
    /** Registrants per namespace: bounds the Report and the data-path scan. */
    public static final int MAX_REGISTRANTS = 64;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int FILE_VERSION = 1;

    /** A registrant: its host identifier and key. */
    public record Registrant(HostId host, long key) {
    }

    /**
     * An immutable state. {@code holder} is null when no reservation is held or when the type is an all-registrants
     * type (then every registrant holds it).
     */
    record State(List<Registrant> registrants, int type, HostId holder, int generation, boolean ptpl) {
        static final State EMPTY = new State(List.of(), ReservationType.NONE, null, 0, false);

        State {
            registrants = List.copyOf(registrants);
        }

        Registrant find(HostId host) {
            for (Registrant r : registrants) {
                if (r.host().equals(host)) {
                    return r;
                }
            }
            return null;
        }

        boolean isHolder(HostId host) {
            if (type == ReservationType.NONE) {
                return false;
            }
            return ReservationType.isAllRegistrantsType(type) ? find(host) != null : host.equals(holder);
        }

        State with(List<Registrant> regs, int newType, HostId newHolder, boolean bumpGeneration) {
            return new State(regs, newType, newHolder, bumpGeneration ? generation + 1 : generation, ptpl);
        }
    }

    /** What the data path reads while a reservation is held. */
    private static final class Snapshot {
        final int type;
        final long holderMsb;
        final long holderLsb;
        final boolean allRegistrants;
        /** msb, lsb pairs. */
        final long[] registrants;

        Snapshot(State s) {
            this.type = s.type();
            this.allRegistrants = ReservationType.isAllRegistrantsType(s.type());
            this.holderMsb = s.holder() == null ? 0 : s.holder().uuid().getMostSignificantBits();
            this.holderLsb = s.holder() == null ? 0 : s.holder().uuid().getLeastSignificantBits();
            this.registrants = new long[s.registrants().size() * 2];
            for (int i = 0; i < s.registrants().size(); i++) {
                UUID u = s.registrants().get(i).host().uuid();
                registrants[2 * i] = u.getMostSignificantBits();
                registrants[2 * i + 1] = u.getLeastSignificantBits();
            }
        }

        boolean isRegistrant(long msb, long lsb) {
            for (int i = 0; i < registrants.length; i += 2) {
                if (registrants[i] == msb && registrants[i + 1] == lsb) {
                    return true;
                }
            }
            return false;
        }
    }

    /** A notification for the controllers of one host (Reservation Notification log, 80h). */
    public record Notification(HostId host, int type) {
    }

    /** A command's outcome: its status and the notifications to deliver. */
    public record Outcome(int status, List<Notification> notifications) {
        static Outcome of(int status) {
            return new Outcome(status, List.of());
        }

        /**
         * The hosts whose registration a preempt removed: exactly the hosts told Registration Preempted (the issuer
         * keeps its own registration). Preempt and Abort drains their commands on the namespace.
         */
        public List<HostId> preempted() {
            List<HostId> hosts = new ArrayList<>();
            for (Notification n : notifications) {
                if (n.type() == ReservationNotificationLog.TYPE_REGISTRATION_PREEMPTED) {
                    hosts.add(n.host());
                }
            }
            return hosts;
        }
    }

    private final Path stateFile;
    private final Object lock = new Object();
    private State state = State.EMPTY;
    /** Null while no reservation is held: the data path's fast answer. */
    private volatile Snapshot snapshot;

    /** @param stateFile where the state is persisted, or null to keep it in memory only */
    public Reservations(Path stateFile) {
        this.stateFile = stateFile;
    }

    /**
     * Reads the state file, if there is one: with PTPL on, the registrants and the reservation come back; with it
     * off they are dropped (and the file rewritten so). A missing file is an empty state.
     *
     * @throws IOException the file exists but cannot be read or is not a reservation state
     */
    public static Reservations load(Path stateFile) throws IOException {
        Reservations r = new Reservations(Objects.requireNonNull(stateFile, "stateFile"));
        if (!Files.exists(stateFile)) {
            return r;
        }
        State loaded = parse(stateFile);
        if (!loaded.ptpl()) {
            loaded = new State(List.of(), ReservationType.NONE, null, loaded.generation(), false);
        }
        synchronized (r.lock) {
            r.state = loaded;
            r.publish();
        }
        return r;
    }

    public Path stateFile() {
        return stateFile;
    }

    // ---------------------------------------------------------------------------------------------- data path

    /**
     * The status an I/O command of {@code opcode} from {@code host} gets under the current reservation:
     * {@link NvmeStatus#SUCCESS} or Reservation Conflict + DNR. Lock-free; allocates nothing.
     */
    public int check(HostId host, int opcode) {
        Snapshot s = snapshot;
        if (s == null) {
            return NvmeStatus.SUCCESS;
        }
        int kind = commandClass(opcode);
        if (kind == OTHER) {
            return NvmeStatus.SUCCESS;
        }
        UUID u = host.uuid();
        long msb = u.getMostSignificantBits();
        long lsb = u.getLeastSignificantBits();
        boolean registrant = s.isRegistrant(msb, lsb);
        boolean holder = s.allRegistrants ? registrant : s.holderMsb == msb && s.holderLsb == lsb;
        return ReservationType.permits(s.type, holder, registrant, kind == WRITE) ? NvmeStatus.SUCCESS
            : NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR;
    }

    static final int OTHER = 0;
    static final int READ = 1;
    static final int WRITE = 2;

    /**
     * The command groups of the reservation table (NVMe Base 2.0, 8.19.1 Figure 453; SPDK's and nvmet's lists):
     * reads are Read, Compare and Verify; writes are Flush, Write, Write Uncorrectable, Write Zeroes, Dataset
     * Management and Copy. Reservation commands follow their own rules; anything else is not restricted here.
     */
    static int commandClass(int opcode) {
        switch (opcode) {
            case NvmOpcode.READ:
            case NvmOpcode.COMPARE:
            case NvmOpcode.VERIFY:
                return READ;
            case NvmOpcode.FLUSH:
            case NvmOpcode.WRITE:
            case NvmOpcode.WRITE_UNCORRECTABLE:
            case NvmOpcode.WRITE_ZEROES:
            case NvmOpcode.DATASET_MANAGEMENT:
            case NvmOpcode.COPY:
                return WRITE;
            default:
                return OTHER;
        }
    }

    // ---------------------------------------------------------------------------------------------- commands

    /** Reservation Register (7.3): register, unregister or replace a key; CPTPL changes PTPL. */
    public Outcome register(HostId host, int cdw10, long crkey, long nrkey) {
        int action = ReservationCommand.action(cdw10);
        boolean iekey = ReservationCommand.ignoreExistingKey(cdw10);
        int cptpl = ReservationCommand.changePtpl(cdw10);
        if (cptpl == 1 || action > ReservationCommand.REPLACE) {
            return invalidField();
        }
        synchronized (lock) {
            State s = state;
            Registrant me = s.find(host);
            List<Registrant> regs = new ArrayList<>(s.registrants());
            List<Notification> notes = new ArrayList<>();
            State next;
            switch (action) {
                case ReservationCommand.REGISTER:
                    if (me != null) {
                        // Registering again with the key already held succeeds; any other key conflicts.
                        if (me.key() != nrkey) {
                            return conflict();
                        }
                        next = s;
                        break;
                    }
                    if (nrkey == 0) {
                        return invalidField();
                    }
                    if (regs.size() >= MAX_REGISTRANTS) {
                        return Outcome.of(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
                    }
                    regs.add(new Registrant(host, nrkey));
                    next = s.with(regs, s.type(), s.holder(), true);
                    break;
                case ReservationCommand.UNREGISTER:
                    if (!holdsKey(me, iekey, crkey)) {
                        return conflict();
                    }
                    regs.remove(me);
                    next = afterLeaving(s, host, regs, notes);
                    break;
                default: // REPLACE
                    if (nrkey == 0) {
                        return invalidField();
                    }
                    if (me == null) {
                        if (!iekey) {
                            return conflict();
                        }
                        if (regs.size() >= MAX_REGISTRANTS) {
                            return Outcome.of(NvmeStatus.CAPACITY_EXCEEDED | NvmeStatus.DNR);
                        }
                        regs.add(new Registrant(host, nrkey));
                    } else {
                        if (!holdsKey(me, iekey, crkey)) {
                            return conflict();
                        }
                        regs.set(regs.indexOf(me), new Registrant(host, nrkey));
                    }
                    next = s.with(regs, s.type(), s.holder(), true);
                    break;
            }
            if (cptpl == ReservationCommand.CPTPL_SET || cptpl == ReservationCommand.CPTPL_CLEAR) {
                next = new State(next.registrants(), next.type(), next.holder(), next.generation(),
                    cptpl == ReservationCommand.CPTPL_SET);
            }
            return commit(next, notes);
        }
    }

    /**
     * A registrant left (unregister): a single holder's reservation ends with it; an all-registrants reservation ends
     * with its last registrant. Releasing a registrants-only or all-registrants reservation this way tells the other
     * registrants (Reservation Released).
     */
    private static State afterLeaving(State s, HostId host, List<Registrant> regs, List<Notification> notes) {
        int type = s.type();
        HostId holder = s.holder();
        if (type != ReservationType.NONE) {
            boolean ends = ReservationType.isAllRegistrantsType(type) ? regs.isEmpty() : host.equals(holder);
            if (ends) {
                if (ReservationType.isRegistrantsType(type)) {
                    for (Registrant r : regs) {
                        notes.add(new Notification(r.host(), ReservationNotificationLog.TYPE_RESERVATION_RELEASED));
                    }
                }
                type = ReservationType.NONE;
                holder = null;
            }
        }
        return s.with(regs, type, holder, true);
    }

    /** Reservation Acquire (7.2): acquire, preempt, or preempt and abort. */
    public Outcome acquire(HostId host, int cdw10, long crkey, long prkey) {
        int action = ReservationCommand.action(cdw10);
        boolean iekey = ReservationCommand.ignoreExistingKey(cdw10);
        int type = ReservationCommand.type(cdw10);
        if (action > ReservationCommand.PREEMPT_AND_ABORT || !ReservationType.isValid(type)) {
            return invalidField();
        }
        synchronized (lock) {
            State s = state;
            Registrant me = s.find(host);
            if (!holdsKey(me, iekey, crkey)) {
                return conflict();
            }
            if (action == ReservationCommand.ACQUIRE) {
                if (s.type() == ReservationType.NONE) {
                    HostId holder = ReservationType.isAllRegistrantsType(type) ? null : host;
                    return commit(s.with(s.registrants(), type, holder, false), List.of());
                }
                // Acquiring what one holds already succeeds; another type, or another's reservation, conflicts.
                return s.isHolder(host) && s.type() == type ? commit(s, List.of()) : conflict();
            }
            return preempt(s, host, type, prkey);
        }
    }

    /**
     * Preempt (8.19.8): registrants holding PRKEY are removed (each told Registration Preempted); if the reservation
     * was held under PRKEY (or, for an all-registrants type, PRKEY is 0) the issuer takes it with the new type.
     * Preempt and Abort changes the state the same way; the controller layer then ends or waits for the preempted
     * hosts' commands on the namespace before it completes the Acquire ({@link Outcome#preempted()}).
     */
    private Outcome preempt(State s, HostId host, int type, long prkey) {
        List<Registrant> regs = new ArrayList<>(s.registrants());
        List<Notification> notes = new ArrayList<>();
        int newType = s.type();
        HostId newHolder = s.holder();
        if (s.type() == ReservationType.NONE) {
            if (prkey == 0) {
                return invalidField();
            }
            removeByKey(regs, host, prkey, notes, true);
        } else if (ReservationType.isAllRegistrantsType(s.type())) {
            if (prkey == 0) {
                // Everyone else goes; the issuer holds the reservation alone, with the new type.
                removeAllBut(regs, host, notes);
                newType = type;
                newHolder = ReservationType.isAllRegistrantsType(type) ? null : host;
            } else {
                removeByKey(regs, host, prkey, notes, true);
            }
        } else {
            Registrant holder = s.find(s.holder());
            if (holder != null && holder.key() == prkey) {
                removeByKey(regs, host, prkey, notes, true);
                newType = type;
                newHolder = ReservationType.isAllRegistrantsType(type) ? null : host;
            } else {
                if (prkey == 0) {
                    return invalidField();
                }
                removeByKey(regs, host, prkey, notes, true);
            }
        }
        return commit(s.with(regs, newType, newHolder, true), notes);
    }

    private static void removeByKey(List<Registrant> regs, HostId issuer, long key, List<Notification> notes,
                                    boolean keepIssuer) {
        for (var it = regs.iterator(); it.hasNext(); ) {
            Registrant r = it.next();
            if (r.key() == key && !(keepIssuer && r.host().equals(issuer))) {
                it.remove();
                if (!r.host().equals(issuer)) {
                    notes.add(new Notification(r.host(), ReservationNotificationLog.TYPE_REGISTRATION_PREEMPTED));
                }
            }
        }
    }

    private static void removeAllBut(List<Registrant> regs, HostId issuer, List<Notification> notes) {
        for (var it = regs.iterator(); it.hasNext(); ) {
            Registrant r = it.next();
            if (!r.host().equals(issuer)) {
                it.remove();
                notes.add(new Notification(r.host(), ReservationNotificationLog.TYPE_REGISTRATION_PREEMPTED));
            }
        }
    }

    /** Reservation Release (7.5): release the reservation held, or clear everything. */
    public Outcome release(HostId host, int cdw10, long crkey) {
        int action = ReservationCommand.action(cdw10);
        boolean iekey = ReservationCommand.ignoreExistingKey(cdw10);
        int type = ReservationCommand.type(cdw10);
        if (action > ReservationCommand.CLEAR) {
            return invalidField();
        }
        synchronized (lock) {
            State s = state;
            Registrant me = s.find(host);
            if (!holdsKey(me, iekey, crkey)) {
                return conflict();
            }
            List<Notification> notes = new ArrayList<>();
            if (action == ReservationCommand.CLEAR) {
                for (Registrant r : s.registrants()) {
                    if (!r.host().equals(host)) {
                        notes.add(new Notification(r.host(), ReservationNotificationLog.TYPE_RESERVATION_PREEMPTED));
                    }
                }
                return commit(s.with(List.of(), ReservationType.NONE, null, true), notes);
            }
            if (s.type() == ReservationType.NONE || !s.isHolder(host)) {
                // Nothing held by this host: success, nothing changes (8.19.9).
                return Outcome.of(NvmeStatus.SUCCESS);
            }
            if (type != s.type()) {
                return invalidField();
            }
            if (ReservationType.isRegistrantsType(s.type())) {
                for (Registrant r : s.registrants()) {
                    if (!r.host().equals(host)) {
                        notes.add(new Notification(r.host(), ReservationNotificationLog.TYPE_RESERVATION_RELEASED));
                    }
                }
            }
            return commit(s.with(s.registrants(), ReservationType.NONE, null, false), notes);
        }
    }

    /** Set Features 83h: PTPL on or off, persisted like any change. */
    public int persistThroughPowerLoss(boolean ptpl) {
        synchronized (lock) {
            State s = state;
            return commit(new State(s.registrants(), s.type(), s.holder(), s.generation(), ptpl), List.of()).status();
        }
    }

    public boolean persistThroughPowerLoss() {
        synchronized (lock) {
            return state.ptpl();
        }
    }

    // ---------------------------------------------------------------------------------------------- report

    /** A consistent copy for Reservation Report and the management API. */
    public Report report() {
        synchronized (lock) {
            State s = state;
            List<Registrant> holders = new ArrayList<>();
            for (Registrant r : s.registrants()) {
                if (s.isHolder(r.host())) {
                    holders.add(r);
                }
            }
            return new Report(s.generation(), s.type(), s.ptpl(), s.registrants(), holders);
        }
    }

    /** @param holders the registrants that hold the reservation (RCSTS bit 0) */
    public record Report(int generation, int type, boolean ptpl, List<Registrant> registrants,
                         List<Registrant> holders) {
        public Report {
            registrants = Collections.unmodifiableList(new ArrayList<>(registrants));
            holders = List.copyOf(holders);
        }

        public boolean holds(Registrant r) {
            return holders.contains(r);
        }
    }

    // ---------------------------------------------------------------------------------------------- state

    private static Outcome conflict() {
        return Outcome.of(NvmeStatus.RESERVATION_CONFLICT | NvmeStatus.DNR);
    }

    private static Outcome invalidField() {
        return Outcome.of(NvmeStatus.INVALID_FIELD | NvmeStatus.DNR);
    }

    /** The host is a registrant and gave its key (CRKEY), or asked for the key not to be checked (IEKEY). */
    private static boolean holdsKey(Registrant me, boolean iekey, long crkey) {
        return me != null && (iekey || me.key() == crkey);
    }

    /** Persists (if there is a file) then publishes {@code next}; a failed write changes nothing. Under lock. */
    private Outcome commit(State next, List<Notification> notes) {
        if (next != state && stateFile != null) {
            try {
                write(stateFile, next);
            } catch (IOException e) {
                org.slf4j.LoggerFactory.getLogger(Reservations.class).error(
                    "reservation state {}: cannot persist the change, refused: {}", stateFile, e.toString());
                return Outcome.of(NvmeStatus.INTERNAL_ERROR);
            }
        }
        state = next;
        publish();
        return new Outcome(NvmeStatus.SUCCESS, List.copyOf(notes));
    }

    private void publish() {
        snapshot = state.type() == ReservationType.NONE ? null : new Snapshot(state);
    }

    static void write(Path file, State s) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.put("version", FILE_VERSION);
        root.put("ptpl", s.ptpl());
        root.put("generation", Integer.toUnsignedLong(s.generation()));
        root.put("type", s.type());
        if (s.holder() != null) {
            root.put("holder", s.holder().toString());
        }
        ArrayNode regs = root.putArray("registrants");
        for (Registrant r : s.registrants()) {
            regs.addObject().put("hostid", r.host().toString()).put("key", Long.toUnsignedString(r.key(), 16));
        }
        byte[] bytes = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root);
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = dir.resolve(file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.deleteIfExists(tmp);
            throw new IOException("the file system of " + dir + " cannot rename atomically", e);
        }
        // The rename is durable only once the directory entry is.
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    static State parse(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(new String(Files.readAllBytes(file), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IOException(file + ": not a reservation state file: " + e.getMessage(), e);
        }
        try {
            if (root == null || root.path("version").asInt() != FILE_VERSION) {
                throw new IllegalArgumentException("version " + (root == null ? null : root.get("version"))
                    + " (expected " + FILE_VERSION + ")");
            }
            int type = root.path("type").asInt();
            if (type != ReservationType.NONE && !ReservationType.isValid(type)) {
                throw new IllegalArgumentException("type " + type);
            }
            List<Registrant> regs = new ArrayList<>();
            for (JsonNode r : root.path("registrants")) {
                regs.add(new Registrant(HostId.parse(r.path("hostid").asText()),
                    Long.parseUnsignedLong(r.path("key").asText(), 16)));
            }
            HostId holder = root.hasNonNull("holder") ? HostId.parse(root.get("holder").asText()) : null;
            if (type != ReservationType.NONE && !ReservationType.isAllRegistrantsType(type)
                && (holder == null || regs.stream().noneMatch(r -> r.host().equals(holder)))) {
                throw new IllegalArgumentException("the holder " + holder + " is not a registrant");
            }
            return new State(regs, type, ReservationType.isAllRegistrantsType(type) ? null : holder,
                (int) root.path("generation").asLong(), root.path("ptpl").asBoolean());
        } catch (IllegalArgumentException e) {
            throw new IOException(file + ": not a valid reservation state: " + e.getMessage(), e);
        }
    }
}
