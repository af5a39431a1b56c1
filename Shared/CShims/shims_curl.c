#include "shims_curl.h"

CURLcode cassette_curl_setopt_long(CURL *h, CURLoption opt, long value) { return curl_easy_setopt(h, opt, value); }
CURLcode cassette_curl_setopt_string(CURL *h, CURLoption opt, const char *value) { return curl_easy_setopt(h, opt, value); }
CURLcode cassette_curl_setopt_pointer(CURL *h, CURLoption opt, void *value) { return curl_easy_setopt(h, opt, value); }
CURLcode cassette_curl_setopt_off_t(CURL *h, CURLoption opt, curl_off_t value) { return curl_easy_setopt(h, opt, value); }
CURLcode cassette_curl_setopt_data_cb(CURL *h, CURLoption opt, cassette_curl_data_cb cb) { return curl_easy_setopt(h, opt, cb); }
CURLcode cassette_curl_setopt_xferinfo_cb(CURL *h, cassette_curl_xferinfo_cb cb) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb);
    if (rc != CURLE_OK) return rc;
    return curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}
CURLMcode cassette_curl_multi_setopt_long(CURLM *m, CURLMoption opt, long value) { return curl_multi_setopt(m, opt, value); }
CURLcode cassette_curl_getinfo_long(CURL *h, CURLINFO info, long *out) { return curl_easy_getinfo(h, info, out); }
CURLcode cassette_curl_getinfo_off_t(CURL *h, CURLINFO info, curl_off_t *out) { return curl_easy_getinfo(h, info, out); }
CURLcode cassette_curl_getinfo_double(CURL *h, CURLINFO info, double *out) { return curl_easy_getinfo(h, info, out); }
CURLcode cassette_curl_getinfo_string(CURL *h, CURLINFO info, const char **out) { return curl_easy_getinfo(h, info, out); }
long cassette_curl_global_default(void) { return CURL_GLOBAL_DEFAULT; }
long cassette_curl_auth_basic(void) { return (long)CURLAUTH_BASIC; }
