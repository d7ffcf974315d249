#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/*
 * rd_kafka_producev is variadic and its arguments are built with macros; Swift
 * can call neither. This shim produces one keyed message with headers and a
 * per-message opaque. On success librdkafka owns `headers`; on failure the
 * caller still does.
 */
static inline rd_kafka_resp_err_t guidance_kafka_produce(
    rd_kafka_t *rk, const char *topic,
    const void *key, size_t key_len,
    const void *value, size_t value_len,
    rd_kafka_headers_t *headers, void *opaque) {
    return rd_kafka_producev(
        rk,
        RD_KAFKA_V_TOPIC(topic),
        RD_KAFKA_V_KEY(key, key_len),
        RD_KAFKA_V_VALUE((void *)value, value_len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(opaque),
        RD_KAFKA_V_END);
}

/* rd_kafka_mock_push_request_errors is variadic; the array form takes a pointer. */
static inline void guidance_kafka_mock_push_errors(
    rd_kafka_mock_cluster_t *mcluster, int16_t api_key,
    size_t count, const rd_kafka_resp_err_t *errors) {
    rd_kafka_mock_push_request_errors_array(mcluster, api_key, count, errors);
}
