package io.nvmeof4j.initiator.cli;

import org.slf4j.LoggerFactory;

/**
 * The CLI picks its logging backend (the library never does): Logback, to stderr, WARN (DEBUG with
 * {@code --verbose}). Without this, Logback's default configuration would log DEBUG to stdout, into
 * {@code --json} output and the raw data of {@code read}.
 */
final class CliLogging {
    private CliLogging() {
    }

    static void configure(boolean verbose) {
        try {
            Object factory = LoggerFactory.getILoggerFactory();
            if (!(factory instanceof ch.qos.logback.classic.LoggerContext)) {
                return; // another backend: its own configuration applies
            }
            ch.qos.logback.classic.LoggerContext context = (ch.qos.logback.classic.LoggerContext) factory;
            context.reset();
            ch.qos.logback.classic.encoder.PatternLayoutEncoder encoder =
                new ch.qos.logback.classic.encoder.PatternLayoutEncoder();
            encoder.setContext(context);
            encoder.setPattern("nvmeof: %-5level %logger{0}: %msg%n");
            encoder.start();
            ch.qos.logback.core.ConsoleAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender =
                new ch.qos.logback.core.ConsoleAppender<>();
            appender.setContext(context);
            appender.setTarget("System.err");
            appender.setEncoder(encoder);
            appender.start();
            ch.qos.logback.classic.Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            root.setLevel(verbose ? ch.qos.logback.classic.Level.DEBUG : ch.qos.logback.classic.Level.WARN);
            root.addAppender(appender);
        } catch (LinkageError noLogback) {
            // Logback is not on the class path: whatever SLF4J found applies
        }
    }

    static void stop() {
        try {
            Object factory = LoggerFactory.getILoggerFactory();
            if (factory instanceof ch.qos.logback.classic.LoggerContext) {
                ((ch.qos.logback.classic.LoggerContext) factory).stop();
            }
        } catch (LinkageError noLogback) {
            // nothing to stop
        }
    }
}
