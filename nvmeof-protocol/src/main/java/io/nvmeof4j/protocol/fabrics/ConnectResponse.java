package io.nvmeof4j.protocol.fabrics;

/**
 * DW0 of a Connect response (NVMe-oF 1.1, 3.3 Figures 21 and 22; wire reference 2.2).
 *
 * <pre>
 * Success:                                   Connect Invalid Parameters (SCT 1, SC 0x82):
 *  31      19   18    17    16  15      0     31       24 23     16 15               0
 * +-------+----+-----+-----+---+--------+    +----------+---------+-----------------+
 * | rsvd  |    |ASCR | ATR |rs | CNTLID |    | reserved | IATTR   | IPO             |
 * +-------+----+-----+-----+---+--------+    +----------+---------+-----------------+
 * </pre>
 * IATTR bit 0: 0 = the invalid field is in the SQE, 1 = it is in the Connect data; IPO is its byte offset there
 * (for example 256 for SUBNQN, 44 for SQSIZE). Plain static helpers: the value is one int.
 */
public final class ConnectResponse {
    private ConnectResponse() {
    }

    public static final int CNTLID_MASK = 0xFFFF;
    /** Authentication required (ATR). */
    public static final int ATR = 1 << 17;
    /** Authentication secure channel required (ASCR). */
    public static final int ASCR = 1 << 18;

    public static final int IATTR_SHIFT = 16;
    public static final int IATTR_DATA = 1;
    public static final int IATTR_SQE = 0;
    public static final int IPO_MASK = 0xFFFF;

    /** Success DW0 carrying the controller id. */
    public static int success(int cntlid) {
        return cntlid & CNTLID_MASK;
    }

    /** DW0 naming a field of the Connect data (IATTR = 1) at {@code dataOffset}, e.g. {@link ConnectData#SUBNQN_OFFSET}. */
    public static int invalidDataField(int dataOffset) {
        return IATTR_DATA << IATTR_SHIFT | (dataOffset & IPO_MASK);
    }

    /** DW0 naming a field of the SQE (IATTR = 0) at {@code sqeOffset}, e.g. {@link ConnectCommand#SQSIZE_OFFSET}. */
    public static int invalidCommandField(int sqeOffset) {
        return IATTR_SQE << IATTR_SHIFT | (sqeOffset & IPO_MASK);
    }

    public static int controllerId(int dw0) {
        return dw0 & CNTLID_MASK;
    }

    public static int invalidAttributes(int dw0) {
        return (dw0 >>> IATTR_SHIFT) & 0xFF;
    }

    public static int invalidParameterOffset(int dw0) {
        return dw0 & IPO_MASK;
    }

    public static boolean isInvalidFieldInData(int dw0) {
        return (invalidAttributes(dw0) & IATTR_DATA) != 0;
    }

    public static boolean authenticationRequired(int dw0) {
        return (dw0 & ATR) != 0;
    }
}
