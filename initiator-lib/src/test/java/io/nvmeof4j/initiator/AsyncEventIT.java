package io.nvmeof4j.initiator;

import io.nvmeof4j.target.backend.RamBlockDevice;
import io.nvmeof4j.target.model.Namespace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** A namespace added on the target reaches the application: AEN, Changed Namespace List, rescan, listener. */
class AsyncEventIT {
    @TempDir
    Path dir;

    record Change(List<Integer> changed, List<Integer> nsids) { }

    @Test
    void shouldTellTheApplicationAboutANewNamespace() throws Exception {
        try (InJvmTarget target = new InJvmTarget(dir);
             NvmeofHost host = NvmeofHost.create(HostIdentity.generate(), 1);
             NvmeofController controller = host.connect(target.ioAddress(), InJvmTarget.NQN_A,
                 ConnectOptions.defaults().withIoQueues(1))) {
            assertThat(controller.namespaces()).extracting(NvmeofNamespace::nsid).containsExactly(1, 2);
            CompletableFuture<Change> heard = new CompletableFuture<>();
            controller.addNamespaceListener((c, changed, now) ->
                heard.complete(new Change(changed, now.stream().map(NvmeofNamespace::nsid).toList())));

            UUID uuid = UUID.randomUUID();
            target.daemon().model().subsystem(InJvmTarget.NQN_A)
                .addNamespace(new Namespace(3, new RamBlockDevice("hot-added", 8L << 20, 512), uuid,
                    new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
            target.daemon().registry().notifyNamespaceChanged(InJvmTarget.NQN_A, 3);

            Change change = heard.get(10, TimeUnit.SECONDS);
            assertThat(change.changed()).containsExactly(3);
            assertThat(change.nsids()).containsExactly(1, 2, 3);
            NvmeofNamespace added = controller.namespace(3);
            assertThat(added).isNotNull();
            assertThat(added.blockCount()).isEqualTo((8L << 20) / 512);
            assertThat(added.uuid()).isEqualTo(uuid);
            ByteBuffer data = Bytes.random(4096, 3);
            added.write(0, data).get(10, TimeUnit.SECONDS);
            assertThat(Bytes.array(added.read(0, 8).get(10, TimeUnit.SECONDS))).isEqualTo(Bytes.array(data));

            // The AER was re-armed: a removal is heard too.
            CompletableFuture<Change> second = new CompletableFuture<>();
            controller.addNamespaceListener((c, changed, now) ->
                second.complete(new Change(changed, now.stream().map(NvmeofNamespace::nsid).toList())));
            target.daemon().model().subsystem(InJvmTarget.NQN_A).removeNamespace(3);
            target.daemon().registry().notifyNamespaceChanged(InJvmTarget.NQN_A, 3);
            assertThat(second.get(10, TimeUnit.SECONDS).nsids()).containsExactly(1, 2);
            assertThat(controller.namespace(3)).isNull();
        }
    }
}
