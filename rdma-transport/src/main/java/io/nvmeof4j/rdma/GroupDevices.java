package io.nvmeof4j.rdma;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CompletionChannel;
import io.nvmeof4j.jni.rdma.MemoryRegion;
import io.nvmeof4j.jni.rdma.ProtectionDomain;
import io.nvmeof4j.jni.rdma.RdmaDevice;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The device resources of one poll group, per RDMA device it serves: a protection domain, the registration of the
 * group's buffer-pool region with it (made once, here, never per I/O), and a completion channel its queues' completion
 * queues report to. Created when the group first serves the device: at listen when the listener is bound to the
 * device's address, else at the first connection request. Uses the verbs context librdmacm opened for the device,
 * since a CM id's queue pair must live in a protection domain of that very context.
 */
final class GroupDevices implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GroupDevices.class);
    /**
     * The target only starts RDMA READs (into pool buffers) and WRITEs (from them) itself: local write access is all
     * it needs. Remote access would let any connected host that guesses the key reach every tenant's data in flight.
     */
    static final int POOL_ACCESS = MemoryRegion.LOCAL_WRITE;

    /** One device's share of a group. */
    record Device(String name, RdmaDevice attributes, ProtectionDomain pd, MemoryRegion poolRegion,
                  MemoryKeys poolKeys, CompletionChannel channel) {
    }

    private final OffHeapBufferPool pool;
    private final DeviceWaiter waiter;
    private final Map<String, Device> devices = new LinkedHashMap<>();
    private boolean closed;

    GroupDevices(OffHeapBufferPool pool, DeviceWaiter waiter) {
        this.pool = pool;
        this.waiter = waiter;
    }

    /** The group's resources on {@code context}'s device, created (PD, pool registration, channel) on first use. */
    synchronized Device device(VerbsContext context) throws NativeIoException {
        if (closed) {
            throw new IllegalStateException("poll group is closed");
        }
        String name = context.deviceName();
        Device device = devices.get(name);
        if (device != null) {
            return device;
        }
        RdmaDevice attributes = context.query();
        ProtectionDomain pd = context.allocateProtectionDomain();
        try {
            MemoryRegion region = pd.registerMemory(pool.region(), POOL_ACCESS);
            CompletionChannel channel = context.createCompletionChannel();
            device = new Device(name, attributes, pd, region,
                new MemoryKeys(region.address(), region.length(), region.lkey(), region.rkey()), channel);
        } catch (NativeIoException | RuntimeException e) {
            pd.close();
            throw e;
        }
        devices.put(name, device);
        waiter.add(device.channel());
        LOG.info("RDMA device {}: buffer pool region of {} MiB registered once for a poll group (lkey 0x{})", name,
            pool.region().capacity() >> 20, Integer.toHexString(device.poolKeys().lkey()));
        return device;
    }

    synchronized List<Device> devices() {
        return new ArrayList<>(devices.values());
    }

    /** Closes every device's channel, pool registration and protection domain (queues are gone by now). */
    @Override
    public synchronized void close() {
        closed = true;
        for (Device d : devices.values()) {
            for (AutoCloseable r : new AutoCloseable[] {d.channel(), d.poolRegion(), d.pd()}) {
                try {
                    r.close();
                } catch (Exception e) {
                    LOG.warn("RDMA device {}: closing {} failed: {}", d.name(), r, e.getMessage());
                }
            }
        }
        devices.clear();
    }
}
