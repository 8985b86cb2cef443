package io.nvmeof4j.initiator;

/**
 * Identify Controller (CNS 01h) as a value: the fields a host application uses (wire reference 2.6).
 *
 * @param vendorId              VID
 * @param serialNumber          SN, trimmed
 * @param modelNumber           MN, trimmed
 * @param firmwareRevision      FR, trimmed
 * @param controllerId          CNTLID
 * @param version               VER (major 31:16, minor 15:8)
 * @param controllerType        CNTRLTYPE: 1 I/O, 2 discovery, 3 administrative (0: not reported)
 * @param maxDataTransferBytes  MDTS in bytes, 0 when unlimited
 * @param maxOutstandingCommands MAXCMD
 * @param numberOfNamespaces    NN
 * @param optionalNvmCommands   ONCS (bit 0 compare, 2 DSM, 3 write zeroes)
 * @param volatileWriteCache    VWC bit 0
 * @param keepAliveSupport100ms KAS
 * @param sglSupport            SGLS
 * @param optionalAsyncEvents   OAES
 * @param ioCommandCapsuleSize  IOCCSZ (16-byte units)
 * @param inCapsuleDataSize     IOCCSZ × 16 − 64: the largest write sent in-capsule
 * @param subsystemNqn          SUBNQN
 * @param logPageAttributes     LPA (bit 2: extended Get Log Page, LPO honoured)
 * @param controllerAttributes  CTRATT
 * @param multiPathCapabilities CMIC (bit 3: ANA reporting)
 */
public record ControllerInfo(int vendorId, String serialNumber, String modelNumber, String firmwareRevision,
                             int controllerId, int version, int controllerType, long maxDataTransferBytes,
                             int maxOutstandingCommands, int numberOfNamespaces, int optionalNvmCommands,
                             boolean volatileWriteCache, int keepAliveSupport100ms, int sglSupport,
                             int optionalAsyncEvents, int ioCommandCapsuleSize, int inCapsuleDataSize,
                             String subsystemNqn, int logPageAttributes, int controllerAttributes,
                             int multiPathCapabilities) {
    /** CMIC bit 3: the controller reports Asymmetric Namespace Access (log page 0Ch, ANA statuses). */
    public boolean supportsAna() {
        return (multiPathCapabilities & io.nvmeof4j.protocol.admin.IdentifyController.CMIC_ANA) != 0;
    }

    public boolean supportsCompare() {
        return (optionalNvmCommands & 1) != 0;
    }

    public boolean supportsDatasetManagement() {
        return (optionalNvmCommands & (1 << 2)) != 0;
    }

    public boolean supportsWriteZeroes() {
        return (optionalNvmCommands & (1 << 3)) != 0;
    }

    /** {@code "1.3.0"}. */
    public String versionString() {
        return (version >>> 16) + "." + ((version >>> 8) & 0xFF) + "." + (version & 0xFF);
    }
}
