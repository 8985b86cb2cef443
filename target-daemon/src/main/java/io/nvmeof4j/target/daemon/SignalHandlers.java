package io.nvmeof4j.target.daemon;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Turns SIGTERM and SIGINT into an orderly stop that ends with exit status 0.
 * <p>Why not only a shutdown hook: on SIGTERM the JVM runs its hooks and then exits with 143 (128 + 15), whatever
 * the hooks do, and service managers read that as a failure. Handling the signals ourselves lets the main thread
 * close the daemon and exit 0. {@code sun.misc.Signal} (module jdk.unsupported) is the only way the JDK offers;
 * it is reached by reflection so the build stays free of internal-API warnings and, should a JDK ever drop it,
 * the daemon falls back to the shutdown hook (still an orderly stop, exit status 143).
 */
final class SignalHandlers {
    private SignalHandlers() {
    }

    /**
     * Runs {@code action} (on a JVM signal thread) when SIGTERM or SIGINT arrives, instead of the JVM's shutdown.
     *
     * @return null when installed, else why not
     */
    static String install(Runnable action) {
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
            InvocationHandler invocation = (Object proxy, Method method, Object[] args) -> {
                switch (method.getName()) {
                    case "handle":
                        action.run();
                        return null;
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    case "equals":
                        return proxy == args[0];
                    case "toString":
                        return "nvmeof-target signal handler";
                    default:
                        return null;
                }
            };
            Object handler = Proxy.newProxyInstance(SignalHandlers.class.getClassLoader(),
                new Class<?>[] {handlerClass}, invocation);
            Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
            for (String name : new String[] {"TERM", "INT"}) {
                handle.invoke(null, signalClass.getConstructor(String.class).newInstance(name), handler);
            }
            return null;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            return cause.toString();
        }
    }
}
