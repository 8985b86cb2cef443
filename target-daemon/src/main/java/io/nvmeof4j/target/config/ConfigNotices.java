package io.nvmeof4j.target.config;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.nvmeof4j.target.config.ConfigValues.at;
import static io.nvmeof4j.target.config.ConfigValues.isEmpty;
import static io.nvmeof4j.target.config.ConfigValues.printable;

/**
 * The notices of one parse, and what is done with keys a section does not use: reported (the operator's file) or
 * refused (a request, {@link #strict()}).
 */
final class ConfigNotices {
    /**
     * A request rather than the operator's file (management API): unknown or unsupported keys are errors, not
     * notices, and a device path may not climb out with {@code ..}.
     */
    private final boolean strict;
    private final List<TargetConfig.Notice> notices = new ArrayList<>();

    ConfigNotices(boolean strict) {
        this.strict = strict;
    }

    boolean strict() {
        return strict;
    }

    List<TargetConfig.Notice> list() {
        return notices;
    }

    void reportKeys(JsonNode object, String where, Set<String> used, Map<String, String> ignored)
        throws ConfigException {
        for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            if (used.contains(key)) {
                continue;
            }
            String reason = ignored.get(key);
            if (strict) {
                if (reason != null && isEmpty(e.getValue())) {
                    continue; // nvmetcli's "none" value of a feature we lack: nothing asked that we ignore
                }
                // A request naming a field we would not use would be answered as if it had been honoured.
                throw new ConfigException(at(where, printable(key)), reason != null
                    ? "not supported (" + reason + ")"
                    : "unknown field (known: " + String.join(", ", new java.util.TreeSet<>(used)) + ")");
            }
            if (reason != null) {
                if (!isEmpty(e.getValue())) {
                    notice(false, at(where, key) + ": ignored (" + reason + ")");
                }
            } else {
                notice(true, at(where, key) + ": unknown key, ignored");
            }
        }
    }


    void notice(boolean warning, String text) {
        notices.add(new TargetConfig.Notice(warning, text));
    }
}
