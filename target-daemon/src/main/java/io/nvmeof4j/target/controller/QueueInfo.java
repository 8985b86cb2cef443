package io.nvmeof4j.target.controller;

/**
 * One connected queue of a controller, as the management API and the metrics report it.
 *
 * @param qid                 0 for the admin queue
 * @param peer                the host's address of this queue's connection
 * @param commandsOutstanding commands received and not yet answered (a snapshot)
 */
public record QueueInfo(int qid, String peer, int commandsOutstanding) {
}
