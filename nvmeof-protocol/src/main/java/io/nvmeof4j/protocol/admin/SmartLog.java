package io.nvmeof4j.protocol.admin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over the 512-byte SMART / Health Information log (log 02h; NVMe Base 2.0, 5.16.1.3 Figure 207).
 *
 * <pre>
 *   0 CRITICAL WARNING   1 COMPOSITE TEMPERATURE(2, kelvin)   3 AVAILABLE SPARE   4 SPARE THRESHOLD
 *   5 PERCENTAGE USED    6 ENDURANCE GROUP CRITICAL WARNING SUMMARY
 *  32 DATA UNITS READ(16)  48 DATA UNITS WRITTEN(16)  64 HOST READ COMMANDS(16)  80 HOST WRITE COMMANDS(16)
 *  96 CONTROLLER BUSY TIME(16)  112 POWER CYCLES(16)  128 POWER ON HOURS(16)  144 UNSAFE SHUTDOWNS(16)
 * 160 MEDIA ERRORS(16)  176 NUMBER OF ERROR LOG ENTRIES(16)  192 WARNING TEMP TIME(4)  196 CRITICAL TEMP TIME(4)
 * 200 TEMPERATURE SENSOR 1..8 (2 each)
 * </pre>
 * The 128-bit counters are written from a 64-bit value (upper half zero). A data unit is 1000 × 512 bytes.
 */
public final class SmartLog {
    public static final int LENGTH = 512;

    public static final int CRITICAL_WARNING_OFFSET = 0;
    public static final int COMPOSITE_TEMPERATURE_OFFSET = 1;
    public static final int AVAILABLE_SPARE_OFFSET = 3;
    public static final int AVAILABLE_SPARE_THRESHOLD_OFFSET = 4;
    public static final int PERCENTAGE_USED_OFFSET = 5;
    public static final int DATA_UNITS_READ_OFFSET = 32;
    public static final int DATA_UNITS_WRITTEN_OFFSET = 48;
    public static final int HOST_READ_COMMANDS_OFFSET = 64;
    public static final int HOST_WRITE_COMMANDS_OFFSET = 80;
    public static final int CONTROLLER_BUSY_TIME_OFFSET = 96;
    public static final int POWER_CYCLES_OFFSET = 112;
    public static final int POWER_ON_HOURS_OFFSET = 128;
    public static final int UNSAFE_SHUTDOWNS_OFFSET = 144;
    public static final int MEDIA_ERRORS_OFFSET = 160;
    public static final int ERROR_LOG_ENTRIES_OFFSET = 176;
    public static final int WARNING_TEMPERATURE_TIME_OFFSET = 192;
    public static final int CRITICAL_TEMPERATURE_TIME_OFFSET = 196;
    public static final int TEMPERATURE_SENSOR_OFFSET = 200;

    /** Bytes per SMART data unit. */
    public static final long DATA_UNIT_BYTES = 512_000L;

    private ByteBuffer buffer;
    private int offset;

    public SmartLog wrap(ByteBuffer buffer, int offset) {
        if (buffer.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("NVMe structures are little-endian; buffer order is " + buffer.order());
        }
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    public SmartLog clear() {
        AsciiFields.zero(buffer, offset, LENGTH);
        return this;
    }

    public int criticalWarning() { return buffer.get(offset + CRITICAL_WARNING_OFFSET) & 0xFF; }
    public SmartLog criticalWarning(int v) { buffer.put(offset + CRITICAL_WARNING_OFFSET, (byte) v); return this; }

    public int compositeTemperatureKelvin() { return buffer.getShort(offset + COMPOSITE_TEMPERATURE_OFFSET) & 0xFFFF; }
    public SmartLog compositeTemperatureKelvin(int v) {
        buffer.putShort(offset + COMPOSITE_TEMPERATURE_OFFSET, (short) v);
        return this;
    }

    public int availableSpare() { return buffer.get(offset + AVAILABLE_SPARE_OFFSET) & 0xFF; }
    public SmartLog availableSpare(int percent) { buffer.put(offset + AVAILABLE_SPARE_OFFSET, (byte) percent); return this; }

    public int availableSpareThreshold() { return buffer.get(offset + AVAILABLE_SPARE_THRESHOLD_OFFSET) & 0xFF; }
    public SmartLog availableSpareThreshold(int percent) {
        buffer.put(offset + AVAILABLE_SPARE_THRESHOLD_OFFSET, (byte) percent);
        return this;
    }

    public int percentageUsed() { return buffer.get(offset + PERCENTAGE_USED_OFFSET) & 0xFF; }
    public SmartLog percentageUsed(int v) { buffer.put(offset + PERCENTAGE_USED_OFFSET, (byte) v); return this; }

    public long dataUnitsRead() { return counter(DATA_UNITS_READ_OFFSET); }
    public SmartLog dataUnitsRead(long v) { return counter(DATA_UNITS_READ_OFFSET, v); }

    public long dataUnitsWritten() { return counter(DATA_UNITS_WRITTEN_OFFSET); }
    public SmartLog dataUnitsWritten(long v) { return counter(DATA_UNITS_WRITTEN_OFFSET, v); }

    public long hostReadCommands() { return counter(HOST_READ_COMMANDS_OFFSET); }
    public SmartLog hostReadCommands(long v) { return counter(HOST_READ_COMMANDS_OFFSET, v); }

    public long hostWriteCommands() { return counter(HOST_WRITE_COMMANDS_OFFSET); }
    public SmartLog hostWriteCommands(long v) { return counter(HOST_WRITE_COMMANDS_OFFSET, v); }

    public long powerOnHours() { return counter(POWER_ON_HOURS_OFFSET); }
    public SmartLog powerOnHours(long v) { return counter(POWER_ON_HOURS_OFFSET, v); }

    public long errorLogEntries() { return counter(ERROR_LOG_ENTRIES_OFFSET); }
    public SmartLog errorLogEntries(long v) { return counter(ERROR_LOG_ENTRIES_OFFSET, v); }

    /** The low 64 bits of the 128-bit counter at {@code at}. */
    public long counter(int at) {
        return buffer.getLong(offset + at);
    }

    /** Writes a 128-bit counter from an unsigned 64-bit value. */
    public SmartLog counter(int at, long value) {
        buffer.putLong(offset + at, value);
        buffer.putLong(offset + at + 8, 0L);
        return this;
    }

    /** SMART data units (thousands of 512-byte units, rounded up) for a byte count. */
    public static long dataUnits(long bytes) {
        return (bytes + DATA_UNIT_BYTES - 1) / DATA_UNIT_BYTES;
    }
}
