// The libcurl functions Cassette calls, each forwarding to the real one in libcurl opened on
// first use. Why not link libcurl: it pulls in about 35 shared libraries (OpenSSL, GnuTLS,
// Kerberos, LDAP, SSH, HTTP/2, IDN...). Linked, the dynamic loader maps and relocates all of them
// before main in every daemon, and their pages stay resident while it idles; opened here, only a
// daemon that talks to the network pays for them, once.
//
// Each definition repeats the prototype of curl's own header, which shim.h includes: the
// compiler refuses one that does not match. A function added to HTTPClient without a definition
// here fails the link with an undefined reference, not at run time.

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim.h"

// libcurl's ABI has been soname 4 since 7.16 (2006); the headers do not carry the number.
static const char soname[] = "libcurl.so.4";

static void *library;
static char load_error[512];
static int opened; // set once the attempt ended, successful or not
static CURLcode global_init_result = CURLE_FAILED_INIT;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

// curl_global_init is not thread-safe and must run before any other libcurl call; here it runs
// inside the pthread_once that opens the library, so no handle can exist before it did.
static void load_library(void) {
    library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot open %s: %s", soname, why ? why : "unknown error");
    } else {
        CURLcode (*global_init)(long) = (CURLcode(*)(long))dlsym(library, "curl_global_init");
        if (global_init == NULL) {
            snprintf(load_error, sizeof load_error, "%s has no curl_global_init", soname);
        } else if ((global_init_result = global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK) {
            snprintf(load_error, sizeof load_error, "curl_global_init failed: curl error %d", (int)global_init_result);
        }
    }
    __atomic_store_n(&opened, 1, __ATOMIC_RELEASE);
}

const char *cassette_curl_load(void) {
    pthread_once(&load_once, load_library);
    return load_error[0] ? load_error : NULL;
}

int cassette_curl_load_attempted(void) {
    return __atomic_load_n(&opened, __ATOMIC_ACQUIRE);
}

// Callers check cassette_curl_load first, so failing here is a bug or a damaged install.
static void *resolve(const char *name) {
    const char *error = cassette_curl_load();
    if (error != NULL) {
        fprintf(stderr, "cassette: %s called without libcurl: %s\n", name, error);
        abort();
    }
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        fprintf(stderr, "cassette: %s has no %s\n", soname, name);
        abort();
    }
    return symbol;
}

// The real function's address, resolved on the first call and cached (an atomic pointer: two
// threads resolving at once store the same value).
#define TARGET(type, name)                                                                \
    static __typeof__(type) cached;                                                       \
    __typeof__(type) target = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                 \
    if (target == NULL) {                                                                 \
        target = (type)resolve(#name);                                                    \
        __atomic_store_n(&cached, target, __ATOMIC_RELEASE);                              \
    }

// One forwarding definition. Hidden: the definitions serve this binary's own calls and never
// stand in for libcurl inside the libraries once opened. The name is parenthesised so that
// curl.h's function-like macros of the same name do not expand.
#define FORWARD(ret, name, params, args)                                                  \
    __attribute__((visibility("hidden"))) ret(name) params {                              \
        TARGET(ret(*) params, name)                                                       \
        return target args;                                                               \
    }

#define FORWARD_VOID(name, params, args)                                                  \
    __attribute__((visibility("hidden"))) void(name) params {                             \
        TARGET(void(*) params, name)                                                      \
        target args;                                                                      \
    }

// Global: the loader already ran curl_global_init when it opened the library (with
// CURL_GLOBAL_DEFAULT, what Cassette asks for); a later call answers that result instead of
// counting a second initialisation.
__attribute__((visibility("hidden"))) CURLcode(curl_global_init)(long flags) {
    (void)flags;
    return cassette_curl_load() == NULL ? CURLE_OK : global_init_result;
}
FORWARD(char *, curl_version, (void), ())
FORWARD(curl_version_info_data *, curl_version_info, (CURLversion stamp), (stamp))
FORWARD_VOID(curl_free, (void *p), (p))

// Easy handles
FORWARD(CURL *, curl_easy_init, (void), ())
FORWARD(CURLcode, curl_easy_perform, (CURL *curl), (curl))
FORWARD_VOID(curl_easy_cleanup, (CURL *curl), (curl))
FORWARD_VOID(curl_easy_reset, (CURL *curl), (curl))
FORWARD(CURLcode, curl_easy_pause, (CURL *handle, int bitmask), (handle, bitmask))
FORWARD(const char *, curl_easy_strerror, (CURLcode code), (code))

// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, and C cannot pass a
// `...` on (libcurl has no va_list variants). They are defined here rather than as one typed
// wrapper per argument kind that calls the real pointer, because one definition then serves
// every caller: shim.h's typed stand-ins for Swift, and any added later, keep calling the
// ordinary names. Each reads its one argument with the exact C type libcurl will read it with.
// For the setters the option number says which (curl.h's CURLOPTTYPE_* ranges, a stable part
// of the ABI, shared by CURLoption and CURLMoption; libcurl decodes its own argument the same
// way): long, object pointer, function pointer, curl_off_t, or a blob pointer. Every getinfo
// argument is a pointer to the result.
#define FORWARD_SETOPT(ret, name, handle_type, option_type)                               \
    __attribute__((visibility("hidden"))) ret(name)(handle_type handle, option_type option, ...) { \
        TARGET(ret(*)(handle_type, option_type, ...), name)                               \
        va_list ap;                                                                       \
        va_start(ap, option);                                                             \
        ret result;                                                                       \
        if (option < CURLOPTTYPE_OBJECTPOINT) {                                           \
            result = target(handle, option, va_arg(ap, long));                            \
        } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {                                  \
            result = target(handle, option, va_arg(ap, void *));                          \
        } else if (option < CURLOPTTYPE_OFF_T) {                                          \
            result = target(handle, option, va_arg(ap, void (*)(void)));                  \
        } else if (option < CURLOPTTYPE_BLOB) {                                           \
            result = target(handle, option, va_arg(ap, curl_off_t));                      \
        } else {                                                                          \
            result = target(handle, option, va_arg(ap, struct curl_blob *));              \
        }                                                                                 \
        va_end(ap);                                                                       \
        return result;                                                                    \
    }

FORWARD_SETOPT(CURLcode, curl_easy_setopt, CURL *, CURLoption)
FORWARD_SETOPT(CURLMcode, curl_multi_setopt, CURLM *, CURLMoption)

__attribute__((visibility("hidden"))) CURLcode(curl_easy_getinfo)(CURL *curl, CURLINFO info, ...) {
    TARGET(CURLcode(*)(CURL *, CURLINFO, ...), curl_easy_getinfo)
    va_list ap;
    va_start(ap, info);
    CURLcode result = target(curl, info, va_arg(ap, void *));
    va_end(ap);
    return result;
}

// Header lists
FORWARD(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *data), (list, data))
FORWARD_VOID(curl_slist_free_all, (struct curl_slist *list), (list))

// The URL parser
FORWARD(CURLU *, curl_url, (void), ())
FORWARD_VOID(curl_url_cleanup, (CURLU *handle), (handle))
FORWARD(CURLUcode, curl_url_get, (CURLU *handle, CURLUPart what, char **part, unsigned int flags),
        (handle, what, part, flags))
FORWARD(CURLUcode, curl_url_set, (CURLU *handle, CURLUPart what, const char *part, unsigned int flags),
        (handle, what, part, flags))

// Multi handles
FORWARD(CURLM *, curl_multi_init, (void), ())
FORWARD(CURLMcode, curl_multi_cleanup, (CURLM *multi_handle), (multi_handle))
FORWARD(CURLMcode, curl_multi_add_handle, (CURLM *multi_handle, CURL *curl_handle), (multi_handle, curl_handle))
FORWARD(CURLMcode, curl_multi_remove_handle, (CURLM *multi_handle, CURL *curl_handle), (multi_handle, curl_handle))
FORWARD(CURLMcode, curl_multi_perform, (CURLM *multi_handle, int *running_handles), (multi_handle, running_handles))
FORWARD(CURLMcode, curl_multi_poll,
        (CURLM *multi_handle, struct curl_waitfd extra_fds[], unsigned int extra_nfds, int timeout_ms, int *ret),
        (multi_handle, extra_fds, extra_nfds, timeout_ms, ret))
FORWARD(CURLMcode, curl_multi_wait,
        (CURLM *multi_handle, struct curl_waitfd extra_fds[], unsigned int extra_nfds, int timeout_ms, int *ret),
        (multi_handle, extra_fds, extra_nfds, timeout_ms, ret))
FORWARD(CURLMcode, curl_multi_wakeup, (CURLM *multi_handle), (multi_handle))
FORWARD(CURLMsg *, curl_multi_info_read, (CURLM *multi_handle, int *msgs_in_queue), (multi_handle, msgs_in_queue))
FORWARD(CURLMcode, curl_multi_timeout, (CURLM *multi_handle, long *milliseconds), (multi_handle, milliseconds))
FORWARD(const char *, curl_multi_strerror, (CURLMcode code), (code))

// Share handles (share.c). curl_share_setopt is variadic like curl_easy_setopt, but its
// options are not numbered by argument type: each is read as libcurl's share.c reads it (an
// int for the data kind, a function pointer for the lock callbacks, else an object pointer).
FORWARD(CURLSH *, curl_share_init, (void), ())
FORWARD(CURLSHcode, curl_share_cleanup, (CURLSH *share), (share))
FORWARD(const char *, curl_share_strerror, (CURLSHcode code), (code))

__attribute__((visibility("hidden"))) CURLSHcode(curl_share_setopt)(CURLSH *share, CURLSHoption option, ...) {
    TARGET(CURLSHcode(*)(CURLSH *, CURLSHoption, ...), curl_share_setopt)
    va_list ap;
    va_start(ap, option);
    CURLSHcode result;
    switch (option) {
    case CURLSHOPT_SHARE:
    case CURLSHOPT_UNSHARE:
        result = target(share, option, va_arg(ap, int));
        break;
    case CURLSHOPT_LOCKFUNC:
    case CURLSHOPT_UNLOCKFUNC:
        result = target(share, option, va_arg(ap, void (*)(void)));
        break;
    default:
        result = target(share, option, va_arg(ap, void *));
        break;
    }
    va_end(ap);
    return result;
}
