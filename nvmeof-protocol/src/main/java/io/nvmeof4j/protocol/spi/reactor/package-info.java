/**
 * The reactor loop shared by the target's and the initiator's data-path threads ({@link
 * io.nvmeof4j.protocol.spi.reactor.ReactorLoop}), and what a poll group offers so a reactor waits on one primitive
 * ({@link io.nvmeof4j.protocol.spi.reactor.SelectorPollGroup}). The idle strategies are in {@code spi.idle}.
 */
package io.nvmeof4j.protocol.spi.reactor;
