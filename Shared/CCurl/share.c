// A curl share handle for the easy handles of one HTTPClient: they run on different threads
// at once, so curl asks for a lock around every use of the shared data. The locks live here,
// in C, as plain pthread mutexes (one per curl_lock_data kind), so that no Swift code runs
// inside curl's callbacks.
//
// Shared: the DNS cache and the TLS session cache, so that a connection opened by one handle
// resumes the TLS session another handle negotiated (an abbreviated handshake) and needs no
// lookup. Not shared: the connection cache. libcurl documents that sharing connections
// between handles running in different threads at once is unsafe, and an HTTP/2 connection
// carries streams of one handle (or one multi handle) only: each easy handle keeps its own
// connections, reused by the transfers that borrow it.

#include <pthread.h>
#include <stdlib.h>

#include "shim.h"

struct cassette_curl_share {
    CURLSH *handle;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

static void lock_shared(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr) {
    (void)handle;
    (void)access;
    struct cassette_curl_share *share = userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&share->locks[data]);
}

static void unlock_shared(CURL *handle, curl_lock_data data, void *userptr) {
    (void)handle;
    struct cassette_curl_share *share = userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&share->locks[data]);
}

cassette_curl_share *cassette_curl_share_new(void) {
    struct cassette_curl_share *share = calloc(1, sizeof *share);
    if (share == NULL) return NULL;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share->locks[i], NULL);
    share->handle = curl_share_init();
    if (share->handle == NULL
        || curl_share_setopt(share->handle, CURLSHOPT_USERDATA, (void *)share) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_LOCKFUNC, lock_shared) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_UNLOCKFUNC, unlock_shared) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        cassette_curl_share_free(share);
        return NULL;
    }
    return share;
}

CURLSH *cassette_curl_share_handle(cassette_curl_share *share) {
    return share->handle;
}

void cassette_curl_share_free(cassette_curl_share *share) {
    if (share == NULL) return;
    if (share->handle != NULL) curl_share_cleanup(share->handle);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&share->locks[i]);
    free(share);
}
