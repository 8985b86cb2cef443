package io.nvmeof4j.target.controller;

import io.nvmeof4j.protocol.admin.GetLogPageCommand;
import io.nvmeof4j.protocol.admin.IdentifyCommand;
import io.nvmeof4j.protocol.admin.IdentifyController;
import io.nvmeof4j.protocol.admin.LogPageIdentifier;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.spi.Request;
import io.nvmeof4j.target.discovery.DiscoveryLogBuilder;
import io.nvmeof4j.target.model.Port;

/**
 * The admin command set of a discovery controller (wire reference 2.10; nvmet's discovery.c,
 * {@code nvmet_parse_discovery_cmd}): Identify CNS 01h only, Get Log Page 70h only, Set/Get Features Keep Alive
 * Timer and Asynchronous Event Configuration, Asynchronous Event Request and Keep Alive. Any other opcode, the NVM
 * admin commands included, is Invalid Opcode + DNR; another CNS, LID or FID is Invalid Field + DNR.
 */
final class DiscoveryCommands extends AdminCommandSet {
    private static final String FIRMWARE_REVISION = firmwareRevision();

    private final IdentifyCommand identify = new IdentifyCommand();
    private final DiscoveryLogBuilder discoveryLog;

    DiscoveryCommands(Controller controller) {
        super(controller);
        this.discoveryLog = new DiscoveryLogBuilder(controller.model());
    }

    @Override
    void executeOwn(Request r) {
        fail(r, NvmeStatus.INVALID_OPCODE | NvmeStatus.DNR, "opcode not served by a discovery controller");
    }

    @Override
    void identify(Request r) {
        if (!expectLength(r, IdentifyCommand.DATA_LENGTH)) {
            return;
        }
        identify.wrap(r.command());
        if (identify.cns() != IdentifyCommand.CNS_CONTROLLER) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "discovery Identify CNS other than 01h");
            return;
        }
        identifyControllerCommon(r, controller.registry().discoverySerialNumber(), "nvmeof4j discovery",
            FIRMWARE_REVISION, IdentifyController.CNTRLTYPE_DISCOVERY)
            // The discovery controller's own fields (nvmet): extended Get Log Page for LPO/NUMDU, nothing else.
            .logPageAttributes(IdentifyController.LPA_EXTENDED_DATA);
        r.complete(NvmeStatus.SUCCESS);
    }

    @Override
    void logPage(Request r, GetLogPageCommand cmd, int lid) {
        if (lid != LogPageIdentifier.DISCOVERY) {
            fail(r, NvmeStatus.INVALID_FIELD | NvmeStatus.DNR, "discovery Get Log Page of LID " + lid);
            return;
        }
        String localTraddr = controller.localAddress() == null ? null : controller.localAddress().traddr();
        scratch = discoveryLog.build(currentPort(), controller.hostNqn(), localTraddr, scratch);
        if (sendLog(r, cmd, scratch.limit())) {
            controller.discoveryLogRead(cmd.retainAsyncEvent());
        }
    }

    private Port currentPort() {
        // The daemon may replace a port by its bound form (real service id) after this controller connected.
        Port connected = controller.port();
        for (Port p : controller.model().ports()) {
            if (p.portId() == connected.portId()) {
                return p;
            }
        }
        return connected;
    }

    private static String firmwareRevision() {
        String version = DiscoveryCommands.class.getPackage().getImplementationVersion();
        return ascii(version == null ? "0.1.0" : version, IdentifyController.FR_LENGTH);
    }
}
