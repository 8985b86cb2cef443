package io.nvmeof4j.initiator.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine.TypeConversionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SizesTest {
    @Test
    void shouldParseBinarySuffixes() {
        assertThat(Sizes.parse("4096")).isEqualTo(4096);
        assertThat(Sizes.parse("4K")).isEqualTo(4096);
        assertThat(Sizes.parse("4k")).isEqualTo(4096);
        assertThat(Sizes.parse("128KiB")).isEqualTo(128 << 10);
        assertThat(Sizes.parse("1M")).isEqualTo(1 << 20);
        assertThat(Sizes.parse("2G")).isEqualTo(2L << 30);
        assertThat(Sizes.parse("512B")).isEqualTo(512);
        assertThat(Sizes.parse("8KB")).isEqualTo(8192);
    }

    @Test
    void shouldRejectWhatIsNotASize() {
        assertThatThrownBy(() -> Sizes.parse("4X")).isInstanceOf(TypeConversionException.class)
            .hasMessageContaining("'4X' is not a size");
        assertThatThrownBy(() -> Sizes.parse("-1")).isInstanceOf(TypeConversionException.class);
        assertThatThrownBy(() -> Sizes.parse("99999999999T")).isInstanceOf(TypeConversionException.class);
    }
}
