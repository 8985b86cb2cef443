package io.nvmeof4j.target.management;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof4j.protocol.auth.DhchapCredentials;
import io.nvmeof4j.target.config.ConfigException;
import io.nvmeof4j.target.config.TargetConfig;
import io.nvmeof4j.target.control.ControlException;
import io.nvmeof4j.target.daemon.TargetDaemon;

/** The management API's host key resources: DH-HMAC-CHAP credentials and TLS PSKs, set, rotated and removed. */
final class HostKeyResources {
    private final TargetDaemon daemon;
    private final ManagementJson json;

    HostKeyResources(TargetDaemon daemon, ManagementJson json) {
        this.daemon = daemon;
        this.json = json;
    }

    /** See {@link ManagementApi#setDhchap}; under its lock. */
    ObjectNode setDhchap(String host, JsonNode body) throws ManagementException {
        host = ManagementApi.checkNqn(host, "not a valid host NQN: ");
        if (body == null || !body.isObject()) {
            throw new ManagementException(ManagementApi.BAD_REQUEST,
                "expected {\"key\": \"DHHC-1:..\", \"ctrl_key\": .., \"hash\": .., \"dhgroup\": ..}");
        }
        DhchapCredentials c;
        try {
            c = TargetConfig.parseDhchap(body);
        } catch (ConfigException e) {
            throw new ManagementException(ManagementApi.BAD_REQUEST, e.getMessage());
        }
        try {
            daemon.controlPlane().setDhchap("HTTP API", host, c == null ? null : body);
        } catch (ControlException e) {
            throw ManagementApi.refused(e);
        }
        return json.dhchapEntry(host);
    }

    /** See {@link ManagementApi#removeDhchap}; under its lock. */
    ObjectNode removeDhchap(String host) throws ManagementException {
        if (daemon.registry().hostKeys().get(host) == null) {
            throw new ManagementException(ManagementApi.NOT_FOUND,
                "host " + host + " has no DH-HMAC-CHAP credentials");
        }
        try {
            daemon.controlPlane().setDhchap("HTTP API", host, null);
        } catch (ControlException e) {
            throw ManagementApi.refused(e);
        }
        return json.dhchapEntry(host);
    }

    /** See {@link ManagementApi#setTlsKey}; under its lock. */
    ObjectNode setTlsKey(String host, JsonNode body) throws ManagementException {
        host = ManagementApi.checkNqn(host, "not a valid host NQN: ");
        if (body == null || !body.isObject() || !body.path("key").isTextual() || body.path("key").asText().isEmpty()
            || body.has("psk_derivation") && !body.get("psk_derivation").isTextual()) {
            throw new ManagementException(ManagementApi.BAD_REQUEST,
                "expected {\"key\": \"NVMeTLSkey-1:01:...:\", \"psk_derivation\": \"compat\" or \"rfc8446\"}");
        }
        try {
            daemon.controlPlane().setTlsKey("HTTP API", host, body.get("key").asText(),
                body.has("psk_derivation") ? body.get("psk_derivation").asText() : null);
        } catch (ControlException e) {
            throw ManagementApi.refused(e);
        }
        return json.tlsEntry(host);
    }

    /** See {@link ManagementApi#removeTlsKey}; under its lock. */
    ObjectNode removeTlsKey(String host) throws ManagementException {
        if (daemon.tlsKey(host) == null) {
            throw new ManagementException(ManagementApi.NOT_FOUND, "host " + host + " has no TLS PSK");
        }
        try {
            daemon.controlPlane().setTlsKey("HTTP API", host, null, null);
        } catch (ControlException e) {
            throw ManagementApi.refused(e);
        }
        return json.tlsEntry(host);
    }
}
