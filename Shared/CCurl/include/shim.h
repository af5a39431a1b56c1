// libcurl for Swift, imported only by HTTPClient. The `cassette_` functions stand in for
// what Swift's C importer cannot call: the variadic curl_easy_setopt, curl_easy_getinfo and
// curl_multi_setopt, and macros built from other macros or casts.
//
// No binary links libcurl: loader.c defines the libcurl functions Cassette calls, and each one
// opens the library (and runs curl_global_init) the first time any is called (see
// cassette_curl_load). A daemon that has not talked to the network yet has not mapped libcurl
// and its ~35 libraries: it starts faster and idles in less memory.
#ifndef CASSETTE_CCURL_SHIM_H
#define CASSETTE_CCURL_SHIM_H
#include <curl/curl.h>

/// Opens libcurl and runs curl_global_init(CURL_GLOBAL_DEFAULT), once per process; call it
/// before any other curl function (they abort when the library cannot be opened). NULL when
/// it is open, else the loader's message (libcurl missing from the device, or its global
/// initialisation failed). Blocks while it maps the libraries: call it where blocking is allowed.
const char *cassette_curl_load(void);
/// Non-zero once cassette_curl_load has run to its end (successfully or not): later calls of it
/// return at once.
int cassette_curl_load_attempted(void);

/// curl_easy_setopt is variadic: one typed setter per argument kind.
static inline CURLcode cassette_curl_setopt_long(CURL *h, CURLoption opt, long value) { return curl_easy_setopt(h, opt, value); }
static inline CURLcode cassette_curl_setopt_string(CURL *h, CURLoption opt, const char *value) { return curl_easy_setopt(h, opt, value); }
static inline CURLcode cassette_curl_setopt_pointer(CURL *h, CURLoption opt, void *value) { return curl_easy_setopt(h, opt, value); }
static inline CURLcode cassette_curl_setopt_off_t(CURL *h, CURLoption opt, curl_off_t value) { return curl_easy_setopt(h, opt, value); }
/// Write and header callbacks share one C signature (fwrite-like).
typedef size_t (*cassette_curl_data_cb)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode cassette_curl_setopt_data_cb(CURL *h, CURLoption opt, cassette_curl_data_cb cb) { return curl_easy_setopt(h, opt, cb); }
/// CURLOPT_XFERINFOFUNCTION's signature; returning non-zero aborts the transfer.
typedef int (*cassette_curl_xferinfo_cb)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                         curl_off_t ultotal, curl_off_t ulnow);
/// Sets the progress callback and switches progress callbacks on (CURLOPT_NOPROGRESS 0).
static inline CURLcode cassette_curl_setopt_xferinfo_cb(CURL *h, cassette_curl_xferinfo_cb cb) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb);
    if (rc != CURLE_OK) return rc;
    return curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}
/// curl_multi_setopt is variadic too.
static inline CURLMcode cassette_curl_multi_setopt_long(CURLM *m, CURLMoption opt, long value) { return curl_multi_setopt(m, opt, value); }

/// curl_easy_getinfo is variadic: one typed getter per result kind.
static inline CURLcode cassette_curl_getinfo_long(CURL *h, CURLINFO info, long *out) { return curl_easy_getinfo(h, info, out); }
static inline CURLcode cassette_curl_getinfo_off_t(CURL *h, CURLINFO info, curl_off_t *out) { return curl_easy_getinfo(h, info, out); }
static inline CURLcode cassette_curl_getinfo_double(CURL *h, CURLINFO info, double *out) { return curl_easy_getinfo(h, info, out); }
static inline CURLcode cassette_curl_getinfo_string(CURL *h, CURLINFO info, const char **out) { return curl_easy_getinfo(h, info, out); }

/// CURL_GLOBAL_DEFAULT is a macro built from other macros; Swift does not import it.
static inline long cassette_curl_global_default(void) { return CURL_GLOBAL_DEFAULT; }
/// CURLAUTH_BASIC is a macro with an (unsigned long) cast Swift does not import.
static inline long cassette_curl_auth_basic(void) { return (long)CURLAUTH_BASIC; }

/// A curl share handle whose DNS cache and TLS session cache every easy handle attached to it
/// (CURLOPT_SHARE) uses, with the lock callbacks curl needs to use it from many threads: one
/// pthread mutex per kind of shared data (see share.c). NULL when curl cannot make one. Call
/// after cassette_curl_load succeeded.
typedef struct cassette_curl_share cassette_curl_share;
cassette_curl_share *cassette_curl_share_new(void);
/// The CURLSH * to pass as CURLOPT_SHARE.
CURLSH *cassette_curl_share_handle(cassette_curl_share *share);
/// Frees the share; no easy handle may still use it (curl_easy_cleanup detaches one).
void cassette_curl_share_free(cassette_curl_share *share);
#endif
