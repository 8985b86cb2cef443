package io.nvmeof4j.initiator;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * {@link CallbackAllocationIT} with the host recording into a Prometheus registry, percentile histograms on: the
 * metered data path allocates nothing per I/O either.
 */
class CallbackAllocationWithMetricsIT extends CallbackAllocationIT {
    @Override
    NvmeofHost createHost() {
        return NvmeofHost.create(HostIdentity.generate(), 1, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), true);
    }
}
