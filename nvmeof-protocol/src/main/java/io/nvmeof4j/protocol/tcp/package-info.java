/**
 * NVMe/TCP PDU codecs (NVMe/TCP Transport Specification 1.0, 3.6; wire reference 5): allocation-free flyweights
 * over little-endian buffers, one class per PDU with its byte layout in the Javadoc, the PDU type and
 * fatal-error-status constants, and the CRC32C digest helper.
 */
package io.nvmeof4j.protocol.tcp;
