/*
 * The ingest floor: the bare work of an ingest request and nothing else.
 * libmicrohttpd reads the body, the connection is suspended,
 * rd_kafka_producev sends the body (idempotent, acks=all, linger 1 ms), and
 * the delivery report resumes the connection, which answers 202. No
 * validation, no authentication, no logging. Built and run by scripts/bench;
 * usage: floor PORT BOOTSTRAP TOPIC
 */
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct exchange {
    struct MHD_Connection *connection;
    char body[16384];
    size_t length;
    int sent;                  /* produced, connection suspended */
    atomic_int status;         /* 0 until the report: 202 or 503 */
};

static rd_kafka_t *producer;
static const char *topic;
static atomic_int running = 1;

static void delivered(rd_kafka_t *rk, const rd_kafka_message_t *message, void *opaque) {
    (void)rk; (void)opaque;
    struct exchange *exchange = message->_private;
    atomic_store(&exchange->status, message->err ? 503 : 202);
    MHD_resume_connection(exchange->connection);
}

static void *poll_loop(void *unused) {
    (void)unused;
    while (atomic_load(&running)) rd_kafka_poll(producer, 50);
    return NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
    (void)cls; (void)url; (void)method; (void)version;
    struct exchange *exchange = *state;
    if (!exchange) {
        exchange = calloc(1, sizeof *exchange);
        exchange->connection = connection;
        *state = exchange;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t room = sizeof exchange->body - exchange->length;
        size_t take = *upload_data_size < room ? *upload_data_size : room;
        memcpy(exchange->body + exchange->length, upload_data, take);
        exchange->length += take;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!exchange->sent) {
        exchange->sent = 1;
        MHD_suspend_connection(connection);
        rd_kafka_resp_err_t error = rd_kafka_producev(
            producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(url, strlen(url)),
            RD_KAFKA_V_VALUE(exchange->body, exchange->length), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_OPAQUE(exchange), RD_KAFKA_V_END);
        if (error) {
            atomic_store(&exchange->status, 503);
            MHD_resume_connection(connection);
        }
        return MHD_YES;
    }
    static const char body[] = "{\"accepted\":true}";
    struct MHD_Response *response = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, (unsigned int)atomic_load(&exchange->status), response);
    MHD_destroy_response(response);
    return result;
}

static void completed(void *cls, struct MHD_Connection *connection, void **state, enum MHD_RequestTerminationCode code) {
    (void)cls; (void)connection; (void)code;
    free(*state);
    *state = NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: floor PORT BOOTSTRAP TOPIC\n"); return 2; }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, NULL);
    topic = argv[3];
    char error[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *settings[][2] = {
        {"bootstrap.servers", argv[2]}, {"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "1"},
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        if (rd_kafka_conf_set(conf, settings[i][0], settings[i][1], error, sizeof error) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s\n", error);
            return 1;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, delivered);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
    if (!producer) { fprintf(stderr, "%s\n", error); return 1; }
    pthread_t poller;
    pthread_create(&poller, NULL, poll_loop, NULL);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, (uint16_t)atoi(argv[1]), NULL, NULL,
        answer, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!daemon) { perror("MHD_start_daemon"); return 1; }
    int received;
    sigwait(&signals, &received);  /* blocked before any thread started, so it comes here */
    MHD_stop_daemon(daemon);
    rd_kafka_flush(producer, 5000);
    atomic_store(&running, 0);
    pthread_join(poller, NULL);
    rd_kafka_destroy(producer);
    return 0;
}
