package io.nvmeof4j.protocol.spi.transport;

import io.nvmeof4j.protocol.command.CompletionQueueEntry;
import io.nvmeof4j.protocol.command.DataDirection;
import io.nvmeof4j.protocol.command.NvmeStatus;
import io.nvmeof4j.protocol.command.SubmissionQueueEntry;
import io.nvmeof4j.protocol.spi.Request;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * One command slot of a controller-role queue, the part every binding shares (SPDK's {@code spdk_nvmf_request}):
 * the received SQE and the CQE being built (flyweights over the binding's slot memory), how the command's data moves,
 * its place in the queue, and its state. Reused for every command that lands in the slot: nothing here allocates.
 * <p>The state is the binding's own enum ({@code S}: {@code TcpRequest.State}, {@code RdmaRequest.State}), moved only
 * by the binding's queue on the reactor thread, with one exception: {@link #complete}, callable from any thread, is a
 * CAS from the binding's executing state to its executed state, so a second completion, or one racing the handler's
 * failure ({@link #abandon}), is refused. Between states a request may wait in its poll group's
 * {@link BufferWaitQueue} or {@link CompletionInbox}; it carries the links for both.
 * <p>The public fields are the binding's to read and write on the reactor thread (its queue class lives in another
 * package); the command layer sees only the {@link Request} interface.
 *
 * @param <S> the binding's state enum
 * @param <R> the binding's request type
 */
public abstract class TransportRequest<S extends Enum<S>, R extends TransportRequest<S, R>>
    implements Request, CompletionInbox.Node<R>, BufferWaitQueue.Waiter<R> {
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(TransportRequest.class, "state", Enum.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SubmissionQueueEntry sqe = new SubmissionQueueEntry();
    private final ByteBuffer sqeBuffer;
    private final CompletionQueueEntry cqe;
    private final S executing;
    private final S executed;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile S state;
    public int commandId;
    public DataDirection direction = DataDirection.NONE;
    /** One of the {@link DataMapping} {@code TRANSFER_} kinds. */
    public int transfer;
    public int dataLength;
    public ByteBuffer data;
    /** {@link #data} is a buffer of the poll group's pool, to be given back when the slot is done. */
    public boolean dataPooled;
    /** The handler took this command (so it hears when the response is sent). */
    public boolean reachedHandler;
    /**
     * The status the response carries: a refusal found before the command reached the handler, or the one
     * {@link #complete} was given (published to the reactor by the inbox's CAS when given on another thread).
     */
    public int completionStatus;
    private long receivedNanos;
    private long sequence;
    private R completedNext;
    private R parkedNext;

    /**
     * @param sqeBuffer 64 bytes of the slot's memory the received SQE is copied into (little-endian)
     * @param cqe       the flyweight of the CQE the binding sends (in the slot's response memory)
     * @param free      the state of a slot nobody uses
     * @param executing the state while the command layer has the command
     * @param executed  the state {@link #complete} moves it to
     */
    protected TransportRequest(ByteBuffer sqeBuffer, CompletionQueueEntry cqe, S free, S executing, S executed) {
        this.sqeBuffer = sqeBuffer;
        this.cqe = cqe;
        this.executing = executing;
        this.executed = executed;
        this.state = free;
        sqe.wrap(sqeBuffer, 0);
    }

    // ---- Request ---------------------------------------------------------------------------------------------

    @Override
    public final SubmissionQueueEntry command() {
        return sqe;
    }

    @Override
    public final CompletionQueueEntry response() {
        return cqe;
    }

    @Override
    public final ByteBuffer data() {
        return data;
    }

    @Override
    public final int dataLength() {
        return dataLength;
    }

    @Override
    public final long receivedNanos() {
        return receivedNanos;
    }

    @Override
    public final long sequence() {
        return sequence;
    }

    @Override
    public final void complete(int nvmeStatus) {
        if (!STATE.compareAndSet(this, executing, executed)) {
            throw new IllegalStateException("command " + commandId + " on " + queue().peer()
                + " completed twice, or completed while not executing");
        }
        completionStatus = nvmeStatus;
        completed();
    }

    /**
     * The command was completed with {@link #completionStatus}: on the reactor thread the binding moves it on at
     * once, on any other it hands it to its poll group's {@link CompletionInbox} (whose CAS publishes the status and
     * the handler's data writes).
     */
    protected abstract void completed();

    /** Takes back a command the handler failed on, unless it was completed meanwhile. */
    public final boolean abandon() {
        return STATE.compareAndSet(this, executing, executed);
    }

    // ---- the slot's life (reactor thread) ----------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    public final S state() {
        return (S) STATE.getOpaque(this);
    }

    public final void state(S newState) {
        STATE.setRelease(this, newState);
    }

    /**
     * Takes a freshly received SQE (64 bytes at {@code sqeOffset} of {@code source}) into this slot and resets what
     * the last command left; the binding then resets its own fields and sets the first state.
     */
    protected final void beginCommand(ByteBuffer source, int sqeOffset, long nowNanos, long sequence) {
        for (int i = 0; i < SubmissionQueueEntry.LENGTH; i += 8) {
            sqeBuffer.putLong(i, source.getLong(sqeOffset + i));
        }
        cqe.clear();
        commandId = sqe.commandId();
        direction = sqe.dataDirection();
        receivedNanos = nowNanos;
        this.sequence = sequence;
        transfer = DataMapping.TRANSFER_NONE;
        dataLength = 0;
        data = null;
        dataPooled = false;
        reachedHandler = false;
        completionStatus = NvmeStatus.SUCCESS;
    }

    /** Fills the CQE fields the transport owns. */
    public final void fillCompletion(int status, int sqId, int sqHead) {
        cqe.commandId(commandId).sqId(sqId).sqHead(sqHead).status(status);
    }

    // ---- between states: the completion inbox and the buffer wait queue -----------------------------------------

    @Override
    public final R nextCompleted() {
        return completedNext;
    }

    @Override
    public final void nextCompleted(R next) {
        completedNext = next;
    }

    @Override
    public final R nextWaiting() {
        return parkedNext;
    }

    @Override
    public final void nextWaiting(R next) {
        parkedNext = next;
    }

    @Override
    public final int bufferLength() {
        return dataLength;
    }
}
