package io.nvmeof4j.rdma;

/**
 * Where a registered memory region is and how to name it in work requests: its start address and keys.
 *
 * @param address virtual address of the first byte registered
 * @param length  bytes registered
 * @param lkey    local key (for our work requests' scatter/gather entries)
 * @param rkey    remote key (what the peer puts in RDMA READ/WRITE, and what we put in keyed SGLs)
 */
public record MemoryKeys(long address, long length, int lkey, int rkey) {
}
