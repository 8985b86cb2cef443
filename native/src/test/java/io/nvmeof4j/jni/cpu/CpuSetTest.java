package io.nvmeof4j.jni.cpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CpuSetTest {
    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
        "1; 1",
        "0-3,8; 0-3,8",
        "8,0-3; 0-3,8",
        "' 2 '; 2",
        "0,1,2,5-6; 0-2,5-6",
        "1,1,1; 1",
        "0x1; 0",
        "0x3; 0-1",
        "0X2; 1",
        "0x0100; 8",
        "0x000f; 0-3",
        "0xA; 1,3",
    })
    void shouldParseCpuListsAndCoreMasks(String text, String expected) {
        CpuSet set = CpuSet.parse(text, 16);
        assertThat(set.toString()).isEqualTo(expected);
        assertThat(CpuSet.parse(expected, 16)).isEqualTo(set);
    }

    @Test
    void shouldParseMasksAndListsBeyond64Cpus() {
        CpuSet set = CpuSet.parse("0x10000000000000001", 128);
        assertThat(set.toArray()).containsExactly(0, 64);
        assertThat(CpuSet.parse("0,64", 128)).isEqualTo(set);
        assertThat(CpuSet.parse("60-70", 128).size()).isEqualTo(11);
        assertThat(CpuSet.parse("8191", CpuSet.MAX_CPUS).toArray()).containsExactly(8191);
    }

    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
        "''; '\"\" is empty: expected a CPU list such as \"0-3,8\" or a core mask such as \"0x3\"'",
        "'  '; '\"  \" is empty: expected a CPU list such as \"0-3,8\" or a core mask such as \"0x3\"'",
        "1-0; 'CPU list \"1-0\": range 1-0 runs backwards'",
        "0x; 'core mask \"0x\" has no hex digits (example: \"0x3\")'",
        "0x0; 'core mask \"0x0\" selects no CPU'",
        "0xg1; 'core mask \"0xg1\": ''g'' is not a hex digit'",
        "-1; 'CPU list \"-1\": \"-1\" is not a CPU number or range (examples: \"3\", \"0-3\")'",
        "1-; 'CPU list \"1-\": \"1-\" is not a CPU number or range (examples: \"3\", \"0-3\")'",
        "'0,,1'; 'CPU list \"0,,1\": \"\" is not a CPU number or range (examples: \"3\", \"0-3\")'",
        "1 ,2; 'CPU list \"1 ,2\": \"1 \" is not a CPU number or range (examples: \"3\", \"0-3\")'",
        "a; 'CPU list \"a\": \"a\" is not a CPU number or range (examples: \"3\", \"0-3\")'",
        "2; 'CPU list \"2\": CPU 2 is beyond this machine''s 2 CPU(s) (0-1)'",
        "0-99999999; 'CPU list \"0-99999999\": CPU 99999999 is beyond this machine''s 2 CPU(s) (0-1)'",
        "0-99999999999999999999999; 'CPU list \"0-99999999999999999999999\": CPU 99999999999999999999999 is beyond this machine''s 2 CPU(s) (0-1)'",
        "0x4; 'core mask \"0x4\": CPU 2 is beyond this machine''s 2 CPU(s) (0-1)'",
        "0xffffffffffffffffffffffffffffffff; 'core mask \"0xffffffffffffffffffffffffffffffff\": CPU 127 is beyond this machine''s 2 CPU(s) (0-1)'",
    })
    void shouldRefuseHostileListsWithAnExactMessage(String text, String message) {
        assertThatThrownBy(() -> CpuSet.parse(text, 2)).isInstanceOf(IllegalArgumentException.class)
            .hasMessage(message);
    }

    @Test
    void shouldRefuseABackwardRangeOnALargerMachine() {
        assertThatThrownBy(() -> CpuSet.parse("3-1", 8)).hasMessage("CPU list \"3-1\": range 3-1 runs backwards");
    }

    @Test
    void shouldRefuseAHugeTextBeforeLookingAtIt() {
        String huge = "0,".repeat(40_000) + "1";
        assertThatThrownBy(() -> CpuSet.parse(huge, 2)).hasMessage("a CPU list of 80001 characters is too long "
            + "(at most 65536)");
    }

    @Test
    void shouldComputeHousekeepingAsTheAllowedCpusLessTheReactorCpus() {
        CpuSet allowed = CpuSet.parse("0-7", 8);
        CpuSet reactors = CpuSet.parse("0x6", 8);
        assertThat(allowed.minus(reactors).toString()).isEqualTo("0,3-7");
        assertThat(allowed.containsAll(reactors)).isTrue();
        assertThat(reactors.containsAll(allowed)).isFalse();
        assertThat(CpuSet.of(1).minus(CpuSet.of(1)).isEmpty()).isTrue();
    }
}
