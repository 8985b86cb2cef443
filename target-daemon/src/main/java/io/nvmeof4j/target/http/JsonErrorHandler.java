package io.nvmeof4j.target.http;

import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Errors Jetty answers by itself (a request head over the size limit: 431; a malformed request line: 400; ...)
 * in the API's shape, {@code {"error": "..."}}, instead of an HTML page; never a stack trace.
 */
final class JsonErrorHandler extends ErrorHandler {
    @Override
    protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
                                    Callback callback) {
        byte[] body = json(code, message);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, HttpApiServer.JSON_CONTENT_TYPE);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
    }

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        fields.put(HttpHeader.CONTENT_TYPE, HttpApiServer.JSON_CONTENT_TYPE);
        return ByteBuffer.wrap(json(status, reason));
    }

    private static byte[] json(int code, String message) {
        String text = message == null || message.isBlank() ? HttpStatus.getMessage(code) : message;
        return ("{\"error\": \"" + escape(text) + "\"}\n").getBytes(StandardCharsets.UTF_8);
    }

    private static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
