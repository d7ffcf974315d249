/*
 * The HTTP ceiling: libmicrohttpd answering "ok" to every request, with the
 * daemon flags and thread pool the services use. Built and run by
 * scripts/bench; usage: hello PORT
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*state == NULL) {
        *state = connection;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    static const char body[] = "{\"status\":\"ok\"}";
    struct MHD_Response *response = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, 200, response);
    MHD_destroy_response(response);
    return result;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: hello PORT\n"); return 2; }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, NULL);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)atoi(argv[1]), NULL, NULL, answer, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
    if (!daemon) { perror("MHD_start_daemon"); return 1; }
    int received;
    sigwait(&signals, &received);  /* blocked before any thread started, so it comes here */
    MHD_stop_daemon(daemon);
    return 0;
}
