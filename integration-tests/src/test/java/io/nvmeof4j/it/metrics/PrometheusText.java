package io.nvmeof4j.it.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/** The samples of a Prometheus text exposition (format 0.0.4), parsed strictly enough for tests. */
final class PrometheusText {
    record Sample(String name, Map<String, String> labels, double value) {
        String label(String key) {
            return labels.get(key);
        }
    }

    private final List<Sample> samples = new ArrayList<>();

    PrometheusText(String text) {
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            samples.add(parse(line));
        }
    }

    private static Sample parse(String line) {
        int brace = line.indexOf('{');
        int space = line.lastIndexOf(' ');
        String name;
        Map<String, String> labels = new LinkedHashMap<>();
        if (brace >= 0 && brace < space) {
            name = line.substring(0, brace);
            int end = line.lastIndexOf('}');
            String body = line.substring(brace + 1, end);
            int i = 0;
            while (i < body.length()) {
                int eq = body.indexOf('=', i);
                String key = body.substring(i, eq).trim();
                if (body.charAt(eq + 1) != '"') {
                    throw new IllegalArgumentException("label value not quoted: " + line);
                }
                StringBuilder value = new StringBuilder();
                int j = eq + 2;
                for (; body.charAt(j) != '"'; j++) {
                    char c = body.charAt(j);
                    if (c == '\\') {
                        j++;
                        char e = body.charAt(j);
                        value.append(e == 'n' ? '\n' : e);
                    } else {
                        value.append(c);
                    }
                }
                labels.put(key, value.toString());
                i = j + 1;
                if (i < body.length() && body.charAt(i) == ',') {
                    i++;
                }
            }
        } else {
            name = line.substring(0, space);
        }
        String v = line.substring(space + 1).trim();
        double value = switch (v) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            default -> Double.parseDouble(v);
        };
        return new Sample(name, labels, value);
    }

    List<Sample> samples(String name, Predicate<Sample> filter) {
        return samples.stream().filter(s -> s.name().equals(name) && filter.test(s)).toList();
    }

    /** The one sample of {@code name} whose labels include all of {@code labels}; fails when none or several match. */
    double value(String name, Map<String, String> labels) {
        List<Sample> found = samples(name, s -> s.labels().entrySet().containsAll(labels.entrySet()));
        if (found.size() != 1) {
            throw new AssertionError(found.size() + " samples of " + name + " with " + labels + ": " + found);
        }
        return found.get(0).value();
    }

    /** Like {@link #value} but 0 when there is no such sample. */
    double valueOrZero(String name, Map<String, String> labels) {
        List<Sample> found = samples(name, s -> s.labels().entrySet().containsAll(labels.entrySet()));
        return found.isEmpty() ? 0 : value(name, labels);
    }

    boolean has(String name, Map<String, String> labels) {
        return !samples(name, s -> s.labels().entrySet().containsAll(labels.entrySet())).isEmpty();
    }
}
