package io.nvmeof4j.initiator.cli;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A latency percentile spectrum as a standalone SVG a person opens in a browser: latency (µs) against percentile,
 * the x axis log-scaled in "nines" (1 / (1 − p)) the way HdrHistogram's plotter draws it, so the tail (99 %,
 * 99.9 %, 99.99 %) gets as much room as the median. No dependency: the SVG is written by hand.
 */
final class LatencyChart {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 520;
    private static final int LEFT = 80;
    private static final int RIGHT = 30;
    private static final int TOP = 50;
    private static final int BOTTOM = 60;

    private LatencyChart() {
    }

    /** The SVG text of {@code histogram} (values in nanoseconds). */
    static String svg(Histogram histogram, String title) {
        List<double[]> points = new ArrayList<>(); // [x = log10(1/(1-p)), y = µs]
        double maxNines = 1;
        if (histogram.getTotalCount() > 0) {
            for (HistogramIterationValue v : histogram.percentiles(5)) {
                double p = v.getPercentileLevelIteratedTo() / 100.0;
                if (p >= 1.0) {
                    break;
                }
                double x = Math.log10(1.0 / (1.0 - p));
                points.add(new double[] {x, histogram.highestEquivalentValue(v.getValueIteratedTo()) / 1000.0});
            }
            // The maximum, at one more "nine" than the count can resolve.
            double last = Math.max(1, Math.ceil(Math.log10(histogram.getTotalCount())));
            points.add(new double[] {last, histogram.getMaxValue() / 1000.0});
            maxNines = Math.max(1, Math.min(7, last));
        }
        double maxY = 0;
        for (double[] p : points) {
            maxY = Math.max(maxY, p[1]);
        }
        maxY = niceCeiling(maxY);
        double plotW = WIDTH - LEFT - RIGHT;
        double plotH = HEIGHT - TOP - BOTTOM;
        StringBuilder s = new StringBuilder(16_384);
        s.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT, WIDTH, HEIGHT));
        s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"25\" font-size=\"15\" font-weight=\"bold\">%s</text>%n",
            LEFT, escape(title)));
        // y grid and labels
        for (int i = 0; i <= 5; i++) {
            double v = maxY * i / 5;
            double y = TOP + plotH - plotH * i / 5;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                LEFT, y, LEFT + plotW, y));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                LEFT - 6, y + 4, format(v)));
        }
        // x grid: 0 %, 90 %, 99 %, ...
        String[] labels = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"};
        for (int n = 0; n <= (int) maxNines; n++) {
            double x = LEFT + plotW * n / maxNines;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                x, TOP, x, TOP + plotH));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>%n",
                x, TOP + plotH + 18, labels[n]));
        }
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            + "stroke=\"#333\"/>%n", LEFT, TOP, plotW, plotH));
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">Percentile</text>%n",
            LEFT + plotW / 2, HEIGHT - 15));
        s.append(String.format(Locale.ROOT, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
            + "transform=\"rotate(-90 18 %.1f)\">Latency (µs)</text>%n", TOP + plotH / 2, TOP + plotH / 2));
        if (!points.isEmpty()) {
            s.append("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"");
            for (double[] p : points) {
                double x = LEFT + plotW * Math.min(p[0], maxNines) / maxNines;
                double y = TOP + plotH - plotH * (maxY == 0 ? 0 : p[1] / maxY);
                s.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
            }
            s.append("\"/>\n");
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%,d I/Os; "
                + "p50 %s µs, p99 %s µs, p99.9 %s µs, max %s µs</text>%n", LEFT + plotW, TOP - 8,
            histogram.getTotalCount(), format(histogram.getValueAtPercentile(50) / 1000.0),
            format(histogram.getValueAtPercentile(99) / 1000.0), format(histogram.getValueAtPercentile(99.9) / 1000.0),
            format(histogram.getMaxValue() / 1000.0)));
        s.append("</svg>\n");
        return s.toString();
    }

    private static double niceCeiling(double v) {
        if (v <= 0) {
            return 1;
        }
        double magnitude = Math.pow(10, Math.floor(Math.log10(v)));
        for (double step : new double[] {1, 2, 2.5, 5, 10}) {
            if (step * magnitude >= v) {
                return step * magnitude;
            }
        }
        return 10 * magnitude;
    }

    private static String format(double v) {
        return v >= 100 ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.2f", v);
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
