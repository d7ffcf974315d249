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
/* The progress callback (CURLOPT_XFERINFOFUNCTION), turned on; libcurl calls
 * it often while data moves and about once a second while it waits. */
typedef int (*guidance_curl_progress)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
static inline CURLcode guidance_curl_set_progress(CURL *handle, guidance_curl_progress value, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_XFERINFODATA, context);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    return code;
}
/* The socket for each address libcurl connects to (CURLOPT_OPENSOCKETFUNCTION):
 * the callback may refuse one by returning CURL_SOCKET_BAD. */
typedef curl_socket_t (*guidance_curl_opensocket)(void *, curlsocktype, struct curl_sockaddr *);
static inline CURLcode guidance_curl_set_opensocket(CURL *handle, guidance_curl_opensocket value, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, value);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, context);
    return code;
}
/* The connection's socket, or -1 when the handle holds none. */
static inline int guidance_curl_active_socket(CURL *handle) {
    curl_socket_t socket = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(handle, CURLINFO_ACTIVESOCKET, &socket) != CURLE_OK || socket == CURL_SOCKET_BAD) return -1;
    return (int)socket;
}
static inline CURLcode guidance_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}
