package io.nvmeof4j.initiator;

import java.util.List;

/** Hears about namespace changes the controller announced (Asynchronous Event: namespace attribute changed). */
@FunctionalInterface
public interface NamespaceListener {
    /**
     * Called after the namespace list was rescanned, on a host control thread (it may block briefly).
     *
     * @param changedNsids the namespaces the controller's Changed Namespace List log named (empty when it overflowed)
     * @param namespaces   the namespaces now active ({@link NvmeofController#namespaces()})
     */
    void onNamespacesChanged(NvmeofController controller, List<Integer> changedNsids, List<NvmeofNamespace> namespaces);
}
