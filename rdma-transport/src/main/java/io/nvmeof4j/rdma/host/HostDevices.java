package io.nvmeof4j.rdma.host;

import io.nvmeof4j.jni.NativeIoException;
import io.nvmeof4j.jni.rdma.VerbsContext;
import io.nvmeof4j.rdma.DeviceWaiter;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A host poll group's resources on each RDMA device its queues go through ({@link HostDevice}: PD, completion
 * channel, registered memory), made when the first queue resolves to the device. Queues of one host reactor may
 * reach their controllers through different devices (multipath over two ports); the group's {@link DeviceWaiter}
 * waits on every device's channel at once.
 */
final class HostDevices implements AutoCloseable {
    private final DeviceWaiter waiter;
    private final Map<String, HostDevice> byName = new LinkedHashMap<>();
    private boolean closed;

    HostDevices(DeviceWaiter waiter) {
        this.waiter = waiter;
    }

    /** The group's resources on {@code context}'s device, made on first use. */
    synchronized HostDevice device(VerbsContext context) throws NativeIoException {
        if (closed) {
            throw new IllegalStateException("NVMe/RDMA host poll group is closed");
        }
        HostDevice device = byName.get(context.deviceName());
        if (device == null) {
            device = new HostDevice(context, waiter);
            byName.put(device.name, device);
        }
        return device;
    }

    /** Closes every device's resources (the group's queues are gone by now). */
    @Override
    public synchronized void close() {
        closed = true;
        for (HostDevice device : byName.values()) {
            device.close();
        }
        byName.clear();
    }
}
