package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.HostId;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.io.NvmOpcode;
import io.nvmeof4j.protocol.reservation.ReservationCommand;
import io.nvmeof4j.protocol.reservation.ReservationStatusData;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.reservation.Reservations;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The four reservation I/O commands (NVMe Base 2.0, 7.2-7.5) on one namespace: decodes them, checks the transfer
 * length as nvmet does (exactly the command's data), applies them to the namespace's {@link Reservations} and
 * delivers the notifications they cause to every controller of the hosts concerned (log 80h and its event).
 * Reservation commands are control operations: they may allocate and may wait for one fsync (persistence). A Preempt
 * and Abort that removed registrants completes later, once {@link PreemptAndAbort} has drained their commands.
 */
final class ReservationCommands {
    private ReservationCommands() {
    }

    static boolean isReservationCommand(int opcode) {
        return opcode == NvmOpcode.RESERVATION_REGISTER || opcode == NvmOpcode.RESERVATION_REPORT
            || opcode == NvmOpcode.RESERVATION_ACQUIRE || opcode == NvmOpcode.RESERVATION_RELEASE;
    }

    static void execute(Controller c, Request r, Namespace ns) {
        SubmissionQueueEntry sqe = r.command();
        int opcode = sqe.opcode();
        if (opcode == NvmOpcode.RESERVATION_REPORT) {
            report(c, r, ns, sqe);
            return;
        }
        int length = ReservationCommand.dataLength(opcode);
        if (r.dataLength() != length || r.data() == null) {
            r.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        ByteBuffer data = r.data().duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int base = r.data().position();
        long crkey = ReservationCommand.currentKey(data, base);
        HostId host = c.hostId();
        int cdw10 = sqe.cdw10();
        Reservations.Outcome outcome = switch (opcode) {
            case NvmOpcode.RESERVATION_REGISTER -> ns.reservations().register(host, cdw10, crkey,
                ReservationCommand.secondKey(data, base));
            case NvmOpcode.RESERVATION_ACQUIRE -> ns.reservations().acquire(host, cdw10, crkey,
                ReservationCommand.secondKey(data, base));
            default -> ns.reservations().release(host, cdw10, crkey);
        };
        for (Reservations.Notification n : outcome.notifications()) {
            for (Controller other : c.registry().controllers(c.subsystemNqn())) {
                if (other.hostId().equals(n.host())) {
                    other.notifyReservation(ns.nsid(), n.type());
                }
            }
        }
        if (opcode == NvmOpcode.RESERVATION_ACQUIRE && outcome.status() == NvmeStatus.SUCCESS
            && ReservationCommand.action(cdw10) == ReservationCommand.PREEMPT_AND_ABORT) {
            List<HostId> preempted = outcome.preempted();
            if (!preempted.isEmpty()) {
                PreemptAndAbort.start(c, r, ns, preempted); // completes r once their commands are done
                return;
            }
        }
        r.complete(outcome.status());
    }

    /**
     * Reservation Report: NUMD (CDW10, 0-based dwords) bytes of the Reservation Status data structure, cut where the
     * host's buffer ends. Only the extended format exists for fabrics hosts, whose host identifiers are 128 bits
     * (CTRATT bit 0): the regular format is answered Host Identifier Inconsistent Format, as SPDK and nvmet do.
     */
    private static void report(Controller c, Request r, Namespace ns, SubmissionQueueEntry sqe) {
        long length = ((sqe.cdw10() & 0xFFFF_FFFFL) + 1) * 4;
        if (r.dataLength() != length || r.data() == null) {
            r.complete(NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR);
            return;
        }
        if ((sqe.cdw11() & ReservationCommand.REPORT_EDS) == 0) {
            r.complete(NvmeStatus.HOST_IDENTIFIER_INCONSISTENT_FORMAT | NvmeStatus.DNR);
            return;
        }
        Reservations.Report report = ns.reservations().report();
        int full = ReservationStatusData.length(report.registrants().size(), true);
        ByteBuffer scratch = ByteBuffer.allocate(full).order(ByteOrder.LITTLE_ENDIAN);
        ReservationStatusData d = new ReservationStatusData().wrap(scratch, 0, true)
            .generation(report.generation())
            .type(report.type())
            .registeredControllers(report.registrants().size())
            .persistThroughPowerLoss(report.ptpl());
        for (int i = 0; i < report.registrants().size(); i++) {
            Reservations.Registrant reg = report.registrants().get(i);
            // Registrations are per host; the entry names the controller of this host on this subsystem when it has
            // exactly one here, else 0xFFFF (dynamic controller model, 7.4 Figure 399).
            d.controllerId(i, controllerOf(c, reg.host()))
                .holdsReservation(i, report.holds(reg))
                .key(i, reg.key())
                .hostId(i, reg.host());
        }
        ByteBuffer out = r.data();
        int pos = out.position();
        int copy = (int) Math.min(length, full);
        for (int i = 0; i < copy; i++) {
            out.put(pos + i, scratch.get(i));
        }
        for (int i = copy; i < length; i++) {
            out.put(pos + i, (byte) 0);
        }
        r.complete(NvmeStatus.SUCCESS);
    }

    private static int controllerOf(Controller asking, HostId host) {
        int found = ReservationStatusData.CNTLID_NONE;
        for (Controller other : asking.registry().controllers(asking.subsystemNqn())) {
            if (other.hostId().equals(host)) {
                if (found != ReservationStatusData.CNTLID_NONE) {
                    return ReservationStatusData.CNTLID_NONE;
                }
                found = other.cntlid();
            }
        }
        return found;
    }
}
