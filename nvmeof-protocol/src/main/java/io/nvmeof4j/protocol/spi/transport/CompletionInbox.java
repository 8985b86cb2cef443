package io.nvmeof4j.protocol.spi.transport;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Completions made on other threads (a backend worker, a timer), handed to the reactor that owns the request: an
 * intrusive lock-free stack, each request its own node, so the hand-over is one CAS, can never be full, and allocates
 * nothing. The reactor takes the whole stack at once and finishes the requests in the order they completed.
 *
 * @param <T> the binding's request type
 */
public final class CompletionInbox<T extends CompletionInbox.Node<T>> {
    /** A request that can wait in an inbox: it carries the link and the status handed over with it. */
    public interface Node<T> {
        T nextCompleted();

        void nextCompleted(T next);

        /** Reactor thread: finishes the request with the status it was completed with. */
        void finishCompletion();
    }

    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(CompletionInbox.class, "head", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through HEAD
    private volatile Node<T> head;

    /** Any thread: hands {@code request} over; its CAS publishes every write made before it (status, data). */
    public void push(T request) {
        Node<T> top;
        do {
            top = head;
            request.nextCompleted(cast(top));
        } while (!HEAD.compareAndSet(this, top, request));
    }

    public boolean isEmpty() {
        return head == null;
    }

    /** Reactor thread: finishes every request handed over so far, oldest first; returns how many. */
    public int drain() {
        if (head == null) {
            return 0;
        }
        T stack = cast((Node<?>) HEAD.getAndSet(this, (Node<T>) null));
        // The stack is newest first: reverse it so completions go out in the order they happened.
        T fifo = null;
        while (stack != null) {
            T next = stack.nextCompleted();
            stack.nextCompleted(fifo);
            fifo = stack;
            stack = next;
        }
        int n = 0;
        while (fifo != null) {
            T next = fifo.nextCompleted();
            fifo.nextCompleted(null);
            fifo.finishCompletion();
            fifo = next;
            n++;
        }
        return n;
    }

    @SuppressWarnings("unchecked")
    private static <T> T cast(Object node) {
        return (T) node;
    }
}
