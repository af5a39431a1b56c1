#ifndef CASSETTE_SHIMS_CURL_H
#define CASSETTE_SHIMS_CURL_H
#include <curl/curl.h>

/// curl_easy_setopt is variadic: one typed setter per argument kind.
CURLcode cassette_curl_setopt_long(CURL *h, CURLoption opt, long value);
CURLcode cassette_curl_setopt_string(CURL *h, CURLoption opt, const char *value);
CURLcode cassette_curl_setopt_pointer(CURL *h, CURLoption opt, void *value);
CURLcode cassette_curl_setopt_off_t(CURL *h, CURLoption opt, curl_off_t value);
/// Write and header callbacks share one C signature (fwrite-like).
typedef size_t (*cassette_curl_data_cb)(char *ptr, size_t size, size_t nmemb, void *userdata);
CURLcode cassette_curl_setopt_data_cb(CURL *h, CURLoption opt, cassette_curl_data_cb cb);
/// CURLOPT_XFERINFOFUNCTION's signature; returning non-zero aborts the transfer.
typedef int (*cassette_curl_xferinfo_cb)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                         curl_off_t ultotal, curl_off_t ulnow);
CURLcode cassette_curl_setopt_xferinfo_cb(CURL *h, cassette_curl_xferinfo_cb cb);
/// curl_multi_setopt is variadic too.
CURLMcode cassette_curl_multi_setopt_long(CURLM *m, CURLMoption opt, long value);

/// curl_easy_getinfo is variadic: one typed getter per result kind.
CURLcode cassette_curl_getinfo_long(CURL *h, CURLINFO info, long *out);
CURLcode cassette_curl_getinfo_off_t(CURL *h, CURLINFO info, curl_off_t *out);
CURLcode cassette_curl_getinfo_double(CURL *h, CURLINFO info, double *out);
CURLcode cassette_curl_getinfo_string(CURL *h, CURLINFO info, const char **out);

/// CURL_GLOBAL_DEFAULT is a macro built from other macros; Swift does not import it.
long cassette_curl_global_default(void);
/// CURLAUTH_BASIC is a macro with an (unsigned long) cast Swift does not import.
long cassette_curl_auth_basic(void);
#endif
