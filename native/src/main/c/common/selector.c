/*
 * The JDK's epoll selector seen from C, for both libraries (issue 17, one wait primitive per reactor): its epoll fd
 * and its wake-up eventfd, read through JNI, and an fd of ours joined to its epoll set. The io_uring (bdev) makes
 * the eventfd its completion eventfd; an RDMA completion channel (rdma) joins its fd to the epoll set.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "nvmeof4j_jni.h"

/* Reads an int field of obj (of its own class), or -ENOTSUP when there is none (another JDK, another provider). */
static int selector_int_field(JNIEnv *env, jobject obj, const char *name)
{
    jclass cls = (*env)->GetObjectClass(env, obj);
    jfieldID field = (*env)->GetFieldID(env, cls, name, "I");
    (*env)->DeleteLocalRef(env, cls);
    if (field == NULL) {
        (*env)->ExceptionClear(env);
        return -ENOTSUP;
    }
    jint fd = (*env)->GetIntField(env, obj, field);
    return fd >= 0 ? fd : -EBADF;
}

/*
 * sun.nio.ch.EPollSelectorImpl's epfd and eventfd.efd (JDK 16 and later), read through JNI, which ignores module
 * boundaries: no --add-opens. Either out pointer may be NULL. 0, or -ENOTSUP for any other selector.
 */
int nvmeof4j_selector_fds(JNIEnv *env, jobject selector, int *epfd, int *eventfd)
{
    if (selector == NULL) {
        return -EINVAL;
    }
    if (epfd != NULL) {
        int fd = selector_int_field(env, selector, "epfd");
        if (fd < 0) {
            return fd;
        }
        *epfd = fd;
    }
    if (eventfd != NULL) {
        jclass cls = (*env)->GetObjectClass(env, selector);
        jfieldID field = (*env)->GetFieldID(env, cls, "eventfd", "Lsun/nio/ch/EventFD;");
        (*env)->DeleteLocalRef(env, cls);
        if (field == NULL) {
            (*env)->ExceptionClear(env);
            return -ENOTSUP;
        }
        jobject efd = (*env)->GetObjectField(env, selector, field);
        if (efd == NULL) {
            return -ENOTSUP;
        }
        int fd = selector_int_field(env, efd, "efd");
        (*env)->DeleteLocalRef(env, efd);
        if (fd < 0) {
            return fd;
        }
        *eventfd = fd;
    }
    return 0;
}

/*
 * The event an fd of ours is joined with: readable, one shot (after it is reported once, by a select or a selectNow,
 * it stays silent until re-armed). The data is the fd itself, as the JDK registers its own: the JDK looks the fd up
 * in its fd-to-key map, finds no key (the number is ours while we keep it open) and ignores the event; the select
 * has returned all the same. Level-triggered without the one shot, an fd nobody drains would end every select.
 */
static struct epoll_event selector_event(int fd)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT};
    ev.data.u64 = 0;
    ev.data.fd = fd;
    return ev;
}

/*
 * Adds fd to the selector's epoll set (one shot, above) through a duplicate of the selector's epoll fd, which the
 * caller keeps and passes to rearm and leave: the epoll instance then lives as long as the join, whatever the
 * selector does, and a later epoll_ctl can never reach another file that took the selector's fd number after it
 * closed. Returns the duplicate (>= 0), or -errno (-ENOTSUP: not the JDK's epoll selector).
 */
int nvmeof4j_selector_join(JNIEnv *env, jobject selector, int fd)
{
    int epfd;
    int rc = nvmeof4j_selector_fds(env, selector, &epfd, NULL);
    if (rc < 0) {
        return rc;
    }
    int dup = fcntl(epfd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        return NVMEOF4J_ERR();
    }
    struct epoll_event ev = selector_event(fd);
    if (epoll_ctl(dup, EPOLL_CTL_ADD, fd, &ev) != 0) {
        rc = NVMEOF4J_ERR();
        close(dup);
        return rc;
    }
    return dup;
}

/* Re-arms a joined fd after it was reported (EPOLL_CTL_MOD; reported at once if it is readable now). 0 or -errno. */
int nvmeof4j_selector_rearm(int epfd, int fd)
{
    struct epoll_event ev = selector_event(fd);
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == 0 ? 0 : NVMEOF4J_ERR();
}

/* Takes fd out of the epoll set and closes the duplicate; before fd itself is closed. 0 or -errno (closed anyway). */
int nvmeof4j_selector_leave(int epfd, int fd)
{
    int rc = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL) == 0 ? 0 : NVMEOF4J_ERR();
    close(epfd);
    return rc;
}
