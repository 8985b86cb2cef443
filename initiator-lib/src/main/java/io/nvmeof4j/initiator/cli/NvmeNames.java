package io.nvmeof4j.initiator.cli;

import io.nvmeof4j.protocol.spi.AddressFamily;
import io.nvmeof4j.protocol.spi.TransportType;

/** The words nvme-cli/libnvme print for discovery log codes ({@code nvmf_trtype_str} and friends). */
final class NvmeNames {
    private NvmeNames() {
    }

    static String trtype(int code) {
        for (TransportType t : TransportType.values()) {
            if (t.code() == code) {
                return t.configName();
            }
        }
        return "unrecognized";
    }

    static String adrfam(int code) {
        if (code == AddressFamily.IB.code()) {
            return "infiniband";
        }
        if (code == AddressFamily.FC.code()) {
            return "fibre-channel";
        }
        if (code == 0xFE) {
            return "intra-host";
        }
        for (AddressFamily f : AddressFamily.values()) {
            if (f.code() == code) {
                return f.configName();
            }
        }
        return "unrecognized";
    }

    static String subtype(int code) {
        switch (code) {
            case 1: return "discovery subsystem referral";
            case 2: return "nvme subsystem";
            case 3: return "current discovery subsystem";
            default: return "unrecognized";
        }
    }

    /** TREQ bits 1:0 (secure channel) and bit 2 (SQ flow control disable), as libnvme words them. */
    static String treq(int treq) {
        String secure;
        switch (treq & 0x3) {
            case 0: secure = "not specified"; break;
            case 1: secure = "required"; break;
            case 2: secure = "not required"; break;
            default: secure = "reserved"; break;
        }
        return (treq & 0x4) != 0 ? secure + ", sq flow control disable supported" : secure;
    }
}
