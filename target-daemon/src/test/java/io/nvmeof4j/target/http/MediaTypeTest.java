package io.nvmeof4j.target.http;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** POST bodies must be the application/json media type exactly; parameters are allowed. */
class MediaTypeTest {
    @Test
    void shouldAcceptApplicationJsonWithParametersOnly() {
        assertThat(HttpApiServer.isJsonMediaType("application/json")).isTrue();
        assertThat(HttpApiServer.isJsonMediaType("Application/JSON; charset=utf-8")).isTrue();
        assertThat(HttpApiServer.isJsonMediaType(" application/json ;charset=UTF-8")).isTrue();
        for (String bad : new String[] {null, "", "application/jsonx", "application/json-patch+json", "text/plain",
            "application/x-www-form-urlencoded", "multipart/form-data", "application/jsonl; charset=utf-8",
            "text/json", "application/json5"}) {
            assertThat(HttpApiServer.isJsonMediaType(bad)).as(String.valueOf(bad)).isFalse();
        }
    }
}
