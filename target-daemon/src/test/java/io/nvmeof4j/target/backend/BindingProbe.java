package io.nvmeof4j.target.backend;

import io.nvmeof4j.jni.bdev.BdevIoChannel;

/** What a descriptor is bound to, and which device channels a reactor's ring has open, for tests of other packages. */
public final class BindingProbe {
    private BindingProbe() {
    }

    public static BdevChannels ring(BlockIo io) {
        return io.boundRing;
    }

    public static QosWaits qos(BlockIo io) {
        return io.boundQos;
    }

    public static BdevIoChannel channel(BlockIo io) {
        return io.boundChannel;
    }

    /** The device's channel open on {@code ring}, or null. */
    public static BdevIoChannel channel(BdevChannels ring, UringBlockDevice device) {
        return ring.existingChannel(device);
    }
}
