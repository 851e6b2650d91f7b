#include <curl/curl.h>

// curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic and cannot be called
// from Swift: one fixed-signature wrapper per argument type.
static inline CURLcode jr_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jr_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jr_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jr_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jr_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*jr_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode jr_easy_setopt_data_callback(CURL *h, CURLoption o, jr_data_callback v) { return curl_easy_setopt(h, o, v); }
typedef int (*jr_xferinfo_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
static inline CURLcode jr_easy_setopt_xferinfo_callback(CURL *h, jr_xferinfo_callback v) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v); }
static inline CURLcode jr_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jr_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jr_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jr_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode jr_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline curl_version_info_data *jr_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static inline long jr_curl_global_default(void) { return CURL_GLOBAL_DEFAULT; }

// --- Transport (CloudCore/Transport) ---
// Seek callback (rewinding an upload body when libcurl must resend it on a new connection).
typedef int (*jr_seek_callback)(void *, curl_off_t, int);
static inline CURLcode jr_easy_setopt_seek_callback(CURL *h, jr_seek_callback v) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, v); }
// CURLMsg.data is a union; read the result field without relying on how Swift imports it.
static inline CURLcode jr_multi_msg_result(const CURLMsg *m) { return m->data.result; }
static inline int jr_multi_msg_is_done(const CURLMsg *m) { return m->msg == CURLMSG_DONE; }
// Resume a transfer paused by CURL_WRITEFUNC_PAUSE / CURL_READFUNC_PAUSE (CURLPAUSE_CONT is a compound macro).
static inline CURLcode jr_easy_unpause(CURL *h) { return curl_easy_pause(h, CURLPAUSE_CONT); }
static inline size_t jr_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline size_t jr_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
