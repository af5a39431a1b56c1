#ifndef CASSETTE_SHIMS_SYSTEMD_H
#define CASSETTE_SHIMS_SYSTEMD_H
#include <stddef.h>

/// sd_notifyf is variadic; Swift formats the text and passes it whole.
int cassette_sd_notify(int unset_environment, const char *state);
/// sd_journal_send is variadic; this takes MESSAGE, PRIORITY and up to `count` extra
/// "FIELD=value" strings as an array and hands them to sd_journal_sendv.
int cassette_sd_journal_send(const char *message, int priority, const char *const *fields, size_t count);
/// SD_LISTEN_FDS_START is a macro.
int cassette_sd_listen_fds_start(void);
#endif
