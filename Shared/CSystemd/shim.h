// libsystemd for Swift, imported only by Systemd. The `cassette_` functions stand in for
// sd_notify (one that never waits), the variadic sd_journal_send, the SD_LISTEN_FDS_START macro and
// sd-bus's vtable macros. `static inline`:
// only a binary that imports this module links libsystemd.
#ifndef CASSETTE_CSYSTEMD_SHIM_H
#define CASSETTE_CSYSTEMD_SHIM_H
/* The caller's location comes from Swift as CODE_* fields; without this libsystemd adds a
   second set naming this header. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>

/// sd_notify without ever waiting. sd_notify(3) sends with a blocking sendmsg, which sleeps
/// while the manager's datagram queue is full (a busy manager, a reader that fell behind) —
/// on Swift's cooperative pool that stalls the whole service, and libsystemd offers no flag
/// against it. This sends the same datagram to a path or abstract NOTIFY_SOCKET with
/// MSG_DONTWAIT: -EAGAIN means the manager's queue was full and the message was dropped.
/// Other socket kinds (vsock) go through sd_notify. 0 when NOTIFY_SOCKET is unset.
static inline int cassette_sd_notify_nowait(const char *state) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path) return 0;
    if (path[0] != '/' && path[0] != '@') return sd_notify(0, state);
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    size_t length = strlen(path);
    if (length >= sizeof address.sun_path) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, length);
    if (path[0] == '@') address.sun_path[0] = 0;
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length + (path[0] == '/' ? 1 : 0));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t sent = sendto(fd, state, strlen(state), MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&address, address_length);
    int rc = sent < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/// SD_LISTEN_FDS_START is a macro.
static inline int cassette_sd_listen_fds_start(void) { return SD_LISTEN_FDS_START; }

/// sd_journal_send is variadic; this takes MESSAGE, PRIORITY and `count` extra
/// "FIELD=value" strings as an array and hands them to sd_journal_sendv.
static inline int cassette_sd_journal_send(const char *message, int priority, const char *const *fields, size_t count) {
    struct iovec *iov = calloc(count + 2, sizeof(struct iovec));
    if (!iov) return -12;
    size_t msg_len = strlen(message) + sizeof("MESSAGE=");
    char *msg = malloc(msg_len);
    char prio[16];
    if (!msg) { free(iov); return -12; }
    snprintf(msg, msg_len, "MESSAGE=%s", message);
    snprintf(prio, sizeof prio, "PRIORITY=%d", priority);
    iov[0].iov_base = msg; iov[0].iov_len = strlen(msg);
    iov[1].iov_base = prio; iov[1].iov_len = strlen(prio);
    for (size_t i = 0; i < count; i++) {
        iov[i + 2].iov_base = (void *)fields[i];
        iov[i + 2].iov_len = strlen(fields[i]);
    }
    int rc = sd_journal_sendv(iov, (int)(count + 2));
    free(msg);
    free(iov);
    return rc;
}
/* sd-bus object vtables. SD_BUS_VTABLE_START, SD_BUS_METHOD, SD_BUS_SIGNAL, SD_BUS_PROPERTY and
   SD_BUS_VTABLE_END are initializer macros Swift cannot import; these fill one entry of a table
   Swift allocated, field for field as the macros do. The entry is zeroed first: sd-bus reads the
   union's unused bytes, which a heap table would otherwise leave undefined (sd-bus-vtable.h). */
static inline void cassette_sd_bus_vtable_start(sd_bus_vtable *entry, uint64_t flags) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_START;
    entry->flags = flags;
    entry->x.start.element_size = sizeof(sd_bus_vtable);
    entry->x.start.features = _SD_BUS_VTABLE_PARAM_NAMES;
    entry->x.start.vtable_format_reference = &sd_bus_object_vtable_format;
}

static inline void cassette_sd_bus_vtable_method(sd_bus_vtable *entry, const char *member, const char *signature,
                                                 const char *result, sd_bus_message_handler_t handler, uint64_t flags) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_METHOD;
    entry->flags = flags;
    entry->x.method.member = member;
    entry->x.method.signature = signature;
    entry->x.method.result = result;
    entry->x.method.handler = handler;
    entry->x.method.names = "";
}

static inline void cassette_sd_bus_vtable_signal(sd_bus_vtable *entry, const char *member, const char *signature) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_SIGNAL;
    entry->x.signal.member = member;
    entry->x.signal.signature = signature;
    entry->x.signal.names = "";
}

static inline void cassette_sd_bus_vtable_property(sd_bus_vtable *entry, const char *member, const char *signature,
                                                   sd_bus_property_get_t get, uint64_t flags) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_PROPERTY;
    entry->flags = flags;
    entry->x.property.member = member;
    entry->x.property.signature = signature;
    entry->x.property.get = get;
}

static inline void cassette_sd_bus_vtable_end(sd_bus_vtable *entry) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_END;
}

/// A non-blocking eventfd that wakes a thread waiting on a bus (queued signals, a stop). Here
/// because <sys/eventfd.h> is not part of Swift's Glibc module.
static inline int cassette_wakeup_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// sd_bus_reply_method_return is variadic: an empty reply.
static inline int cassette_sd_bus_reply_empty(sd_bus_message *call) { return sd_bus_reply_method_return(call, NULL); }
#endif
