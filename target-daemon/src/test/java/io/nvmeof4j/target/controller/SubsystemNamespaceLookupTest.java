package io.nvmeof4j.target.controller;

import io.nvmeof4j.target.model.Namespace;
import io.nvmeof4j.target.model.Subsystem;
import org.junit.jupiter.api.Test;

import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Subsystem's copy-on-write NSID index, the lookup every I/O command makes. */
class SubsystemNamespaceLookupTest {
    private static Namespace ns(int nsid) {
        return new Namespace(nsid, new RamDevice(512, 8, false), UUID.randomUUID(), new byte[16]);
    }

    @Test
    void shouldFindAddRemoveInUnsignedOrder() {
        Subsystem s = new Subsystem("nqn.2024-01.io.x:s", "sn", "mn", "fr", true);
        int[] nsids = {5, 1, 1000, 3, Subsystem.MAX_NSID, 2};
        for (int nsid : nsids) {
            assertThat(s.addNamespace(ns(nsid))).isTrue();
        }
        assertThat(s.addNamespace(ns(3))).as("duplicate").isFalse();
        assertThat(s.namespaces()).extracting(Namespace::nsid)
            .containsExactly(1, 2, 3, 5, 1000, Subsystem.MAX_NSID);
        for (int nsid : nsids) {
            assertThat(s.namespace(nsid).nsid()).isEqualTo(nsid);
        }
        assertThat(s.namespace(4)).isNull();
        assertThat(s.namespace(0)).isNull();
        assertThat(s.namespace(-1)).isNull();
        assertThat(s.namespace(0x8000_0000)).isNull();

        Namespace removed = s.removeNamespace(1000);
        assertThat(removed.nsid()).isEqualTo(1000);
        assertThat(s.namespace(1000)).isNull();
        assertThat(s.removeNamespace(1000)).isNull();
        assertThat(s.namespaces()).extracting(Namespace::nsid).containsExactly(1, 2, 3, 5, Subsystem.MAX_NSID);
        for (int nsid : new int[] {1, 2, 3, 5, Subsystem.MAX_NSID}) {
            s.removeNamespace(nsid);
        }
        assertThat(s.namespaces()).isEmpty();
        assertThat(s.namespace(1)).isNull();
    }

    @Test
    void shouldRefuseNsidsOutsideOneToNn() {
        Subsystem s = new Subsystem("nqn.2024-01.io.x:s", "sn", "mn", "fr", true);
        // (0 and 0xFFFFFFFF cannot even make a Namespace.)
        for (int nsid : new int[] {Subsystem.MAX_NSID + 1, 0x8000_0000, 0xFFFF_FFFE}) {
            Namespace ns = ns(nsid);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> s.addNamespace(ns))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside 1..1024");
        }
        assertThat(s.namespaces()).isEmpty();
    }

    @Test
    void shouldGiveSnapshotsThatLaterChangesDoNotAffect() {
        Subsystem s = new Subsystem("nqn.2024-01.io.x:s", "sn", "mn", "fr", true);
        s.addNamespace(ns(1));
        var snapshot = s.namespaces();
        s.addNamespace(ns(2));
        assertThat(snapshot).hasSize(1);
        assertThat(s.namespaces()).hasSize(2);
    }
}
