package io.nvmeof4j.initiator;

import io.nvmeof4j.protocol.spi.TransportAddress;

/**
 * One path of a {@link MultipathController} at one moment.
 *
 * @param address     where the path connects
 * @param state       its controller's state, or null while no controller is connected (it is being re-added)
 * @param controllerId its controller's CNTLID, -1 without one
 * @param inFlight    multipath I/Os on it now
 * @param submitted   I/Os sent on it
 * @param completed   I/Os that succeeded on it
 * @param failed      I/Os that ended on it with an error that another path cannot mend (e.g. LBA out of range)
 * @param failedOver  I/Os that got a path error (SCT 3h: transport lost, ANA inaccessible/transition/persistent
 *                    loss, command timeout) on it and moved to another path
 * @param rejoins     times the path was connected again after it had been lost
 */
public record PathStats(TransportAddress address, ControllerState state, int controllerId, int inFlight,
                        long submitted, long completed, long failed, long failedOver, long rejoins) {
}
