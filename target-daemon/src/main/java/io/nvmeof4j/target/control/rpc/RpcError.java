package io.nvmeof4j.target.control.rpc;

/**
 * A JSON-RPC error answer, with SPDK's codes: the JSON-RPC 2.0 ones (-32700 parse error, -32600 invalid request,
 * -32601 method not found, -32602 invalid params, -32603 internal error) and, as SPDK's bdev RPCs answer, a
 * negative errno ({@link #ENOENT}, {@link #EEXIST}, ...) with the C library's text for it.
 */
final class RpcError extends Exception {
    static final int PARSE_ERROR = -32700;
    static final int INVALID_REQUEST = -32600;
    static final int METHOD_NOT_FOUND = -32601;
    static final int INVALID_PARAMS = -32602;
    static final int INTERNAL_ERROR = -32603;
    static final int EPERM = -1;
    static final int ENOENT = -2;
    static final int EIO = -5;
    static final int ENOMEM = -12;
    static final int EBUSY = -16;
    static final int EEXIST = -17;
    static final int ENODEV = -19;
    static final int EINVAL = -22;

    private final int code;

    RpcError(int code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    int code() {
        return code;
    }

    /** strerror()'s text for a negative errno, as SPDK's bdev RPCs answer. */
    static RpcError errno(int code) {
        return new RpcError(code, switch (code) {
            case EPERM -> "Operation not permitted";
            case ENOENT -> "No such file or directory";
            case EIO -> "Input/output error";
            case ENOMEM -> "Cannot allocate memory";
            case EBUSY -> "Device or resource busy";
            case EEXIST -> "File exists";
            case ENODEV -> "No such device";
            case EINVAL -> "Invalid argument";
            default -> "error " + code;
        });
    }

    static RpcError invalidParams(String detail) {
        return new RpcError(INVALID_PARAMS, "Invalid parameters" + (detail == null ? "" : ": " + detail));
    }
}
