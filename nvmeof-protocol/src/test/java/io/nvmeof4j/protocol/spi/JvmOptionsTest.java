package io.nvmeof4j.protocol.spi;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JvmOptionsTest {
    private static final String NAME = "nvmeof4j.test.jvm_options";

    @AfterEach
    void clear() {
        System.clearProperty(NAME);
    }

    private static int intWith(String value) {
        System.setProperty(NAME, value);
        return JvmOptions.intOption(NAME, 7, 1, 32768);
    }

    @Test
    void shouldGiveTheDefaultOnlyWhenTheOptionIsAbsent() {
        assertThat(JvmOptions.intOption(NAME, 7, 1, 32768)).isEqualTo(7);
        assertThat(JvmOptions.longOption(NAME, -5, -10, 10)).as("a default need not lie in the range").isEqualTo(-5);
        assertThat(JvmOptions.booleanOption(NAME, true)).isTrue();
        assertThat(JvmOptions.booleanOption(NAME, false)).isFalse();
    }

    @Test
    void shouldTakeEachBoundAndDecimalValuesWithBlanksAround() {
        assertThat(intWith("1")).isEqualTo(1);
        assertThat(intWith("32768")).isEqualTo(32768);
        assertThat(intWith(" 64 ")).isEqualTo(64);
        assertThat(intWith("+64")).isEqualTo(64);
        assertThat(intWith("010")).as("decimal, not octal as Integer.getInteger reads it").isEqualTo(10);
        System.setProperty(NAME, "-10");
        assertThat(JvmOptions.longOption(NAME, 0, -10, 10)).isEqualTo(-10);
        System.setProperty(NAME, Long.toString(Long.MAX_VALUE));
        assertThat(JvmOptions.longOption(NAME, 0, 0, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void shouldRefuseJustOutsideEachBoundNamingTheOptionAndTheRange() {
        assertThatThrownBy(() -> intWith("0")).isInstanceOf(IllegalArgumentException.class)
            .hasMessage("-Dnvmeof4j.test.jvm_options=0: must be 1..32768");
        assertThatThrownBy(() -> intWith("32769")).isInstanceOf(IllegalArgumentException.class)
            .hasMessage("-Dnvmeof4j.test.jvm_options=32769: must be 1..32768");
        System.setProperty(NAME, "-1");
        assertThatThrownBy(() -> JvmOptions.intOption(NAME, 0, 0, Integer.MAX_VALUE))
            .hasMessage("-Dnvmeof4j.test.jvm_options=-1: must be 0 or more (up to 2147483647)");
        System.setProperty(NAME, "2147483648");
        assertThatThrownBy(() -> JvmOptions.intOption(NAME, 0, 0, Integer.MAX_VALUE))
            .as("past int, not wrapped around").hasMessageContaining("=2147483648: must be 0 or more");
        System.setProperty(NAME, "-1");
        assertThatThrownBy(() -> JvmOptions.longOption(NAME, 0, 0, Long.MAX_VALUE))
            .hasMessage("-Dnvmeof4j.test.jvm_options=-1: must be 0 or more");
    }

    @Test
    void shouldRefuseMalformedNumbersInsteadOfTakingTheDefault() {
        for (String bad : new String[] {"64k", "abc", "", " ", "0x40", "1.5", "1e3", "99999999999999999999"}) {
            assertThatThrownBy(() -> intWith(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("-Dnvmeof4j.test.jvm_options=" + bad + ": not a whole number; must be 1..32768");
        }
    }

    @Test
    void shouldTakeOnlyTrueOrFalseInAnyCase() {
        for (String yes : new String[] {"true", "TRUE", "True", " true "}) {
            System.setProperty(NAME, yes);
            assertThat(JvmOptions.booleanOption(NAME, false)).as(yes).isTrue();
        }
        for (String no : new String[] {"false", "FALSE", "False"}) {
            System.setProperty(NAME, no);
            assertThat(JvmOptions.booleanOption(NAME, true)).as(no).isFalse();
        }
        for (String bad : new String[] {"treu", "yes", "1", "0", "on", ""}) {
            System.setProperty(NAME, bad);
            assertThatThrownBy(() -> JvmOptions.booleanOption(NAME, true)).as(bad)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("-Dnvmeof4j.test.jvm_options=" + bad + ": must be true or false");
        }
    }

    @Test
    void shouldTakeOneOfTheChoicesInAnyCaseAsTheChoiceIsSpelled() {
        assertThat(JvmOptions.choiceOption(NAME, "INFO", "DEBUG", "INFO")).isEqualTo("INFO");
        System.setProperty(NAME, " debug ");
        assertThat(JvmOptions.choiceOption(NAME, "INFO", "DEBUG", "INFO")).isEqualTo("DEBUG");
        System.setProperty(NAME, "degub");
        assertThatThrownBy(() -> JvmOptions.choiceOption(NAME, "INFO", "DEBUG", "INFO"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("-Dnvmeof4j.test.jvm_options=degub: must be one of DEBUG, INFO");
    }

    @Test
    void shouldWordARefusalOfTheCallersOwnRuleTheSameWay() {
        assertThat(JvmOptions.refused(NAME, "4098", "must be a multiple of 4"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("-Dnvmeof4j.test.jvm_options=4098: must be a multiple of 4");
    }
}
