/**
 * NVMe over Fabrics on RDMA (NVMe-oF 1.1 RDMA transport binding; wire reference 4), controller role, over the JNI
 * verbs and RDMA CM layer of module {@code native} ({@code io.nvmeof4j.jni.rdma}).
 * <ul>
 *   <li>{@link io.nvmeof4j.rdma.RdmaControllerTransport}: the {@code ControllerTransport}; one
 *       {@link io.nvmeof4j.rdma.RdmaPollGroup} per reactor, one {@code RdmaListener} (CM event thread) per port.</li>
 *   <li>{@code RdmaControllerQueue} / {@code RdmaRequest}: one NVMe queue on one RC queue pair, and its command
 *       contexts: in-capsule data, keyed SGLs by RDMA READ / RDMA WRITE + SEND, SEND_WITH_INV, teardown.</li>
 *   <li>{@link io.nvmeof4j.rdma.CmConnectRequest}, {@link io.nvmeof4j.rdma.CmConnectAccept},
 *       {@link io.nvmeof4j.rdma.CmConnectReject}: the CM private data; {@link io.nvmeof4j.rdma.QueueSizing}: the
 *       checks of a connect request and the queue's sizes.</li>
 *   <li>{@link io.nvmeof4j.rdma.QueuePairVerbs}, {@link io.nvmeof4j.rdma.CompletionWaiter}: the seam to the JNI
 *       layer ({@link io.nvmeof4j.rdma.JniQueuePair}, {@link io.nvmeof4j.rdma.DeviceWaiter}), faked in unit tests.</li>
 * </ul>
 * The host role is in {@code io.nvmeof4j.rdma.host}.
 */
package io.nvmeof4j.rdma;
