#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/*
 * Decodes %HH escapes in paths and query values in place, except %00: the
 * values reach the server as C strings, and a decoded NUL would cut them
 * short ("12%00abc" read as "12"). Left as the three characters "%00", it
 * makes the value invalid where a number, date or id is expected.
 */
static size_t guidance_mhd_unescape(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    char *read = text, *write = text;
    while (*read) {
        if (read[0] == '%' && read[1] && read[2]) {
            int high = read[1], low = read[2], value = 0, ok = 1;
            for (int i = 0; i < 2; i++) {
                int c = i == 0 ? high : low, digit;
                if (c >= '0' && c <= '9') digit = c - '0';
                else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
                else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
                else { ok = 0; break; }
                value = value * 16 + digit;
            }
            if (ok && value != 0) {
                *write++ = (char)value;
                read += 3;
                continue;
            }
        }
        *write++ = *read++;
    }
    *write = 0;
    return (size_t)(write - text);
}

/*
 * MHD_start_daemon is variadic. This shim passes the options we always set,
 * so every limit is explicit (the library defaults are unfit for production).
 * `bind_address` may be NULL for all interfaces.
 */
static inline struct MHD_Daemon *guidance_mhd_start(
    uint16_t port, const struct sockaddr_in *bind_address,
    unsigned int threads, unsigned int connection_limit,
    unsigned int per_ip_limit, unsigned int timeout_seconds,
    size_t connection_memory, unsigned int backlog,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_NotifyConnectionCallback notify, void *notify_context) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_THREAD_POOL_SIZE, threads, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, backlog, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_context},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_context},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)guidance_mhd_unescape, NULL},
        {bind_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)bind_address},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

static inline uint16_t guidance_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The connection's socket, so that a connection too slow to send its request
 * can be shut down from another thread (shutdown(2), never close(2): the
 * descriptor stays libmicrohttpd's to close). -1 when unknown. */
static inline int guidance_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* The peer's address as text ("127.0.0.1", "::1") into `out`; 0 when unknown. */
static inline int guidance_mhd_client_address(struct MHD_Connection *connection, char *out, socklen_t size) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return 0;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, out, size) != NULL;
    if (address->sa_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, out, size) != NULL;
    return 0;
}
