package io.nvmeof4j.protocol.spi;

import io.nvmeof4j.protocol.spi.PendingConnections.Refusal;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PendingConnectionsTest {
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(1);

    private static InetAddress host(int n) throws Exception {
        return InetAddress.getByName("127.0.0." + n);
    }

    @Test
    void shouldRefuseTheNewConnectionOfAnAddressAtItsLimit() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(100, 3, TIMEOUT));
        for (int i = 0; i < 3; i++) {
            assertThat(pending.admit(host(2), 0)).isNotNull();
        }
        assertThat(pending.admit(host(2), 0)).as("fourth from 127.0.0.2").isNull();
        assertThat(pending.admit(host(3), 0)).as("first from 127.0.0.3").isNotNull();
        assertThat(pending.count(host(2))).isEqualTo(3);
        assertThat(pending.count()).isEqualTo(4);
    }

    @Test
    void shouldCloseTheOldestPendingConnectionAtThePortLimit() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(3, 3, TIMEOUT));
        List<Refusal> closedFirst = new ArrayList<>();
        PendingConnections.Entry first = pending.admit(host(2), 0);
        assertThat(first.attach(closedFirst::add)).isTrue();
        pending.admit(host(3), 1);
        pending.admit(host(4), 2);
        PendingConnections.Entry fourth = pending.admit(host(5), 3);
        assertThat(fourth).isNotNull();
        assertThat(closedFirst).containsExactly(Refusal.PORT_LIMIT);
        assertThat(first.refusal()).isEqualTo(Refusal.PORT_LIMIT);
        assertThat(pending.count()).isEqualTo(3);
        assertThat(pending.count(host(2))).isZero();
    }

    @Test
    void shouldTellTheOwnerThatAttachesTooLate() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(1, 1, TIMEOUT));
        PendingConnections.Entry first = pending.admit(host(2), 0);
        pending.admit(host(3), 0); // evicts first before its owner attached
        assertThat(first.attach(why -> { })).isFalse();
        assertThat(first.refusal()).isEqualTo(Refusal.PORT_LIMIT);
    }

    @Test
    void shouldExpireOnlyConnectionsPastTheTimeout() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(10, 10, TIMEOUT));
        List<String> closed = new ArrayList<>();
        PendingConnections.Entry early = pending.admit(host(2), 0);
        early.attach(why -> closed.add("early " + why));
        PendingConnections.Entry connected = pending.admit(host(2), 10);
        connected.attach(why -> closed.add("connected " + why));
        PendingConnections.Entry late = pending.admit(host(3), TIMEOUT / 2);
        late.attach(why -> closed.add("late " + why));
        connected.release();

        assertThat(pending.expire(TIMEOUT - 1)).isZero();
        assertThat(pending.expire(TIMEOUT + 10)).isEqualTo(1);
        assertThat(closed).containsExactly("early CONNECT_TIMEOUT");
        assertThat(pending.expire(TIMEOUT + TIMEOUT / 2)).isEqualTo(1);
        assertThat(closed).containsExactly("early CONNECT_TIMEOUT", "late CONNECT_TIMEOUT");
        assertThat(pending.count()).isZero();
    }

    @Test
    void shouldSayWhenTheNextExpiryIsDue() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(10, 10, TIMEOUT));
        assertThat(pending.nanosToNextExpiry(0)).as("none pending").isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
        PendingConnections.Entry first = pending.admit(host(2), 100);
        pending.admit(host(3), 300);
        assertThat(pending.nanosToNextExpiry(100)).as("the oldest's deadline").isEqualTo(TIMEOUT);
        assertThat(pending.nanosToNextExpiry(TIMEOUT + 150)).as("past it: due now").isZero();
        first.release();
        assertThat(pending.nanosToNextExpiry(200)).as("the next oldest").isEqualTo(TIMEOUT + 100);
        pending.expire(TIMEOUT + 300);
        assertThat(pending.nanosToNextExpiry(TIMEOUT + 300)).as("all gone")
            .isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
        PendingConnections slow = new PendingConnections(new ConnectionLimits(10, 10, TimeUnit.HOURS.toNanos(1)));
        slow.admit(host(2), 0);
        assertThat(slow.nanosToNextExpiry(0)).as("never longer than the idle wait")
            .isEqualTo(PendingConnections.IDLE_WAIT_NANOS);
    }

    @Test
    void shouldCountAReleaseOnce() throws Exception {
        PendingConnections pending = new PendingConnections(new ConnectionLimits(10, 2, TIMEOUT));
        PendingConnections.Entry e = pending.admit(host(2), 0);
        pending.admit(host(2), 0);
        e.release();
        e.release();
        assertThat(pending.count(host(2))).isEqualTo(1);
        assertThat(pending.admit(host(2), 0)).isNotNull();
        assertThat(pending.admit(host(2), 0)).isNull();
    }

    @Test
    void shouldRangeCheckTheLimits() {
        assertThatThrownBy(() -> new ConnectionLimits(0, 1, TIMEOUT)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ConnectionLimits(10, 11, TIMEOUT)).hasMessageContaining("per host 11");
        assertThatThrownBy(() -> new ConnectionLimits(10, 5, TimeUnit.MILLISECONDS.toNanos(99)))
            .hasMessageContaining("connect timeout 99 ms");
        assertThat(ConnectionLimits.defaults().maxPendingPerHost()).isGreaterThan(128);
    }
}
