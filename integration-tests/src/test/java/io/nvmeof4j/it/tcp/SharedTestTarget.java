package io.nvmeof4j.it.tcp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/**
 * One {@link TestTarget} shared by the tests of a class: started before the first, closed after the last. The ITs
 * that drive it with raw hosts extend this instead of repeating the lifecycle (classes run one after the other, so
 * the static fields belong to one class at a time).
 */
abstract class SharedTestTarget {
    @TempDir
    static Path dir;
    static TestTarget target;

    @BeforeAll
    static void startTarget() throws Exception {
        target = TestTarget.start(dir);
    }

    @AfterAll
    static void stopTarget() throws Exception {
        if (target != null) {
            target.close();
            target = null;
        }
    }
}
