package io.nvmeof4j.jni.bdev;

/**
 * Receives the completions of one {@link BdevIoChannel}, on the poll group's thread, from
 * {@link BdevPollGroup#poll()}. One handler per channel and a context object per I/O, so completing allocates
 * nothing (no lambda per I/O).
 */
@FunctionalInterface
public interface BdevCompletionHandler {
    /**
     * @param context what was passed at submission
     * @param op      {@link BdevIoChannel#OP_READ} ...
     * @param result  0, or {@code -errno}
     */
    void onBdevComplete(Object context, int op, int result);
}
