package io.nvmeof4j.protocol.fabrics;

import io.nvmeof4j.protocol.HostId;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConnectDataTest {
    private static final String HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:0e5c2f7a-61a4-4d7e-9d3b-1f2a3b4c5d6e";
    private static final String SUBNQN = "nqn.2024-01.io.nvmeof4j:test";

    @Test
    void shouldDecodeConnectDataFromItsBytes() {
        ByteBuffer b = Bytes.hex(1024,
            "0e 5c 2f 7a 61 a4 4d 7e 9d 3b 1f 2a 3b 4c 5d 6e"  // HOSTID, UUID byte order
          + "ff ff");                                         // CNTLID 0xFFFF
        Bytes.ascii(b, 256, SUBNQN);
        Bytes.ascii(b, 512, HOSTNQN);
        ConnectData d = new ConnectData().wrap(b, 0);
        assertThat(d.hostId()).isEqualTo(HostId.parse("0e5c2f7a-61a4-4d7e-9d3b-1f2a3b4c5d6e"));
        assertThat(d.controllerId()).isEqualTo(ConnectData.CNTLID_DYNAMIC);
        assertThat(d.subsystemNqn()).isEqualTo(SUBNQN);
        assertThat(d.hostNqn()).isEqualTo(HOSTNQN);
        assertThat(d.firstUnterminatedField()).isEqualTo(-1);
    }

    @Test
    void shouldRoundTrip() {
        ByteBuffer b = Bytes.zeroes(2048);
        HostId id = HostId.random();
        new ConnectData().wrap(b, 1024).clear().hostId(id).controllerId(0x42).subsystemNqn(SUBNQN).hostNqn(HOSTNQN);
        ConnectData d = new ConnectData().wrap(b, 1024);
        assertThat(d.hostId()).isEqualTo(id);
        assertThat(d.controllerId()).isEqualTo(0x42);
        assertThat(b.getShort(1024 + 16)).isEqualTo((short) 0x42);
        assertThat(b.get(1024 + 256)).isEqualTo((byte) 'n');
        assertThat(b.get(1024 + 256 + SUBNQN.length())).isZero();
        assertThat(d.subsystemNqn()).isEqualTo(SUBNQN);
        assertThat(d.hostNqn()).isEqualTo(HOSTNQN);
    }

    @Test
    void shouldFindNqnFieldsWithoutTerminatingNul() {
        ByteBuffer b = Bytes.zeroes(1024);
        ConnectData d = new ConnectData().wrap(b, 0).subsystemNqn(SUBNQN).hostNqn(HOSTNQN);
        for (int i = 512; i < 768; i++) {
            b.put(i, (byte) 'a');
        }
        assertThat(d.isTerminated(ConnectData.SUBNQN_OFFSET)).isTrue();
        assertThat(d.isTerminated(ConnectData.HOSTNQN_OFFSET)).isFalse();
        assertThat(d.firstUnterminatedField()).isEqualTo(512);
        for (int i = 256; i < 512; i++) {
            b.put(i, (byte) 'b');
        }
        assertThat(d.firstUnterminatedField()).isEqualTo(256);
        // A NUL in the last byte is enough.
        b.put(511, (byte) 0);
        assertThat(d.firstUnterminatedField()).isEqualTo(512);
    }

    @Test
    void shouldRejectShortBuffersAndNqnsThatDoNotFit() {
        assertThatThrownBy(() -> new ConnectData().wrap(Bytes.zeroes(1000), 0)).isInstanceOf(IllegalArgumentException.class);
        ConnectData d = new ConnectData().wrap(Bytes.zeroes(1024), 0);
        assertThatThrownBy(() -> d.subsystemNqn("n".repeat(256))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldComposeConnectResponses() {
        assertThat(ConnectResponse.success(0x1234)).isEqualTo(0x1234);
        assertThat(ConnectResponse.invalidDataField(ConnectData.SUBNQN_OFFSET)).isEqualTo(0x0001_0100);
        assertThat(ConnectResponse.invalidDataField(ConnectData.HOSTNQN_OFFSET)).isEqualTo(0x0001_0200);
        assertThat(ConnectResponse.invalidDataField(ConnectData.CNTLID_OFFSET)).isEqualTo(0x0001_0010);
        assertThat(ConnectResponse.invalidCommandField(ConnectCommand.SQSIZE_OFFSET)).isEqualTo(44);
        int dw0 = 0x0001_0100;
        assertThat(ConnectResponse.isInvalidFieldInData(dw0)).isTrue();
        assertThat(ConnectResponse.invalidAttributes(dw0)).isEqualTo(1);
        assertThat(ConnectResponse.invalidParameterOffset(dw0)).isEqualTo(256);
        assertThat(ConnectResponse.isInvalidFieldInData(42)).isFalse();
        assertThat(ConnectResponse.authenticationRequired(0x0002_0001)).isTrue();
        assertThat(ConnectResponse.controllerId(0x0002_0001)).isEqualTo(1);
    }
}
