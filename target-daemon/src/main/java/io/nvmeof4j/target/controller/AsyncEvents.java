package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.AsyncEvent;
import io.nvmeof4j.protocol.admin.ChangedNamespaceList;
import io.nvmeof4j.protocol.admin.FeatureIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.reservation.ReservationNotificationLog;
import io.nvmeof4j.protocol.spi.Request;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One controller's asynchronous events (NVMe Base 2.0, 5.2; wire reference 2.9): the parked Asynchronous Event
 * Requests (at most {@link Controller#ASYNC_EVENT_REQUEST_LIMIT}, AERL + 1), the events raised while none was
 * parked, the Asynchronous Event Configuration (feature 0Bh) and the logs an event points to that clear when read:
 * Changed Namespace List (04h), reservation notifications (80h, with feature 82h's masks), and the re-arming of the
 * ANA (0Ch) and discovery (70h) notices. Every notice is masked from the moment it is raised until the host reads
 * its log with RAE = 0, as nvmet does. The admin queue's reactor parks and reads; the management API, the model
 * and the reservation code raise from their threads: one monitor guards it all, off the data path.
 */
final class AsyncEvents {
    /** Reservation notifications kept for the host to read; older ones are dropped (the count shows the gap). */
    static final int RESERVATION_LOG_DEPTH = 64;

    private final boolean discovery;
    private int asyncEventConfig;
    /** The controller is gone: nothing more is raised, a new request completes Aborted – SQ Deletion at once. */
    private boolean closed;
    /** Target shutdown is draining: a new request completes at once. */
    private boolean draining;
    private final Request[] parkedAsyncEvents = new Request[Controller.ASYNC_EVENT_REQUEST_LIMIT];
    private int parkedAsyncEventCount;
    /** Events raised while no request was parked, oldest first (a handful at most: each type is masked). */
    private final int[] pendingEvents = new int[8];
    private int pendingEventCount;
    private boolean namespaceNoticeMasked;
    private boolean discoveryNoticeMasked;
    private final int[] changedNamespaces = new int[ChangedNamespaceList.MAX_ENTRIES];
    private int changedNamespaceCount;
    private boolean changedNamespacesOverflow;
    private boolean anaNoticeMasked;
    /** Reservation notifications not yet read (log 80h), oldest first: NSID and type, a bounded ring. */
    private final int[] reservationNsids = new int[RESERVATION_LOG_DEPTH];
    private final int[] reservationTypes = new int[RESERVATION_LOG_DEPTH];
    private final long[] reservationCounts = new long[RESERVATION_LOG_DEPTH];
    private int reservationHead;
    private int reservationCount;
    private long reservationLogCount;
    private boolean reservationEventMasked;
    /** Feature 82h per NSID (set bits mask notification types). */
    private final Map<Integer, Integer> reservationMasks = new HashMap<>();
    private int reservationMaskAll;

    /** @param defaultConfig the Asynchronous Event Configuration in force until the host sets one */
    AsyncEvents(boolean discovery, int defaultConfig) {
        this.discovery = discovery;
        this.asyncEventConfig = defaultConfig;
    }

    synchronized int config() {
        return asyncEventConfig;
    }

    synchronized void config(int value) {
        asyncEventConfig = value;
    }


    /**
     * Asynchronous Event Request: completes at once when an event is pending, else parks the request.
     *
     * @return false when {@link Controller#ASYNC_EVENT_REQUEST_LIMIT} requests are already parked
     */
    boolean park(Request request) {
        int event;
        synchronized (this) {
            if (closed || draining) {
                event = -1;
            } else if (pendingEventCount > 0) {
                event = pendingEvents[0];
                System.arraycopy(pendingEvents, 1, pendingEvents, 0, pendingEventCount - 1);
                pendingEventCount--;
            } else {
                if (parkedAsyncEventCount >= Controller.ASYNC_EVENT_REQUEST_LIMIT) {
                    return false;
                }
                parkedAsyncEvents[parkedAsyncEventCount++] = request;
                return true;
            }
        }
        if (event == -1) {
            request.complete(NvmeStatus.ABORTED_SQ_DELETION);
        } else {
            request.response().dw0(event);
            request.complete(NvmeStatus.SUCCESS);
        }
        return true;
    }

    /**
     * Namespace {@code nsid} was added, removed or changed: it goes into the Changed Namespace List log, and when
     * the host enabled namespace attribute notices (Async Event Configuration bit 8) and has not been told since
     * it last read that log, an event (notice, info 00h, log 04h) completes a parked Asynchronous Event Request.
     */
    void notifyNamespaceChanged(int nsid) {
        Request toComplete;
        synchronized (this) {
            if (closed || discovery) {
                return;
            }
            addChangedNamespaceLocked(nsid);
            if ((asyncEventConfig & FeatureIdentifier.AEC_NAMESPACE_ATTRIBUTE) == 0 || namespaceNoticeMasked) {
                return;
            }
            namespaceNoticeMasked = true;
            toComplete = raiseLocked(AsyncEvent.NAMESPACE_ATTRIBUTE_CHANGED_DW0);
        }
        completeEvent(toComplete, AsyncEvent.NAMESPACE_ATTRIBUTE_CHANGED_DW0);
    }

    /**
     * An ANA group's state changed on this controller's port: an event (notice, info 03h, log 0Ch) when the host
     * enabled ANA change notices (Async Event Configuration bit 11) and has read the ANA log since the last one.
     */
    void notifyAnaChanged() {
        Request toComplete;
        synchronized (this) {
            if (closed || discovery) {
                return;
            }
            if ((asyncEventConfig & FeatureIdentifier.AEC_ANA_CHANGE) == 0 || anaNoticeMasked) {
                return;
            }
            anaNoticeMasked = true;
            toComplete = raiseLocked(AsyncEvent.ANA_CHANGE_DW0);
        }
        completeEvent(toComplete, AsyncEvent.ANA_CHANGE_DW0);
    }

    /** The host read the ANA log with RAE = 0: ANA change notices are re-armed. */
    void anaLogRead(boolean retainAsyncEvent) {
        if (!retainAsyncEvent) {
            synchronized (this) {
                anaNoticeMasked = false;
            }
        }
    }

    /**
     * A reservation notification for this controller's host on namespace {@code nsid}: queued for log 80h unless
     * masked (feature 82h), and announced by an event (I/O command set specific, info 00h, log 80h) unless one is
     * already outstanding.
     */
    void notifyReservation(int nsid, int type) {
        Request toComplete;
        synchronized (this) {
            if (closed || discovery) {
                return;
            }
            if ((reservationMaskLocked(nsid) & ReservationNotificationLog.maskBit(type)) != 0) {
                return;
            }
            if (reservationCount == RESERVATION_LOG_DEPTH) {
                reservationHead = (reservationHead + 1) % RESERVATION_LOG_DEPTH;
                reservationCount--;
            }
            int at = (reservationHead + reservationCount) % RESERVATION_LOG_DEPTH;
            reservationNsids[at] = nsid;
            reservationTypes[at] = type;
            reservationCount++;
            // The count wraps from the largest value to 1: 0 means an empty page.
            reservationLogCount = reservationLogCount == -1L ? 1 : reservationLogCount + 1;
            reservationCounts[at] = reservationLogCount;
            if (reservationEventMasked) {
                return;
            }
            reservationEventMasked = true;
            toComplete = raiseLocked(AsyncEvent.RESERVATION_LOG_AVAILABLE_DW0);
        }
        completeEvent(toComplete, AsyncEvent.RESERVATION_LOG_AVAILABLE_DW0);
    }

    /**
     * Log 80h: the oldest queued notification, removed (unless RAE), with the number still queued; an empty page when
     * none is. Reading re-arms the event.
     */
    void readReservationLog(ReservationNotificationLog log, boolean retainAsyncEvent) {
        synchronized (this) {
            log.clear();
            if (reservationCount > 0) {
                log.count(reservationCounts[reservationHead])
                    .type(reservationTypes[reservationHead])
                    .nsid(reservationNsids[reservationHead])
                    .available(reservationCount - 1);
                if (!retainAsyncEvent) {
                    reservationHead = (reservationHead + 1) % RESERVATION_LOG_DEPTH;
                    reservationCount--;
                }
            }
            if (!retainAsyncEvent) {
                reservationEventMasked = false;
            }
        }
    }

    /** Feature 82h for one NSID, or every namespace with NSID FFFFFFFFh. */
    void reservationMask(int nsid, int mask) {
        synchronized (this) {
            if (nsid == -1) {
                reservationMaskAll = mask;
                reservationMasks.clear();
            } else {
                reservationMasks.put(nsid, mask);
            }
        }
    }

    int reservationMask(int nsid) {
        synchronized (this) {
            return reservationMaskLocked(nsid);
        }
    }

    private int reservationMaskLocked(int nsid) {
        Integer m = reservationMasks.get(nsid);
        return m != null ? m : reservationMaskAll;
    }

    /** The discovery log changed: an event (notice, info F0h, log 70h) if the host enabled it (bit 31). */
    void notifyDiscoveryChanged() {
        Request toComplete;
        synchronized (this) {
            if (closed || !discovery) {
                return;
            }
            if ((asyncEventConfig & FeatureIdentifier.AEC_DISCOVERY_LOG_CHANGE) == 0 || discoveryNoticeMasked) {
                return;
            }
            discoveryNoticeMasked = true;
            toComplete = raiseLocked(AsyncEvent.DISCOVERY_LOG_CHANGED_DW0);
        }
        completeEvent(toComplete, AsyncEvent.DISCOVERY_LOG_CHANGED_DW0);
    }

    /** The parked request to complete with {@code event}, or null after queueing the event. */
    private Request raiseLocked(int event) {
        if (parkedAsyncEventCount > 0) {
            Request r = parkedAsyncEvents[--parkedAsyncEventCount];
            parkedAsyncEvents[parkedAsyncEventCount] = null;
            return r;
        }
        if (pendingEventCount < pendingEvents.length) {
            pendingEvents[pendingEventCount++] = event;
        }
        return null;
    }

    private static void completeEvent(Request request, int event) {
        if (request != null) {
            request.response().dw0(event);
            request.complete(NvmeStatus.SUCCESS);
        }
    }

    private void addChangedNamespaceLocked(int nsid) {
        if (changedNamespacesOverflow) {
            return;
        }
        for (int i = 0; i < changedNamespaceCount; i++) {
            if (changedNamespaces[i] == nsid) {
                return;
            }
        }
        if (changedNamespaceCount == changedNamespaces.length) {
            changedNamespacesOverflow = true;
            changedNamespaceCount = 0;
            return;
        }
        changedNamespaces[changedNamespaceCount++] = nsid;
    }

    /**
     * Writes the Changed Namespace List into {@code list}; unless {@code retainAsyncEvent}, clears it and
     * re-arms the namespace attribute notice.
     */
    void readChangedNamespaces(ChangedNamespaceList list, boolean retainAsyncEvent) {
        synchronized (this) {
            list.clear();
            if (changedNamespacesOverflow) {
                list.markOverflow();
            } else {
                for (int i = 0; i < changedNamespaceCount; i++) {
                    list.nsid(i, changedNamespaces[i]);
                }
            }
            if (!retainAsyncEvent) {
                changedNamespaceCount = 0;
                changedNamespacesOverflow = false;
                namespaceNoticeMasked = false;
            }
        }
    }

    /** The host read the discovery log with RAE = 0: discovery change notices are re-armed. */
    void discoveryLogRead(boolean retainAsyncEvent) {
        if (!retainAsyncEvent) {
            synchronized (this) {
                discoveryNoticeMasked = false;
            }
        }
    }

    /** Target shutdown: new requests end at once; the parked ones are returned for the caller to abort. */
    synchronized List<Request> drain() {
        draining = true;
        return takeParked();
    }

    /** The controller is gone: nothing is raised any more; the parked requests are returned to abort. */
    synchronized List<Request> close() {
        closed = true;
        return takeParked();
    }

    private List<Request> takeParked() {
        List<Request> parked = new ArrayList<>(parkedAsyncEventCount);
        for (int i = 0; i < parkedAsyncEventCount; i++) {
            parked.add(parkedAsyncEvents[i]);
            parkedAsyncEvents[i] = null;
        }
        parkedAsyncEventCount = 0;
        return parked;
    }
}
