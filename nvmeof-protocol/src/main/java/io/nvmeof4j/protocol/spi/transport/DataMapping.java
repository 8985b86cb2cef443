package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SglDescriptor;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;

/**
 * How a received command's data moves, decided from its SGL (wire reference 1.3, 4 and 5; nvmet's
 * {@code nvmet_tcp_map_data} and {@code nvmet_rdma_map_sgl}): no data, data in the capsule, data the controller
 * pulls from the host (R2T/H2CData, RDMA READ) or pushes to it (C2HData, RDMA WRITE). A descriptor the binding
 * cannot serve gets the NVMe status it is failed with before it reaches the command layer.
 * <p>The two bindings differ in two ways, both fixed at construction: how pulled or pushed data is described (a keyed
 * data block carrying the host's address and key for RDMA, the transport data block 0x5A for NVMe/TCP), and whether
 * the capsule's length says exactly how much data it carries (an NVMe/TCP PDU does, so any byte the SGL does not
 * describe is an error; an RDMA receive may be longer than the data, and nvmet ignores the rest).
 * <p>A flyweight result: {@link #map} returns the status and leaves the transfer kind and length here, so one
 * instance per queue serves every command without allocating. Reactor thread only.
 */
public final class DataMapping {
    public static final int TRANSFER_NONE = 0;
    public static final int TRANSFER_IN_CAPSULE = 1;
    /** The controller pulls the host's data before executing (NVMe/TCP R2T, RDMA READ). */
    public static final int TRANSFER_FROM_HOST = 2;
    /** The controller pushes the data to the host before the response (NVMe/TCP C2HData, RDMA WRITE). */
    public static final int TRANSFER_TO_HOST = 3;

    private final boolean keyed;
    private final boolean exactCapsuleLength;
    private int transfer;
    private int length;

    private DataMapping(boolean keyed, boolean exactCapsuleLength) {
        this.keyed = keyed;
        this.exactCapsuleLength = exactCapsuleLength;
    }

    /** NVMe/TCP: in-capsule data or the transport data block; the PDU's length is the in-capsule data's. */
    public static DataMapping forTcp() {
        return new DataMapping(false, true);
    }

    /** NVMe-oF/RDMA: in-capsule data or a keyed data block; a receive may carry more than the SGL describes. */
    public static DataMapping forRdma() {
        return new DataMapping(true, false);
    }

    /**
     * Maps one command's data.
     *
     * @param sqe             the received command
     * @param inCapsuleBytes  bytes of data that came with the capsule
     * @param inCapsuleLimit  the most in-capsule data this command may have (the queue's in-capsule size, or what its
     *                        slot's buffer holds if less); -1 when the queue has no buffer for it at all
     * @param maxTransferSize the most data one command may move (MDTS, the pool's largest buffer)
     * @return {@link NvmeStatus#SUCCESS} with {@link #transfer()} and {@link #length()} set, or the status to fail the
     *         command with (then {@link #transfer()} is {@link #TRANSFER_NONE})
     */
    public int map(SubmissionQueueEntry sqe, int inCapsuleBytes, int inCapsuleLimit, int maxTransferSize) {
        transfer = TRANSFER_NONE;
        length = 0;
        if (sqe.psdt() != 1) {
            // Fabrics data is always SGL-described (PSDT 01b): like nvmet, answer Invalid Field before reading the
            // SGL, whose bytes mean something else under PRPs. FUSE is the command layer's to judge (it pairs fused
            // commands by Request.sequence()).
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR;
        }
        SglDescriptor sgl = sqe.sgl1();
        int id = sgl.id();
        DataDirection direction = sqe.dataDirection();
        if (id == SglDescriptor.ID_IN_CAPSULE) {
            return mapInCapsule(sgl, direction, inCapsuleBytes, inCapsuleLimit, maxTransferSize);
        }
        if (keyed ? sgl.type() == SglDescriptor.TYPE_KEYED_DATA_BLOCK : id == SglDescriptor.ID_TCP_TRANSPORT) {
            return mapTransfer(sgl, direction, inCapsuleBytes, maxTransferSize);
        }
        // An all-zero (or zero-length unkeyed) descriptor just says "no data".
        boolean unkeyed = sgl.type() == SglDescriptor.TYPE_DATA_BLOCK
            || sgl.type() == SglDescriptor.TYPE_TRANSPORT_DATA_BLOCK;
        if (unkeyed && sgl.length() == 0 && (inCapsuleBytes == 0 || !exactCapsuleLength)) {
            return NvmeStatus.SUCCESS;
        }
        return NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR;
    }

    private int mapInCapsule(SglDescriptor sgl, DataDirection direction, int inCapsuleBytes, int inCapsuleLimit,
                             int maxTransferSize) {
        long length = sgl.length();
        if (exactCapsuleLength && length > maxTransferSize) {
            return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
        }
        if (length == 0 && (inCapsuleBytes == 0 || !exactCapsuleLength)) {
            return NvmeStatus.SUCCESS;
        }
        if (direction != DataDirection.HOST_TO_CONTROLLER) {
            return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // in-capsule data only goes host to controller
        }
        if (length > inCapsuleLimit || sgl.address() != 0) {
            // What nvmet answers for in-capsule data beyond the queue's inline size (nvmet_tcp_map_data,
            // nvmet_rdma_map_sgl_inline).
            return NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR;
        }
        if (exactCapsuleLength ? length != inCapsuleBytes : length > inCapsuleBytes) {
            return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
        }
        transfer = TRANSFER_IN_CAPSULE;
        this.length = (int) length;
        return NvmeStatus.SUCCESS;
    }

    private int mapTransfer(SglDescriptor sgl, DataDirection direction, int inCapsuleBytes, int maxTransferSize) {
        long length;
        if (keyed) {
            int id = sgl.id();
            if (id != SglDescriptor.ID_KEYED_ADDRESS && id != SglDescriptor.ID_KEYED_INVALIDATE) {
                return NvmeStatus.SGL_DESCRIPTOR_TYPE_INVALID | NvmeStatus.DNR;
            }
            length = sgl.keyedLength();
            if (length == 0) {
                return NvmeStatus.SUCCESS;
            }
            if (length > maxTransferSize) {
                return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
            }
        } else {
            length = sgl.length();
            if (length > maxTransferSize) {
                return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR;
            }
            if (inCapsuleBytes != 0) {
                return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // data in the capsule the SGL does not describe
            }
            if (length == 0) {
                return NvmeStatus.SUCCESS;
            }
            if (sgl.address() != 0) {
                return NvmeStatus.SGL_OFFSET_INVALID | NvmeStatus.DNR;
            }
        }
        switch (direction) {
            case HOST_TO_CONTROLLER:
                transfer = TRANSFER_FROM_HOST;
                break;
            case CONTROLLER_TO_HOST:
                transfer = TRANSFER_TO_HOST;
                break;
            case NONE:
                return NvmeStatus.SGL_DATA_LENGTH_INVALID | NvmeStatus.DNR; // data for a command that has none
            default:
                return NvmeStatus.INVALID_FIELD | NvmeStatus.DNR; // bidirectional: no command we serve
        }
        this.length = (int) length;
        return NvmeStatus.SUCCESS;
    }

    /** One of the {@code TRANSFER_} kinds, after a successful {@link #map}. */
    public int transfer() {
        return transfer;
    }

    /** Bytes the command moves, after a successful {@link #map}. */
    public int length() {
        return length;
    }
}
