// libsystemd for Swift, imported only by Systemd. The `cassette_` functions stand in for the
// variadic sd_notifyf and sd_journal_send and the SD_LISTEN_FDS_START macro. `static inline`:
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
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>

/// sd_notifyf is variadic; Swift formats the text and passes it whole.
static inline int cassette_sd_notify(int unset_environment, const char *state) { return sd_notify(unset_environment, state); }

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
#endif
