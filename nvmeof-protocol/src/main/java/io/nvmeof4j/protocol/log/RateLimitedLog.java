package io.nvmeof4j.protocol.log;

import org.slf4j.Logger;
import org.slf4j.event.Level;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Logs repeated warnings without flooding: the first line for a key, then at most one line per interval per key,
 * carrying the count of lines suppressed meanwhile ({@code "[41 similar suppressed]"}). A failing disk can fail
 * every I/O and a flood of refused connections can come at line rate; the log should say so once a second, not
 * 100k times, and must not fill the disk it may be writing to.
 * <p>Keys: the peer's address ({@link java.net.InetAddress}, never its port, so that one host's connections share a
 * key), or a category string. Keys hash into a fixed table of slots, so the state is bounded whatever an attacker
 * sends: two keys sharing a slot share a budget (and the suppressed count). The unkeyed methods use one slot.
 * <p>Never a stack trace: these are expected refusals (refused connections, protocol errors of one peer, resource
 * errors), not bugs; a {@link Throwable} argument is logged as its {@code toString()}.
 * <p>Any thread, lock-free. Suppressed lines cost a CAS and allocate nothing when the fixed-arity methods are used
 * (the varargs ones allocate their array at the call site; hot call sites with more arguments or primitives call
 * {@link #admit} first).
 */
public final class RateLimitedLog {
    public static final long INTERVAL_NANOS_DEFAULT = TimeUnit.SECONDS.toNanos(1);
    public static final int KEY_SLOTS_DEFAULT = 64;
    /** Returned by {@link #admit} when the line is to be suppressed. */
    public static final long SUPPRESSED = -1;

    private static final long NONE_YET = Long.MIN_VALUE;

    private final Logger log;
    private final long intervalNanos;
    private final int slotMask;
    /** Per slot i: [2i] earliest time of the next line (NONE_YET before the first), [2i+1] lines suppressed since. */
    private final AtomicLongArray state;

    /** One line a second, all calls sharing one budget unless they name a key. */
    public RateLimitedLog(Logger log) {
        this(log, INTERVAL_NANOS_DEFAULT, KEY_SLOTS_DEFAULT);
    }

    /**
     * @param intervalNanos at most one line per key per this many nanoseconds (at least 1)
     * @param keySlots      distinct keys tracked, a power of two from 1 to 4096
     */
    public RateLimitedLog(Logger log, long intervalNanos, int keySlots) {
        if (log == null) {
            throw new NullPointerException("log");
        }
        if (intervalNanos < 1) {
            throw new IllegalArgumentException("interval " + intervalNanos + " ns below 1");
        }
        if (keySlots < 1 || keySlots > 4096 || Integer.bitCount(keySlots) != 1) {
            throw new IllegalArgumentException("key slots " + keySlots + " not a power of two in 1..4096");
        }
        this.log = log;
        this.intervalNanos = intervalNanos;
        this.slotMask = keySlots - 1;
        this.state = new AtomicLongArray(2 * keySlots);
        for (int i = 0; i < keySlots; i++) {
            state.set(2 * i, NONE_YET);
        }
    }

    /** The logger lines go to. */
    public Logger logger() {
        return log;
    }

    /**
     * Takes the key's permit: {@link #SUPPRESSED} when a line for this key went out less than an interval ago (the
     * call is counted), else the number of lines suppressed since the last one (0 for the first). For call sites
     * that build their own line; allocation-free.
     */
    public long admit(Object key) {
        int base = 2 * slot(key);
        long now = System.nanoTime();
        long next = state.get(base);
        if ((next != NONE_YET && now - next < 0) || !state.compareAndSet(base, next, now + intervalNanos)) {
            state.incrementAndGet(base + 1);
            return SUPPRESSED;
        }
        return state.getAndSet(base + 1, 0);
    }

    /**
     * The host part of a {@code "host:port"} or {@code "[v6]:port"} peer string: the key that puts all connections
     * of one address under one budget.
     */
    public static String hostOf(String peer) {
        if (peer == null) {
            return null;
        }
        int colon = peer.lastIndexOf(':');
        return colon > 0 && peer.indexOf(']') < colon ? peer.substring(0, colon) : peer;
    }

    private int slot(Object key) {
        if (key == null || slotMask == 0) {
            return 0;
        }
        return ((key.hashCode() * 0x9E3779B9) >>> 16) & slotMask;
    }

    // ---- unkeyed (one budget for the whole log) ----------------------------------------------------------------

    public void error(String format, Object arg) {
        if (log.isErrorEnabled()) {
            log1(Level.ERROR, null, format, arg);
        }
    }

    public void error(String format, Object arg1, Object arg2) {
        if (log.isErrorEnabled()) {
            log2(Level.ERROR, null, format, arg1, arg2);
        }
    }

    public void error(String format, Object... args) {
        if (log.isErrorEnabled()) {
            logN(Level.ERROR, null, format, args);
        }
    }

    public void warn(String format, Object arg) {
        if (log.isWarnEnabled()) {
            log1(Level.WARN, null, format, arg);
        }
    }

    public void warn(String format, Object arg1, Object arg2) {
        if (log.isWarnEnabled()) {
            log2(Level.WARN, null, format, arg1, arg2);
        }
    }

    public void warn(String format, Object... args) {
        if (log.isWarnEnabled()) {
            logN(Level.WARN, null, format, args);
        }
    }

    // ---- keyed (one budget per key: a peer address or a category) ----------------------------------------------

    public void errorFrom(Object key, String format, Object arg) {
        if (log.isErrorEnabled()) {
            log1(Level.ERROR, key, format, arg);
        }
    }

    public void errorFrom(Object key, String format, Object arg1, Object arg2) {
        if (log.isErrorEnabled()) {
            log2(Level.ERROR, key, format, arg1, arg2);
        }
    }

    public void errorFrom(Object key, String format, Object... args) {
        if (log.isErrorEnabled()) {
            logN(Level.ERROR, key, format, args);
        }
    }

    public void warnFrom(Object key, String format, Object arg) {
        if (log.isWarnEnabled()) {
            log1(Level.WARN, key, format, arg);
        }
    }

    public void warnFrom(Object key, String format, Object arg1, Object arg2) {
        if (log.isWarnEnabled()) {
            log2(Level.WARN, key, format, arg1, arg2);
        }
    }

    public void warnFrom(Object key, String format, Object arg1, Object arg2, Object arg3) {
        if (log.isWarnEnabled()) {
            log3(Level.WARN, key, format, arg1, arg2, arg3);
        }
    }

    public void warnFrom(Object key, String format, Object... args) {
        if (log.isWarnEnabled()) {
            logN(Level.WARN, key, format, args);
        }
    }

    public void infoFrom(Object key, String format, Object arg) {
        if (log.isInfoEnabled()) {
            log1(Level.INFO, key, format, arg);
        }
    }

    public void infoFrom(Object key, String format, Object arg1, Object arg2) {
        if (log.isInfoEnabled()) {
            log2(Level.INFO, key, format, arg1, arg2);
        }
    }

    public void infoFrom(Object key, String format, Object arg1, Object arg2, Object arg3) {
        if (log.isInfoEnabled()) {
            log3(Level.INFO, key, format, arg1, arg2, arg3);
        }
    }

    public void infoFrom(Object key, String format, Object... args) {
        if (log.isInfoEnabled()) {
            logN(Level.INFO, key, format, args);
        }
    }

    // ---- emission ------------------------------------------------------------------------------------------------

    private void log1(Level level, Object key, String format, Object arg) {
        long suppressed = admit(key);
        if (suppressed != SUPPRESSED) {
            emit(level, format, new Object[] {arg}, suppressed);
        }
    }

    private void log2(Level level, Object key, String format, Object arg1, Object arg2) {
        long suppressed = admit(key);
        if (suppressed != SUPPRESSED) {
            emit(level, format, new Object[] {arg1, arg2}, suppressed);
        }
    }

    private void log3(Level level, Object key, String format, Object arg1, Object arg2, Object arg3) {
        long suppressed = admit(key);
        if (suppressed != SUPPRESSED) {
            emit(level, format, new Object[] {arg1, arg2, arg3}, suppressed);
        }
    }

    private void logN(Level level, Object key, String format, Object[] args) {
        long suppressed = admit(key);
        if (suppressed != SUPPRESSED) {
            emit(level, format, args == null ? new Object[0] : args.clone(), suppressed);
        }
    }

    /** Writes one line (args is ours to change): Throwables as text, the suppressed count appended. */
    private void emit(Level level, String format, Object[] args, long suppressed) {
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof Throwable) {
                args[i] = args[i].toString();
            }
        }
        String line = format;
        Object[] all = args;
        if (suppressed > 0) {
            line = format + " [{} similar suppressed]";
            all = java.util.Arrays.copyOf(args, args.length + 1);
            all[args.length] = suppressed;
        }
        // if/else, not a switch on the enum: that would need a synthetic class loaded at the first line, which can
        // be exactly when the process is out of file descriptors (EMFILE) and cannot open the jar to load it.
        if (level == Level.ERROR) {
            log.error(line, all);
        } else if (level == Level.WARN) {
            log.warn(line, all);
        } else if (level == Level.INFO) {
            log.info(line, all);
        } else {
            log.debug(line, all);
        }
    }
}
