package io.nvmeof4j.rdma.host;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.CompletionChannel;
import io.nvmeof4j.jni.rdma.MemoryRegion;
import io.nvmeof4j.jni.rdma.ProtectionDomain;
import io.nvmeof4j.jni.rdma.RdmaDevice;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.protocol.buffer.OffHeapBufferPool;
import io.nvmeof4j.rdma.DeviceWaiter;
import io.nvmeof4j.rdma.MemoryKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * A host poll group's resources on one RDMA device ({@link HostDevices}): protection domain, completion channel
 * (added to the group's waiter), the registered bounce pool and the registration cache ({@link HostMemory}). Made
 * once, when the group's first queue through the device resolves its address, from the verbs context librdmacm
 * opened for the device (queue pairs of CM ids must use it).
 */
final class HostDevice implements AutoCloseable, MemoryRegistrar {
    private static final Logger LOG = LoggerFactory.getLogger(HostDevice.class);
    static final int ACCESS = MemoryRegion.LOCAL_WRITE | MemoryRegion.REMOTE_READ | MemoryRegion.REMOTE_WRITE;
    /** Registered bounce memory per host poll group (heap buffers, a full registration cache). */
    static final int BOUNCE_BYTES = 16 << 20;
    static final int BOUNCE_MAX_BUFFER = 1 << 20;

    final String name;
    final RdmaDevice attributes;
    final ProtectionDomain pd;
    final CompletionChannel channel;
    private final MemoryRegion bounceRegion;
    final HostMemory memory;
    private final Map<MemoryKeys, MemoryRegion> registrations = new IdentityHashMap<>();

    HostDevice(VerbsContext context, DeviceWaiter waiter) throws NativeIoException {
        this.name = context.deviceName();
        this.attributes = context.query();
        this.pd = context.allocateProtectionDomain();
        CompletionChannel createdChannel = null;
        MemoryRegion createdRegion = null;
        try {
            createdChannel = context.createCompletionChannel();
            ByteBuffer region = ByteBuffer.allocateDirect(BOUNCE_BYTES);
            createdRegion = pd.registerMemory(region, ACCESS);
            OffHeapBufferPool bounce = new OffHeapBufferPool(BOUNCE_MAX_BUFFER, region);
            this.memory = new HostMemory(new RegistrationCache(this, RegistrationCache.MAX_BYTES_DEFAULT,
                RegistrationCache.MAX_ENTRIES_DEFAULT), bounce, keys(createdRegion));
        } catch (NativeIoException | RuntimeException | OutOfMemoryError e) {
            // The channel belongs to the shared device context, not to the PD: close it too, or every failed
            // connect (a low memlock limit refusing the bounce registration) leaks a channel and its fd.
            if (createdRegion != null) {
                createdRegion.close();
            }
            if (createdChannel != null) {
                createdChannel.close();
            }
            pd.close();
            throw e;
        }
        this.channel = createdChannel;
        this.bounceRegion = createdRegion;
        waiter.add(channel);
    }

    private static MemoryKeys keys(MemoryRegion mr) {
        return new MemoryKeys(mr.address(), mr.length(), mr.lkey(), mr.rkey());
    }

    @Override
    public MemoryKeys register(ByteBuffer buffer) throws IOException {
        MemoryRegion mr = pd.registerMemory(buffer, ACCESS);
        MemoryKeys k = keys(mr);
        synchronized (registrations) {
            registrations.put(k, mr);
        }
        return k;
    }

    @Override
    public void deregister(MemoryKeys keys) {
        MemoryRegion mr;
        synchronized (registrations) {
            mr = registrations.remove(keys);
        }
        if (mr != null) {
            mr.close();
        }
    }

    @Override
    public void close() {
        for (AutoCloseable r : new AutoCloseable[] {memory.cache()::clear, bounceRegion, channel, pd}) {
            try {
                r.close();
            } catch (Exception e) {
                LOG.warn("RDMA host device {}: closing {} failed: {}", name, r, e.getMessage());
            }
        }
        LOG.debug("RDMA host device {} resources closed", name);
    }
}
