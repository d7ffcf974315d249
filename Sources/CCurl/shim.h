#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic; Swift calls these. */
typedef size_t (*guidance_curl_callback)(char *, size_t, size_t, void *);

static inline CURLcode guidance_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guidance_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guidance_curl_set_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guidance_curl_set_callback(CURL *handle, CURLoption option, guidance_curl_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guidance_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}
