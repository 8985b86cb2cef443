package io.nvmeof4j.jni.rdma;

import java.util.ArrayList;
import java.util.List;

/**
 * An RDMA device and the attributes that size NVMe-oF/RDMA queues ({@code struct ibv_device_attr} and
 * {@code struct ibv_port_attr} of each port).
 *
 * @param name            the verbs device name, for example {@code rxe0} or {@code mlx5_0}
 * @param nodeGuid        the node GUID in host order (as {@code ibv_devinfo} prints it, byte-swapped from the wire)
 * @param maxQpWr         most work requests one send or receive queue holds
 * @param maxSge          most scatter/gather entries per work request
 * @param maxCqe          most entries of one completion queue
 * @param maxMrSize       largest memory region, in bytes, unsigned (rxe reports 2^64 - 1, which reads as -1:
 *                        compare with {@link Long#compareUnsigned})
 * @param maxQpRdAtom     most RDMA READ/atomic operations a QP answers at once (the responder side, IRD)
 * @param maxQpInitRdAtom most RDMA READ/atomic operations a QP issues at once (the initiator side, ORD)
 * @param maxQp           most queue pairs
 * @param maxCq           most completion queues
 * @param maxMr           most memory regions
 * @param maxPd           most protection domains
 * @param ports           the device's ports, numbered from 1
 */
public record RdmaDevice(String name, long nodeGuid, int maxQpWr, int maxSge, int maxCqe, long maxMrSize,
                         int maxQpRdAtom, int maxQpInitRdAtom, int maxQp, int maxCq, int maxMr, int maxPd,
                         List<Port> ports) {
    // The layout of the long[] the native query fills; query.c writes the same order.
    static final int ATTR_NODE_GUID = 0;
    static final int ATTR_MAX_QP_WR = 1;
    static final int ATTR_MAX_SGE = 2;
    static final int ATTR_MAX_CQE = 3;
    static final int ATTR_MAX_MR_SIZE = 4;
    static final int ATTR_MAX_QP_RD_ATOM = 5;
    static final int ATTR_MAX_QP_INIT_RD_ATOM = 6;
    static final int ATTR_MAX_QP = 7;
    static final int ATTR_MAX_CQ = 8;
    static final int ATTR_MAX_MR = 9;
    static final int ATTR_MAX_PD = 10;
    static final int ATTR_PORT_COUNT = 11;
    static final int ATTR_PORTS = 12;
    static final int PORT_ATTRS = 6; // state, max_mtu, active_mtu, link_layer, lid, gid_tbl_len
    static final int MAX_PORTS = 4;
    static final int ATTR_COUNT = ATTR_PORTS + PORT_ATTRS * MAX_PORTS;

    /** {@code IBV_PORT_ACTIVE}: the port can carry traffic. */
    public static final int PORT_STATE_ACTIVE = 4;
    /** {@code IBV_LINK_LAYER_INFINIBAND}. */
    public static final int LINK_LAYER_INFINIBAND = 1;
    /** {@code IBV_LINK_LAYER_ETHERNET}: RoCE (Soft-RoCE included). */
    public static final int LINK_LAYER_ETHERNET = 2;

    public RdmaDevice {
        ports = List.copyOf(ports);
    }

    /**
     * One port of a device.
     *
     * @param number    the port number (from 1)
     * @param state     {@code enum ibv_port_state}: 1 down, 2 init, 3 armed, 4 active, 5 active-defer
     * @param maxMtu    the largest MTU as an {@code enum ibv_mtu} code (1 = 256 … 5 = 4096 bytes)
     * @param activeMtu the MTU in use, same coding
     * @param linkLayer {@link #LINK_LAYER_INFINIBAND} or {@link #LINK_LAYER_ETHERNET} (0 = unspecified)
     * @param lid       the port's LID (0 on RoCE)
     * @param gidTableLength entries of the GID table
     */
    public record Port(int number, int state, int maxMtu, int activeMtu, int linkLayer, int lid, int gidTableLength) {
        public boolean isActive() {
            return state == PORT_STATE_ACTIVE;
        }

        /** The active MTU in bytes (256 &lt;&lt; (code - 1)), 0 when unknown. */
        public int activeMtuBytes() {
            return mtuBytes(activeMtu);
        }

        /** The largest MTU in bytes, 0 when unknown. */
        public int maxMtuBytes() {
            return mtuBytes(maxMtu);
        }

        private static int mtuBytes(int code) {
            return code >= 1 && code <= 5 ? 256 << (code - 1) : 0;
        }

        /** {@code "DOWN"}, {@code "INIT"}, {@code "ARMED"}, {@code "ACTIVE"}, {@code "ACTIVE_DEFER"} or the number. */
        public String stateName() {
            return switch (state) {
                case 0 -> "NOP";
                case 1 -> "DOWN";
                case 2 -> "INIT";
                case 3 -> "ARMED";
                case 4 -> "ACTIVE";
                case 5 -> "ACTIVE_DEFER";
                default -> Integer.toString(state);
            };
        }
    }

    /** The node GUID as {@code ibv_devinfo} prints it: four groups of four hex digits. */
    public String nodeGuidString() {
        String hex = String.format("%016x", nodeGuid);
        return hex.substring(0, 4) + ":" + hex.substring(4, 8) + ":" + hex.substring(8, 12) + ":" + hex.substring(12);
    }

    static RdmaDevice fromAttributes(String name, long[] a) {
        int portCount = (int) Math.min(a[ATTR_PORT_COUNT], MAX_PORTS);
        List<Port> ports = new ArrayList<>(portCount);
        for (int p = 0; p < portCount; p++) {
            int base = ATTR_PORTS + p * PORT_ATTRS;
            ports.add(new Port(p + 1, (int) a[base], (int) a[base + 1], (int) a[base + 2], (int) a[base + 3],
                (int) a[base + 4], (int) a[base + 5]));
        }
        return new RdmaDevice(name, a[ATTR_NODE_GUID], (int) a[ATTR_MAX_QP_WR], (int) a[ATTR_MAX_SGE],
            (int) a[ATTR_MAX_CQE], a[ATTR_MAX_MR_SIZE], (int) a[ATTR_MAX_QP_RD_ATOM],
            (int) a[ATTR_MAX_QP_INIT_RD_ATOM], (int) a[ATTR_MAX_QP], (int) a[ATTR_MAX_CQ], (int) a[ATTR_MAX_MR],
            (int) a[ATTR_MAX_PD], ports);
    }
}
