/* An equal-work anchor for guidance-ingest's hot path: POST /v1/schools/{schoolId}/guidances done in C with the
 * same per-request work as the Swift service (Sources/Ingest, Guidance, ServiceSupport, HTTP, Kafka, Common),
 * no less and no more:
 *   libmicrohttpd, same flags and limits as HTTPServer (epoll thread pool, suspend/resume, 16 KiB body cap,
 *   header/URI limits, receive-timeout reaper); header collection and the Exchange's early checks; the Router's
 *   segment match (404/405); AccessPolicy (Bearer or session cookie, Origin, SHA-256 via EVP_Digest, bucketed
 *   constant-time look-up, school and role); strict JSON (RFC 8259, no trailing commas, no duplicate keys, valid
 *   UTF-8) and the typed RegisterRequest read; the Registration rules; the event written field by field like
 *   JSONWriter; an idempotent acks=all producer with Swift's settings, its awaiting-queue deadline and polling
 *   thread; 202 with the same body and headers from the delivery report; the info log line ("guidance
 *   registered") with one write(2); request ids; per-status counters and the latency histogram.
 * Answers other than the 202 are queued inline instead of through a suspended task (see report); routes other
 * than the POST, /healthz and /metrics answer 501.
 * Copied from ../shared/bench (the workplace's yardstick) into the repository; changed here only to read roles
 * joined by '+' (homeroom+gate), as the roster now allows, checked as a set like Teacher.hasAny.
 * usage: c_ingest_full PORT BOOTSTRAP ROSTER_DIR [TOPIC]   (LOG_LEVEL=debug|info|warning|error, default info)
 * build: gcc -O2 -Wall c_ingest_full.c -o c_ingest_full $(pkg-config --cflags --libs libmicrohttpd rdkafka libcrypto) -lpthread */
#define _GNU_SOURCE
#include <microhttpd.h>
#include <librdkafka/rdkafka.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ small utilities */
static void *xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) abort(); return p; }
static void *xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) abort(); return p; }
static char *xstrndup(const char *s, size_t n) { char *p = xmalloc(n + 1); memcpy(p, s, n); p[n] = 0; return p; }
static char *sfmt(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) abort();
  va_end(ap); return s;
}

typedef struct { char *p; size_t n, cap; } Buf;
static void buf_grow(Buf *b, size_t extra) {
  if (b->n + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 128;
  while (cap < b->n + extra + 1) cap *= 2;
  b->p = xrealloc(b->p, cap); b->cap = cap;
}
static void buf_add(Buf *b, const void *s, size_t n) { buf_grow(b, n); memcpy(b->p + b->n, s, n); b->n += n; b->p[b->n] = 0; }
static void buf_adds(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }
static void buf_addc(Buf *b, char c) { buf_grow(b, 1); b->p[b->n++] = c; b->p[b->n] = 0; }
static void buf_addi(Buf *b, long long v) {
  char t[24]; int k = 24; unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do { t[--k] = (char)('0' + u % 10); u /= 10; } while (u);
  if (v < 0) t[--k] = '-';
  buf_add(b, t + k, 24 - k);
}
static void buf_free(Buf *b) { free(b->p); b->p = NULL; b->n = b->cap = 0; }
static const char HEX[] = "0123456789abcdef";

/* JSONWriter.append(quoted:): quotes, backslashes and C0 controls escaped; everything else as is. */
static void buf_addq(Buf *b, const char *s, size_t n) {
  buf_grow(b, n + 2);
  buf_addc(b, '"');
  size_t plain = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    buf_add(b, s + plain, i - plain);
    plain = i + 1;
    switch (c) {
    case '"': buf_add(b, "\\\"", 2); break;
    case '\\': buf_add(b, "\\\\", 2); break;
    case '\n': buf_add(b, "\\n", 2); break;
    case '\r': buf_add(b, "\\r", 2); break;
    case '\t': buf_add(b, "\\t", 2); break;
    default: { char u[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]}; buf_add(b, u, 6); }
    }
  }
  buf_add(b, s + plain, n - plain);
  buf_addc(b, '"');
}
static void buf_addqs(Buf *b, const char *s) { buf_addq(b, s, strlen(s)); }

/* Per-request bump allocator: headers, the JSON tree, decoded strings. */
typedef struct Chunk { struct Chunk *next; size_t used, cap; char data[]; } Chunk;
typedef struct { Chunk *head; } Arena;
static void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->used + n > c->cap) {
    size_t cap = n > 4096 ? n : 4096;
    c = xmalloc(sizeof *c + cap); c->next = a->head; c->used = 0; c->cap = cap; a->head = c;
  }
  void *p = c->data + c->used; c->used += n; return p;
}
static void arena_free(Arena *a) { for (Chunk *c = a->head, *n; c; c = n) { n = c->next; free(c); } a->head = NULL; }
static char *arena_dup(Arena *a, const char *s, size_t n) { char *p = arena_alloc(a, n + 1); memcpy(p, s, n); p[n] = 0; return p; }

/* ------------------------------------------------------------------ Unicode (String+Text.swift) */
static bool utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t need; unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else return false;
    if (i + need >= n) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (size_t k = 2; k <= need; k++) if ((s[i + k] & 0xC0) != 0x80) return false;
    i += need + 1;
  }
  return true;
}
/* The scalar at *i, advancing; an ill-formed byte reads as U+FFFD (as Swift's repairing decode does). */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *i) {
  unsigned char c = s[*i];
  size_t need = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 9;
  if (need == 0) { (*i)++; return c; }
  if (need == 9 || *i + need >= n || !utf8_valid(s + *i, need + 1)) { (*i)++; return 0xFFFD; }
  uint32_t v = c & (need == 1 ? 0x1F : need == 2 ? 0x0F : 0x07);
  for (size_t k = 1; k <= need; k++) v = v << 6 | (s[*i + k] & 0x3F);
  *i += need + 1;
  return v;
}
static size_t utf8_put(uint32_t v, char *o) {
  if (v < 0x80) { o[0] = (char)v; return 1; }
  if (v < 0x800) { o[0] = (char)(0xC0 | v >> 6); o[1] = (char)(0x80 | (v & 0x3F)); return 2; }
  if (v < 0x10000) { o[0] = (char)(0xE0 | v >> 12); o[1] = (char)(0x80 | (v >> 6 & 0x3F)); o[2] = (char)(0x80 | (v & 0x3F)); return 3; }
  o[0] = (char)(0xF0 | v >> 18); o[1] = (char)(0x80 | (v >> 12 & 0x3F)); o[2] = (char)(0x80 | (v >> 6 & 0x3F));
  o[3] = (char)(0x80 | (v & 0x3F)); return 4;
}
/* Unicode White_Space. */
static bool is_ws(uint32_t c) {
  return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
/* trimmingWhitespace(): printable ASCII at both ends needs no look-up. */
static void trim_ws(const char *text, size_t n, size_t *off, size_t *len) {
  const unsigned char *s = (const unsigned char *)text;
  if (n && s[0] > 0x20 && s[0] < 0x7F && s[n - 1] > 0x20 && s[n - 1] < 0x7F) { *off = 0; *len = n; return; }
  size_t a = 0;
  while (a < n) { size_t k = a; if (!is_ws(utf8_next(s, n, &k))) break; a = k; }
  if (a == n) { *off = 0; *len = 0; return; }
  size_t e = n;
  while (e > a) {
    size_t j = e - 1;
    while (j > a && (s[j] & 0xC0) == 0x80 && e - j < 4) j--;
    size_t k = j;
    if (!is_ws(utf8_next(s, n, &k))) break;
    e = j;
  }
  *off = a; *len = e - a;
}

/* ------------------------------------------------------------------ time (Timestamp.swift) */
static double floor_d(double x) { double t = (double)(long long)x; return t > x ? t - 1 : t; }
static double now_seconds(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return (double)t.tv_sec + (double)t.tv_nsec / 1e9; }
static uint64_t mono_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec; }
static long days_in(long month, long year) {
  if (month == 2) return ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0) ? 29 : 28;
  if (month == 4 || month == 6 || month == 9 || month == 11) return 30;
  return 31;
}
static long days_from_civil(long year, long month, long day) {
  long y = month <= 2 ? year - 1 : year;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
static void civil_from_days(long days, long *year, long *month, long *day) {
  long z = days + 719468;
  long era = (z >= 0 ? z : z - 146096) / 146097;
  long doe = z - era * 146097;
  long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  long mp = (5 * doy + 2) / 153;
  *day = doy - (153 * mp + 2) / 5 + 1;
  *month = mp < 10 ? mp + 3 : mp - 9;
  *year = yoe + era * 400 + (*month <= 2 ? 1 : 0);
}
static bool ts_digits(const unsigned char *b, size_t n, size_t start, size_t count, long *out) {
  if (start + count > n) return false;
  long v = 0;
  for (size_t i = start; i < start + count; i++) { if (b[i] < 48 || b[i] > 57) return false; v = v * 10 + (b[i] - 48); }
  *out = v; return true;
}
/* Timestamp.parse: RFC 3339 with an offset, or false. */
static bool ts_parse(const char *text, size_t n, double *out) {
  const unsigned char *b = (const unsigned char *)text;
  long year, month, day, hour, minute, second;
  if (!(n >= 20 && ts_digits(b, n, 0, 4, &year) && b[4] == 45 && ts_digits(b, n, 5, 2, &month) && b[7] == 45 &&
        ts_digits(b, n, 8, 2, &day) && (b[10] == 84 || b[10] == 116) && ts_digits(b, n, 11, 2, &hour) && b[13] == 58 &&
        ts_digits(b, n, 14, 2, &minute) && b[16] == 58 && ts_digits(b, n, 17, 2, &second) && month >= 1 && month <= 12 &&
        day >= 1 && day <= days_in(month, year) && hour < 24 && minute < 60 && second < 61))
    return false;
  size_t index = 19;
  double fraction = 0.0;
  if (b[index] == 46) {
    index += 1;
    double scale = 0.1;
    size_t start = index;
    while (index < n && b[index] >= 48 && b[index] <= 57) { fraction += (double)(b[index] - 48) * scale; scale /= 10; index += 1; }
    if (index <= start) return false;
  }
  if (index >= n) return false;
  long offset = 0;
  switch (b[index]) {
  case 90: case 122: index += 1; break;
  case 43: case 45: {
    long oh, om;
    if (!(ts_digits(b, n, index + 1, 2, &oh) && index + 3 < n && b[index + 3] == 58 && ts_digits(b, n, index + 4, 2, &om) &&
          oh < 24 && om < 60))
      return false;
    offset = (oh * 60 + om) * 60 * (b[index] == 45 ? -1 : 1);
    index += 6;
    break;
  }
  default: return false;
  }
  if (index != n) return false;
  long days = days_from_civil(year, month, day);
  *out = (double)(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction;
  return true;
}
static void ts_digits_out(Buf *b, long long value, int width) {
  if (value < 0) { buf_addc(b, '-'); ts_digits_out(b, -value, width); return; }
  int digits = 1; long long rest = value / 10;
  while (rest > 0) { digits++; rest /= 10; }
  for (int i = digits; i < width; i++) buf_addc(b, '0');
  buf_addi(b, value);
}
/* Timestamp.format: UTC, whole milliseconds when there are any. */
static void ts_format(double seconds, Buf *b) {
  long long ms = (long long)floor_d(seconds * 1000);
  long long whole = (long long)floor_d((double)ms / 1000);
  long long millis = ms - whole * 1000;
  long long days = (long long)floor_d((double)whole / 86400);
  long long sod = whole - days * 86400;
  long y, m, d;
  civil_from_days((long)days, &y, &m, &d);
  ts_digits_out(b, y, 4); buf_addc(b, '-'); ts_digits_out(b, m, 2); buf_addc(b, '-'); ts_digits_out(b, d, 2);
  buf_addc(b, 'T'); ts_digits_out(b, sod / 3600, 2); buf_addc(b, ':'); ts_digits_out(b, sod % 3600 / 60, 2);
  buf_addc(b, ':'); ts_digits_out(b, sod % 60, 2);
  if (millis > 0) { buf_addc(b, '.'); ts_digits_out(b, millis, 3); }
  buf_addc(b, 'Z');
}

/* ------------------------------------------------------------------ RandomID.swift */
/* SystemRandomNumberGenerator.next() asks getrandom(2) for 8 bytes per call; a UUID takes two. */
static uint64_t rnd64(void) { uint64_t v; while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {} return v; }
static void uuid_v4(char out[37]) {
  uint64_t w[2];
  w[0] = (rnd64() & ~0xF000ULL) | 0x4000ULL;
  w[1] = (rnd64() & ~(3ULL << 62)) | (2ULL << 62);
  int k = 0;
  for (int index = 0; index < 2; index++)
    for (int nibble = 15; nibble >= 0; nibble--) {
      int position = index * 16 + (15 - nibble);
      if (position == 8 || position == 12 || position == 16 || position == 20) out[k++] = '-';
      out[k++] = HEX[(w[index] >> (nibble * 4)) & 0xF];
    }
  out[k] = 0;
}
static bool is_uuid(const char *s, size_t n) {
  if (n != 36) return false;
  for (size_t i = 0; i < 36; i++) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) { if (c != '-') return false; }
    else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

/* ------------------------------------------------------------------ hash tables */
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
  return h ^ (h >> 29);
}
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL; x ^= x >> 27; x *= 0x94d049bb133111ebULL; x ^= x >> 31; return x;
}
#define EMPTY UINT32_MAX
/* Strings → index. */
typedef struct { uint32_t *slot; size_t mask; const char *const *keys; const size_t *lens; } StrMap;
/* uint64 → index. */
typedef struct { uint64_t *key; uint32_t *slot; size_t mask; } U64Map;
static size_t pow2_above(size_t n) { size_t c = 16; while (c < n * 2) c *= 2; return c; }
static void strmap_init(StrMap *m, size_t n, const char *const *keys, const size_t *lens) {
  size_t cap = pow2_above(n); m->slot = xmalloc(cap * sizeof *m->slot); m->mask = cap - 1;
  for (size_t i = 0; i < cap; i++) m->slot[i] = EMPTY;
  m->keys = keys; m->lens = lens;
}
static int strmap_get(const StrMap *m, const char *k, size_t n) {
  for (size_t i = hash_bytes(k, n) & m->mask;; i = (i + 1) & m->mask) {
    uint32_t s = m->slot[i];
    if (s == EMPTY) return -1;
    if (m->lens[s] == n && memcmp(m->keys[s], k, n) == 0) return (int)s;
  }
}
static void strmap_put(StrMap *m, uint32_t index) {
  for (size_t i = hash_bytes(m->keys[index], m->lens[index]) & m->mask;; i = (i + 1) & m->mask)
    if (m->slot[i] == EMPTY) { m->slot[i] = index; return; }
}
static void u64map_init(U64Map *m, size_t n) {
  size_t cap = pow2_above(n); m->key = xmalloc(cap * sizeof *m->key); m->slot = xmalloc(cap * sizeof *m->slot);
  m->mask = cap - 1; for (size_t i = 0; i < cap; i++) m->slot[i] = EMPTY;
}
static uint32_t *u64map_ref(U64Map *m, uint64_t k, bool insert) {
  for (size_t i = mix64(k) & m->mask;; i = (i + 1) & m->mask) {
    if (m->slot[i] == EMPTY) { if (!insert) return NULL; m->key[i] = k; return &m->slot[i]; }
    if (m->key[i] == k) return &m->slot[i];
  }
}

/* ------------------------------------------------------------------ logging (Logger.swift) */
enum { L_DEBUG, L_INFO, L_WARNING, L_ERROR };
static const char *const LEVEL_NAME[] = {"debug", "info", "warning", "error"};
static int log_min = L_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct { const char *k; const char *v; size_t vn; } KV;
static void log_ts(Buf *b) {
  struct timespec spec; clock_gettime(CLOCK_REALTIME, &spec);
  struct tm parts; time_t secs = spec.tv_sec; gmtime_r(&secs, &parts);
  char t[32];
  int n = snprintf(t, sizeof t, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                   parts.tm_hour, parts.tm_min, parts.tm_sec, (int)(spec.tv_nsec / 1000000));
  buf_add(b, t, (size_t)n);
}
/* One JSON object per line, keys after the leading four sorted, one write(2) under a lock. */
static void log_kv(int level, const char *msg, KV *kv, int n) {
  if (level < log_min) return;
  for (int i = 1; i < n; i++) for (int j = i; j > 0 && strcmp(kv[j - 1].k, kv[j].k) > 0; j--) { KV t = kv[j]; kv[j] = kv[j - 1]; kv[j - 1] = t; }
  Buf b = {0};
  buf_grow(&b, 384);
  buf_adds(&b, "{\"ts\":\"");
  log_ts(&b);
  buf_adds(&b, "\",\"level\":\""); buf_adds(&b, LEVEL_NAME[level]);
  buf_adds(&b, "\",\"component\":"); buf_addqs(&b, "ingest");
  buf_adds(&b, ",\"msg\":"); buf_addqs(&b, msg);
  for (int i = 0; i < n; i++) {
    if (!strcmp(kv[i].k, "ts") || !strcmp(kv[i].k, "level") || !strcmp(kv[i].k, "component") || !strcmp(kv[i].k, "msg")) continue;
    buf_addc(&b, ','); buf_addqs(&b, kv[i].k); buf_addc(&b, ':'); buf_addq(&b, kv[i].v, kv[i].vn);
  }
  buf_adds(&b, "}\n");
  pthread_mutex_lock(&log_lock);
  size_t off = 0;
  while (off < b.n) {
    ssize_t w = write(2, b.p + off, b.n - off);
    if (w > 0) off += (size_t)w; else if (w < 0 && errno == EINTR) continue; else break;
  }
  pthread_mutex_unlock(&log_lock);
  buf_free(&b);
}
#define KVS(key, value) {key, value, strlen(value)}

/* ------------------------------------------------------------------ metrics (Metrics.swift, recordHTTP) */
static const double BOUNDS[] = {0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
                                0.05,   0.075, 0.1,   0.15,  0.25,  0.5,    1,    2.5,   5,    10};
#define NB (sizeof BOUNDS / sizeof BOUNDS[0])
#define NROUTES 12
static const char *const METHODS[] = {"GET", "POST", "DELETE", "HEAD", "other"};
static _Atomic unsigned long long http_total[NROUTES + 1][5][600];
static _Atomic unsigned long long http_bucket[NROUTES + 1][NB + 1];
static _Atomic unsigned long long http_sum_ns[NROUTES + 1];
enum { PE_TIMEOUT, PE_UNAVAILABLE, PE_QUEUE_FULL, PE_FAILED, PE_SHUTDOWN, PE_TOO_LARGE, PE_UNKNOWN_TOPIC, PE_BROKER, PE_N };
static const char *const PE_NAME[] = {"deliveryTimedOut", "brokerUnavailable", "queueFull", "producerFailed", "shuttingDown",
                                      "messageTooLarge", "unknownTopic", "broker"};
static _Atomic unsigned long long produce_errors[PE_N];
static int method_index(const char *m) {
  return !strcmp(m, "GET") ? 0 : !strcmp(m, "POST") ? 1 : !strcmp(m, "DELETE") ? 2 : !strcmp(m, "HEAD") ? 3 : 4;
}
static void record_http(int route, const char *method, int status, uint64_t ns) {
  int r = route + 1, s = status < 0 || status > 599 ? 0 : status;
  atomic_fetch_add_explicit(&http_total[r][method_index(method)][s], 1, memory_order_relaxed);
  double seconds = (double)ns / 1e9;
  size_t i = 0;
  while (i < NB && seconds > BOUNDS[i]) i++;
  atomic_fetch_add_explicit(&http_bucket[r][i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&http_sum_ns[r], ns, memory_order_relaxed);
}

/* ------------------------------------------------------------------ roster (Roster*.swift, CSV.swift) */
typedef struct { char *code, *label; size_t coden; bool requires; } ReasonDef;
typedef struct { char *id; size_t idn; ReasonDef reasons[64]; int nreasons; char *order; } School;
typedef struct { char *id, *name; size_t idn, namen; } StudentRec;
enum { R_HOMEROOM, R_VOLUNTEER, R_GATE, R_ADMIN };
static const char *const ROLE_NAME[] = {"homeroom", "volunteer_duty", "gate", "admin"};
typedef struct { char *id; size_t idn; int school; int roles; /* a bit per role: 1 << R_… */ } TeacherRec;
typedef struct { unsigned char digest[32]; int teacher; int next; } TokenRec;
typedef struct {
  School *schools; int nschools; const char **school_keys; size_t *school_lens; StrMap school_map;
  StudentRec *students; size_t nstudents; U64Map seats;
  TeacherRec *teachers; int nteachers; const char **teacher_keys; size_t *teacher_lens; StrMap teacher_map;
  TokenRec *tokens; int ntokens; U64Map token_buckets;
  bool auth;
} Roster;
static _Atomic(Roster *) g_roster;

typedef struct { char **f; size_t *len; size_t n, cap; int line; } Row;
typedef struct { Row *rows; size_t n, cap; } Table;
static void die(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); fprintf(stderr, "c_ingest_full: "); vfprintf(stderr, fmt, ap); fprintf(stderr, "\n"); va_end(ap);
  exit(1);
}
static void row_add(Row *r, Buf *field) {
  if (!utf8_valid((unsigned char *)(field->p ? field->p : ""), field->n)) die("line %d: not valid UTF-8", r->line);
  if (r->n == r->cap) { r->cap = r->cap ? r->cap * 2 : 8; r->f = xrealloc(r->f, r->cap * sizeof *r->f); r->len = xrealloc(r->len, r->cap * sizeof *r->len); }
  size_t off, len; trim_ws(field->p ? field->p : "", field->n, &off, &len);
  r->f[r->n] = xstrndup(field->p ? field->p + off : "", len); r->len[r->n] = len; r->n++;
  field->n = 0;
}
/* RFC 4180 as CSV.swift reads it: quoted fields, "" escapes, CR/LF/CRLF, optional BOM, blank lines skipped. */
static bool read_csv(const char *dir, const char *name, Table *t) {
  char path[4096]; snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  Buf data = {0}; char chunk[65536]; size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&data, chunk, k);
  fclose(f);
  memset(t, 0, sizeof *t);
  Buf field = {0}; Row row = {0}; row.line = 1;
  bool in_quotes = false, was_quoted = false, quote_pending = false, cr_pending = false;
  int line = 1;
  size_t i = data.n >= 3 && (unsigned char)data.p[0] == 0xEF && (unsigned char)data.p[1] == 0xBB && (unsigned char)data.p[2] == 0xBF ? 3 : 0;
  for (; i <= data.n; i++) {
    bool end = i == data.n;
    unsigned char c = end ? '\n' : (unsigned char)data.p[i];
    if (end) {
      if (quote_pending) { quote_pending = false; in_quotes = false; }
      if (in_quotes) die("%s:%d: a quoted field is never closed", name, row.line);
      if (!(field.n || row.n || was_quoted)) break;
    }
    if (cr_pending) { cr_pending = false; if (c == '\n' && !end) continue; }
    if (quote_pending) { quote_pending = false; if (c == '"') { buf_addc(&field, '"'); continue; } in_quotes = false; }
    if (in_quotes) { if (c == '"') quote_pending = true; else { if (c == '\n') line++; buf_addc(&field, (char)c); } continue; }
    if (c == ',') { row_add(&row, &field); was_quoted = false; }
    else if (c == '"') {
      if (field.n || was_quoted) die("%s:%d: a quote inside an unquoted field", name, line);
      in_quotes = true; was_quoted = true;
    } else if (c == '\r' || c == '\n') {
      cr_pending = c == '\r';
      bool blank = row.n == 0 && field.n == 0 && !was_quoted;
      row_add(&row, &field); was_quoted = false;
      if (!blank) {
        if (t->n == t->cap) { t->cap = t->cap ? t->cap * 2 : 64; t->rows = xrealloc(t->rows, t->cap * sizeof *t->rows); }
        t->rows[t->n++] = row;
        memset(&row, 0, sizeof row);
      } else { for (size_t j = 0; j < row.n; j++) free(row.f[j]); row.n = 0; }
      line++; row.line = line;
      if (end) break;
    } else {
      if (was_quoted) die("%s:%d: text after a closing quote", name, line);
      buf_addc(&field, (char)c);
    }
  }
  buf_free(&data); buf_free(&field); free(row.f); free(row.len);
  return true;
}
/* Column index by header name (trimmed, lowercased); every row as wide as the header. */
static int column(const Table *t, const char *file, const char *name, bool required) {
  if (!t->n) die("%s: no header row", file);
  for (size_t i = 0; i < t->rows[0].n; i++) {
    char *h = t->rows[0].f[i]; size_t n = t->rows[0].len[i];
    if (strlen(name) == n && !strncasecmp(h, name, n)) return (int)i;
  }
  if (required) die("%s:%d: missing column '%s'", file, t->rows[0].line, name);
  return -1;
}
static void check_width(const Table *t, const char *file) {
  for (size_t r = 1; r < t->n; r++)
    if (t->rows[r].n != t->rows[0].n) die("%s:%d: %zu fields, the header has %zu", file, t->rows[r].line, t->rows[r].n, t->rows[0].n);
}
static const char *cell(const Table *t, size_t r, int col, size_t *n) {
  if (col < 0) { *n = 0; return ""; }
  *n = t->rows[r].len[col]; return t->rows[r].f[col];
}
static const char *nonempty(const Table *t, const char *file, size_t r, int col, const char *name, size_t *n) {
  const char *v = cell(t, r, col, n);
  if (!*n) die("%s:%d: %s is empty", file, t->rows[r].line, name);
  return v;
}
static const char *identifier(const Table *t, const char *file, size_t r, int col, const char *name, size_t *n) {
  const char *v = nonempty(t, file, r, col, name, n);
  for (size_t i = 0; i < *n;) {
    if (v[i] == '/') die("%s:%d: %s '%s' must not contain '/' or spaces", file, t->rows[r].line, name, v);
    if (is_ws(utf8_next((const unsigned char *)v, *n, &i))) die("%s:%d: %s '%s' must not contain '/' or spaces", file, t->rows[r].line, name, v);
  }
  return v;
}
static long positive(const Table *t, const char *file, size_t r, int col, const char *name) {
  size_t n; const char *v = cell(t, r, col, &n);
  char *endp; errno = 0; long x = n ? strtol(v, &endp, 10) : 0;
  if (!n || *endp || errno || x <= 0) die("%s:%d: %s '%s' is not a positive whole number", file, t->rows[r].line, name, v);
  return x;
}
static const ReasonDef DEFAULT_REASONS[] = {
    {"wrongClothes", "복장 불량", 12, false}, {"noShoes", "실내화 없음", 7, false},
    {"trespassing", "무단횡단", 11, false},    {"others", "기타", 6, true}};

static Roster *load_roster(const char *dir) {
  Roster *ro = calloc(1, sizeof *ro);
  Table reasons = {0}, schools, students, teachers, tokens;
  bool have_reasons = read_csv(dir, "reasons.csv", &reasons);
  if (!read_csv(dir, "schools.csv", &schools)) die("ROSTER_DIR: '%s' has no schools.csv", dir);
  if (!read_csv(dir, "students.csv", &students)) die("students.csv: missing");
  if (!read_csv(dir, "teachers.csv", &teachers)) die("teachers.csv: missing");
  ro->auth = read_csv(dir, "tokens.csv", &tokens);
  size_t n;
  /* schools, each with the default catalogue and its own reasons */
  int sid = column(&schools, "schools.csv", "school_id", true), sname = column(&schools, "schools.csv", "name", true);
  int stz = column(&schools, "schools.csv", "timezone", true), sdt = column(&schools, "schools.csv", "digest_time", true);
  check_width(&schools, "schools.csv");
  ro->nschools = (int)schools.n - 1;
  ro->schools = calloc((size_t)ro->nschools + 1, sizeof *ro->schools);
  ro->school_keys = calloc((size_t)ro->nschools + 1, sizeof(char *)); ro->school_lens = calloc((size_t)ro->nschools + 1, sizeof(size_t));
  strmap_init(&ro->school_map, (size_t)ro->nschools, ro->school_keys, ro->school_lens);
  for (int i = 0; i < ro->nschools; i++) {
    School *s = &ro->schools[i];
    nonempty(&schools, "schools.csv", (size_t)i + 1, stz, "timezone", &n);
    nonempty(&schools, "schools.csv", (size_t)i + 1, sdt, "digest_time", &n);
    nonempty(&schools, "schools.csv", (size_t)i + 1, sname, "name", &n);
    const char *id = identifier(&schools, "schools.csv", (size_t)i + 1, sid, "school_id", &n);
    if (strmap_get(&ro->school_map, id, n) >= 0) die("schools.csv: school '%s' is listed twice", id);
    s->id = xstrndup(id, n); s->idn = n;
    ro->school_keys[i] = s->id; ro->school_lens[i] = n;
    strmap_put(&ro->school_map, (uint32_t)i);
    for (int k = 0; k < 4; k++) s->reasons[s->nreasons++] = DEFAULT_REASONS[k];
  }
  if (have_reasons) {
    int rs = column(&reasons, "reasons.csv", "school_id", true), rc = column(&reasons, "reasons.csv", "code", true);
    int rl = column(&reasons, "reasons.csv", "label", true), rr = column(&reasons, "reasons.csv", "requires_detail", true);
    check_width(&reasons, "reasons.csv");
    for (size_t r = 1; r < reasons.n; r++) {
      size_t cn, ln, sn, bn;
      const char *code = nonempty(&reasons, "reasons.csv", r, rc, "code", &cn);
      for (size_t j = 0; j < cn; j++) {
        unsigned char c = (unsigned char)code[j];
        if (!(c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-'))
          die("reasons.csv:%d: code '%s' may hold only letters, digits, '_' and '-'", reasons.rows[r].line, code);
      }
      const char *b = cell(&reasons, r, rr, &bn);
      bool requires = !strcasecmp(b, "true") || !strcasecmp(b, "yes") || !strcmp(b, "1");
      if (!requires && bn && strcasecmp(b, "false") && strcasecmp(b, "no") && strcmp(b, "0"))
        die("reasons.csv:%d: requires_detail '%s' is not true or false", reasons.rows[r].line, b);
      const char *school = nonempty(&reasons, "reasons.csv", r, rs, "school_id", &sn);
      const char *label = nonempty(&reasons, "reasons.csv", r, rl, "label", &ln);
      int si = strmap_get(&ro->school_map, school, sn);
      if (si < 0) die("reasons.csv: unknown school '%s'", school);
      School *s = &ro->schools[si];
      for (int k = 0; k < s->nreasons; k++)
        if (s->reasons[k].coden == cn && !memcmp(s->reasons[k].code, code, cn)) {
          memmove(&s->reasons[k], &s->reasons[k + 1], (size_t)(s->nreasons - k - 1) * sizeof *s->reasons);
          s->nreasons--; break;
        }
      if (s->nreasons == 64) die("reasons.csv: too many reasons for '%s'", school);
      s->reasons[s->nreasons++] = (ReasonDef){xstrndup(code, cn), xstrndup(label, ln), cn, requires};
    }
  }
  for (int i = 0; i < ro->nschools; i++) {
    Buf order = {0};
    for (int k = 0; k < ro->schools[i].nreasons; k++) { if (k) buf_adds(&order, ", "); buf_adds(&order, ro->schools[i].reasons[k].code); }
    ro->schools[i].order = order.p;
  }
  /* students: seat (school, grade, class, number) → record */
  int cs = column(&students, "students.csv", "school_id", true), cid = column(&students, "students.csv", "student_id", true);
  int cg = column(&students, "students.csv", "grade", true), cc = column(&students, "students.csv", "class", true);
  int cnum = column(&students, "students.csv", "number", true), cn = column(&students, "students.csv", "name", true);
  column(&students, "students.csv", "photo_url", true);
  check_width(&students, "students.csv");
  ro->nstudents = students.n - 1;
  ro->students = calloc(ro->nstudents + 1, sizeof *ro->students);
  u64map_init(&ro->seats, ro->nstudents);
  U64Map ids; u64map_init(&ids, ro->nstudents);
  for (size_t r = 1; r < students.n; r++) {
    size_t sn, idn, nn;
    const char *school = identifier(&students, "students.csv", r, cs, "school_id", &sn);
    int si = strmap_get(&ro->school_map, school, sn);
    if (si < 0) die("students.csv:%d: unknown school '%s'", students.rows[r].line, school);
    const char *id = identifier(&students, "students.csv", r, cid, "student_id", &idn);
    long g = positive(&students, "students.csv", r, cg, "grade"), c = positive(&students, "students.csv", r, cc, "class");
    long num = positive(&students, "students.csv", r, cnum, "number");
    const char *name = nonempty(&students, "students.csv", r, cn, "name", &nn);
    if (g > 65535 || c > 65535 || num > 65535) die("students.csv:%d: seat number too large", students.rows[r].line);
    uint64_t idkey = hash_bytes(id, idn) * 31 + (uint64_t)si;
    uint32_t *prev = u64map_ref(&ids, idkey, true);
    if (*prev != EMPTY && ro->students[*prev].idn == idn && !memcmp(ro->students[*prev].id, id, idn))
      die("students.csv:%d: student '%s' is listed twice", students.rows[r].line, id);
    *prev = (uint32_t)(r - 1);
    uint64_t seat = (uint64_t)si << 48 | (uint64_t)g << 32 | (uint64_t)c << 16 | (uint64_t)num;
    uint32_t *slot = u64map_ref(&ro->seats, seat, true);
    if (*slot != EMPTY) die("students.csv:%d: grade %ld class %ld number %ld is already student '%s'", students.rows[r].line, g, c, num, ro->students[*slot].id);
    *slot = (uint32_t)(r - 1);
    ro->students[r - 1] = (StudentRec){xstrndup(id, idn), xstrndup(name, nn), idn, nn};
  }
  free(ids.key); free(ids.slot);
  /* teachers */
  int ts = column(&teachers, "teachers.csv", "school_id", true), tid = column(&teachers, "teachers.csv", "teacher_id", true);
  int trole = column(&teachers, "teachers.csv", "role", true), tg = column(&teachers, "teachers.csv", "grade", true);
  int tc = column(&teachers, "teachers.csv", "class", true);
  column(&teachers, "teachers.csv", "name", true); column(&teachers, "teachers.csv", "email", true);
  check_width(&teachers, "teachers.csv");
  ro->nteachers = (int)teachers.n - 1;
  ro->teachers = calloc((size_t)ro->nteachers + 1, sizeof *ro->teachers);
  ro->teacher_keys = calloc((size_t)ro->nteachers + 1, sizeof(char *)); ro->teacher_lens = calloc((size_t)ro->nteachers + 1, sizeof(size_t));
  strmap_init(&ro->teacher_map, (size_t)ro->nteachers, ro->teacher_keys, ro->teacher_lens);
  for (int i = 0; i < ro->nteachers; i++) {
    size_t r = (size_t)i + 1, sn, idn, rn, gn, cln;
    const char *school = identifier(&teachers, "teachers.csv", r, ts, "school_id", &sn);
    int si = strmap_get(&ro->school_map, school, sn);
    if (si < 0) die("teachers.csv:%d: unknown school '%s'", teachers.rows[r].line, school);
    const char *id = identifier(&teachers, "teachers.csv", r, tid, "teacher_id", &idn);
    if (strmap_get(&ro->teacher_map, id, idn) >= 0) die("teachers.csv:%d: teacher '%s' is listed twice", teachers.rows[r].line, id);
    const char *role = nonempty(&teachers, "teachers.csv", r, trole, "role", &rn);
    /* Roles joined by '+' (homeroom+gate), as the project's roster takes them. */
    int roles = 0;
    for (const char *part = role; *part;) {
      const char *end = strchr(part, '+');
      size_t len = end ? (size_t)(end - part) : strlen(part);
      int ri = -1;
      for (int k = 0; k < 4; k++) if (strlen(ROLE_NAME[k]) == len && !strncmp(part, ROLE_NAME[k], len)) ri = k;
      if (ri < 0) die("teachers.csv:%d: role '%s' is not one of homeroom, volunteer_duty, gate, admin", teachers.rows[r].line, role);
      roles |= 1 << ri;
      part = end ? end + 1 : part + len;
    }
    cell(&teachers, r, tg, &gn); cell(&teachers, r, tc, &cln);
    if (gn) positive(&teachers, "teachers.csv", r, tg, "grade");
    if (cln) positive(&teachers, "teachers.csv", r, tc, "class");
    if ((roles & (1 << R_HOMEROOM)) && (!gn || !cln)) die("teachers.csv:%d: a homeroom teacher needs grade and class", teachers.rows[r].line);
    if ((roles & (1 << R_VOLUNTEER)) && !gn) die("teachers.csv:%d: a volunteer_duty teacher needs a grade", teachers.rows[r].line);
    ro->teachers[i] = (TeacherRec){xstrndup(id, idn), idn, si, roles};
    ro->teacher_keys[i] = ro->teachers[i].id; ro->teacher_lens[i] = idn;
    strmap_put(&ro->teacher_map, (uint32_t)i);
  }
  /* tokens: digests bucketed by their first 8 bytes */
  if (ro->auth) {
    int th = column(&tokens, "tokens.csv", "token_sha256", true), tt = column(&tokens, "tokens.csv", "teacher_id", true);
    check_width(&tokens, "tokens.csv");
    ro->ntokens = (int)tokens.n - 1;
    ro->tokens = calloc((size_t)ro->ntokens + 1, sizeof *ro->tokens);
    u64map_init(&ro->token_buckets, (size_t)ro->ntokens);
    for (int i = 0; i < ro->ntokens; i++) {
      size_t r = (size_t)i + 1, hn, tn;
      const char *hex = nonempty(&tokens, "tokens.csv", r, th, "token_sha256", &hn);
      if (hn != 64) die("tokens.csv:%d: token_sha256 must be 64 hexadecimal digits", tokens.rows[r].line);
      for (int k = 0; k < 32; k++) {
        int v = 0;
        for (int h = 0; h < 2; h++) {
          char c = hex[k * 2 + h]; int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
          if (d < 0) die("tokens.csv:%d: token_sha256 must be 64 hexadecimal digits", tokens.rows[r].line);
          v = v * 16 + d;
        }
        ro->tokens[i].digest[k] = (unsigned char)v;
      }
      const char *teacher = nonempty(&tokens, "tokens.csv", r, tt, "teacher_id", &tn);
      int ti = strmap_get(&ro->teacher_map, teacher, tn);
      if (ti < 0) die("tokens.csv:%d: unknown teacher '%s'", tokens.rows[r].line, teacher);
      ro->tokens[i].teacher = ti;
      uint64_t bucket = 0;
      for (int k = 0; k < 8; k++) bucket = bucket << 8 | ro->tokens[i].digest[k];
      uint32_t *slot = u64map_ref(&ro->token_buckets, bucket, true);
      ro->tokens[i].next = *slot == EMPTY ? -1 : (int)*slot;
      *slot = (uint32_t)i;
    }
  }
  return ro;
}
static const TeacherRec *teacher_for_token(const Roster *ro, const char *token, size_t n) {
  unsigned char digest[32]; unsigned int len = 0;
  if (EVP_Digest(token, n, digest, &len, EVP_sha256(), NULL) != 1) abort();
  uint64_t bucket = 0;
  for (int k = 0; k < 8; k++) bucket = bucket << 8 | digest[k];
  uint32_t *slot = u64map_ref((U64Map *)&ro->token_buckets, bucket, false);
  for (int i = slot ? (int)*slot : -1; i >= 0; i = ro->tokens[i].next)
    if (CRYPTO_memcmp(ro->tokens[i].digest, digest, 32) == 0) return &ro->teachers[ro->tokens[i].teacher];
  return NULL;
}
static const StudentRec *student_at(const Roster *ro, int school, long long g, long long c, long long n) {
  if (g < 1 || g > 65535 || c < 1 || c > 65535 || n < 1 || n > 65535) return NULL;
  uint64_t seat = (uint64_t)school << 48 | (uint64_t)g << 32 | (uint64_t)c << 16 | (uint64_t)n;
  uint32_t *slot = u64map_ref((U64Map *)&ro->seats, seat, false);
  return slot ? &ro->students[*slot] : NULL;
}

/* ------------------------------------------------------------------ strict JSON (JSONReader.swift) */
enum { JSTR, JINT, JNUM, JBOOL, JNULL, JARR, JOBJ };
typedef struct JField JField;
typedef struct JItem JItem;
typedef struct {
  int t;
  const char *s; size_t n; /* string (decoded), or a number's text */
  long long i;
  int b;
  JField *fields; /* object, in document order */
  JItem *items;   /* array */
} JValue;
struct JField { const char *k; size_t kn; JValue v; JField *next; };
struct JItem { JValue v; JItem *next; };
typedef struct { char *field, *message; } FieldErr; /* heap strings */
typedef struct { int key; const char *k; size_t kn; size_t idx; } Step;
typedef struct {
  const unsigned char *b; size_t n, pos;
  Arena *ar;
  Step trail[40]; int ntrail;
  FieldErr *err;
} JCur;
#define JSON_MAX_DEPTH 32

static char *jpath(const JCur *c) {
  Buf t = {0};
  buf_grow(&t, 0); t.p[0] = 0;
  for (int i = 0; i < c->ntrail; i++) {
    if (c->trail[i].key) { if (t.n) buf_addc(&t, '.'); buf_add(&t, c->trail[i].k, c->trail[i].kn); }
    else { buf_addc(&t, '['); buf_addi(&t, (long long)c->trail[i].idx); buf_addc(&t, ']'); }
  }
  return t.p;
}
static int jfail(JCur *c, char *message) { c->err->field = jpath(c); c->err->message = message; return -1; }
static int junexpected(JCur *c, const char *what) {
  char found[32];
  if (c->pos < c->n) {
    unsigned char ch = c->b[c->pos];
    if (ch >= 0x20 && ch < 0x7F) snprintf(found, sizeof found, "unexpected '%c'", ch);
    else snprintf(found, sizeof found, "unexpected '\\x%x'", ch);
  } else strcpy(found, "unexpected end");
  return jfail(c, sfmt("is not valid JSON: %s %s at byte %zu", found, what, c->pos));
}
static void jskip(JCur *c) {
  while (c->pos < c->n) { unsigned char ch = c->b[c->pos]; if (ch == 0x20 || ch == 0x09 || ch == 0x0A || ch == 0x0D) c->pos++; else return; }
}
static int jhex4(JCur *c, uint32_t *v) {
  if (c->pos + 4 > c->n) return junexpected(c, "in a \\u escape");
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char ch = c->b[c->pos]; int d;
    if (ch >= '0' && ch <= '9') d = ch - '0';
    else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
    else return junexpected(c, "in a \\u escape");
    x = x << 4 | (uint32_t)d; c->pos++;
  }
  *v = x; return 0;
}
static int junicode(JCur *c, uint32_t *out) {
  uint32_t high, low;
  if (jhex4(c, &high)) return -1;
  if (high >= 0xDC00 && high <= 0xDFFF) return jfail(c, sfmt("has an unpaired surrogate \\u%x", high));
  if (high >= 0xD800 && high <= 0xDBFF) {
    if (!(c->pos + 1 < c->n && c->b[c->pos] == '\\' && c->b[c->pos + 1] == 'u')) return jfail(c, sfmt("has an unpaired surrogate \\u%x", high));
    c->pos += 2;
    if (jhex4(c, &low)) return -1;
    if (!(low >= 0xDC00 && low <= 0xDFFF)) return jfail(c, sfmt("has an unpaired surrogate \\u%x", high));
    *out = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
    return 0;
  }
  *out = high; return 0;
}
/* A string in valid UTF-8 with JSON's escapes; the common case (no escape) stays in the body. */
static int jstring(JCur *c, const char **out, size_t *outn) {
  c->pos++;
  size_t start = c->pos;
  while (c->pos < c->n) {
    unsigned char ch = c->b[c->pos];
    if (ch == '"') {
      c->pos++;
      if (!utf8_valid(c->b + start, c->pos - 1 - start)) return jfail(c, sfmt("is not valid UTF-8"));
      *out = (const char *)c->b + start; *outn = c->pos - 1 - start;
      return 0;
    }
    if (ch == '\\') break;
    if (ch < 0x20) return jfail(c, sfmt("is not valid JSON: a control character inside a string at byte %zu", c->pos));
    c->pos++;
  }
  if (c->pos >= c->n) return junexpected(c, "inside a string");
  char *d = arena_alloc(c->ar, c->n - start + 1);
  size_t dn = c->pos - start;
  memcpy(d, c->b + start, dn);
  while (c->pos < c->n) {
    unsigned char ch = c->b[c->pos];
    if (ch == '"') {
      c->pos++;
      if (!utf8_valid((unsigned char *)d, dn)) return jfail(c, sfmt("is not valid UTF-8"));
      d[dn] = 0; *out = d; *outn = dn;
      return 0;
    }
    if (ch == '\\') {
      c->pos++;
      if (c->pos >= c->n) return junexpected(c, "inside a string");
      unsigned char e = c->b[c->pos++];
      switch (e) {
      case '"': case '\\': case '/': d[dn++] = (char)e; break;
      case 'b': d[dn++] = 0x08; break;
      case 'f': d[dn++] = 0x0C; break;
      case 'n': d[dn++] = 0x0A; break;
      case 'r': d[dn++] = 0x0D; break;
      case 't': d[dn++] = 0x09; break;
      case 'u': { uint32_t sc; if (junicode(c, &sc)) return -1; dn += utf8_put(sc, d + dn); break; }
      default: c->pos--; return junexpected(c, "after '\\'");
      }
    } else {
      if (ch < 0x20) return jfail(c, sfmt("is not valid JSON: a control character inside a string at byte %zu", c->pos));
      d[dn++] = (char)ch; c->pos++;
    }
  }
  return junexpected(c, "inside a string");
}
static bool parse_ll(const char *s, size_t n, long long *out) {
  bool neg = n && s[0] == '-';
  unsigned long long limit = neg ? 9223372036854775808ULL : 9223372036854775807ULL, v = 0;
  for (size_t i = neg; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? (long long)(0ULL - v) : (long long)v;
  return true;
}
static void jdigits(JCur *c) { while (c->pos < c->n && c->b[c->pos] >= '0' && c->b[c->pos] <= '9') c->pos++; }
static int jnumber(JCur *c, JValue *out) {
  size_t start = c->pos;
  if (c->b[c->pos] == '-') c->pos++;
  size_t is = c->pos;
  jdigits(c);
  if (c->pos == is) return junexpected(c, "in a number");
  if (c->b[is] == '0' && c->pos - is > 1) return jfail(c, sfmt("is not valid JSON: a number with a leading zero at byte %zu", is));
  bool whole = true;
  if (c->pos < c->n && c->b[c->pos] == '.') {
    whole = false; c->pos++;
    size_t fs = c->pos; jdigits(c);
    if (c->pos == fs) return junexpected(c, "in a number's fraction");
  }
  if (c->pos < c->n && (c->b[c->pos] == 'e' || c->b[c->pos] == 'E')) {
    whole = false; c->pos++;
    if (c->pos < c->n && (c->b[c->pos] == '+' || c->b[c->pos] == '-')) c->pos++;
    size_t es = c->pos; jdigits(c);
    if (c->pos == es) return junexpected(c, "in a number's exponent");
  }
  out->s = (const char *)c->b + start; out->n = c->pos - start;
  if (whole && parse_ll(out->s, out->n, &out->i)) { out->t = JINT; return 0; }
  out->t = JNUM; return 0;
}
static bool jliteral(JCur *c, const char *w, size_t n) {
  if (c->pos + n > c->n || memcmp(c->b + c->pos, w, n)) return false;
  c->pos += n; return true;
}
static int jvalue(JCur *c, JValue *out, int depth);
static int jobject(JCur *c, JValue *out, int depth) {
  c->pos++;
  out->t = JOBJ; out->fields = NULL;
  JField **tail = &out->fields;
  jskip(c);
  if (c->pos < c->n && c->b[c->pos] == '}') { c->pos++; return 0; }
  for (;;) {
    jskip(c);
    if (!(c->pos < c->n && c->b[c->pos] == '"')) {
      if (c->pos < c->n && c->b[c->pos] == '}') return jfail(c, sfmt("is not valid JSON: a trailing comma before '}' at byte %zu", c->pos));
      return junexpected(c, "where a field name was expected");
    }
    const char *k; size_t kn;
    if (jstring(c, &k, &kn)) return -1;
    c->trail[c->ntrail++] = (Step){1, k, kn, 0};
    for (JField *f = out->fields; f; f = f->next)
      if (f->kn == kn && !memcmp(f->k, k, kn)) return jfail(c, sfmt("appears more than once"));
    jskip(c);
    if (!(c->pos < c->n && c->b[c->pos] == ':')) return junexpected(c, "after a field name");
    c->pos++;
    JField *f = arena_alloc(c->ar, sizeof *f);
    f->k = k; f->kn = kn; f->next = NULL;
    if (jvalue(c, &f->v, depth + 1)) return -1;
    *tail = f; tail = &f->next;
    c->ntrail--;
    jskip(c);
    if (c->pos >= c->n) return junexpected(c, "in an object");
    c->pos++;
    unsigned char d = c->b[c->pos - 1];
    if (d == ',') continue;
    if (d == '}') return 0;
    c->pos--;
    return junexpected(c, "where ',' or '}' was expected");
  }
}
static int jarray(JCur *c, JValue *out, int depth) {
  c->pos++;
  out->t = JARR; out->items = NULL;
  JItem **tail = &out->items;
  size_t count = 0;
  jskip(c);
  if (c->pos < c->n && c->b[c->pos] == ']') { c->pos++; return 0; }
  for (;;) {
    jskip(c);
    if (c->pos < c->n && c->b[c->pos] == ']') return jfail(c, sfmt("is not valid JSON: a trailing comma before ']' at byte %zu", c->pos));
    c->trail[c->ntrail++] = (Step){0, NULL, 0, count};
    JItem *it = arena_alloc(c->ar, sizeof *it);
    it->next = NULL;
    if (jvalue(c, &it->v, depth + 1)) return -1;
    *tail = it; tail = &it->next; count++;
    c->ntrail--;
    jskip(c);
    if (c->pos >= c->n) return junexpected(c, "in an array");
    c->pos++;
    unsigned char d = c->b[c->pos - 1];
    if (d == ',') continue;
    if (d == ']') return 0;
    c->pos--;
    return junexpected(c, "where ',' or ']' was expected");
  }
}
static int jvalue(JCur *c, JValue *out, int depth) {
  jskip(c);
  if (c->pos >= c->n) return junexpected(c, "where a value was expected");
  switch (c->b[c->pos]) {
  case '{':
    if (depth >= JSON_MAX_DEPTH) return jfail(c, sfmt("is nested too deeply"));
    return jobject(c, out, depth);
  case '[':
    if (depth >= JSON_MAX_DEPTH) return jfail(c, sfmt("is nested too deeply"));
    return jarray(c, out, depth);
  case '"': out->t = JSTR; return jstring(c, &out->s, &out->n);
  case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
    return jnumber(c, out);
  case 't': if (jliteral(c, "true", 4)) { out->t = JBOOL; out->b = 1; return 0; } break;
  case 'f': if (jliteral(c, "false", 5)) { out->t = JBOOL; out->b = 0; return 0; } break;
  case 'n': if (jliteral(c, "null", 4)) { out->t = JNULL; return 0; } break;
  }
  return junexpected(c, "where a value was expected");
}
static const char *jtype(const JValue *v) {
  switch (v->t) {
  case JSTR: return "a string";
  case JINT: case JNUM: return "a number";
  case JBOOL: return "a boolean";
  case JNULL: return "null";
  case JARR: return "an array";
  default: return "an object";
  }
}
/* JSONReader.object: the document must be one object. */
static int json_object(const char *body, size_t n, Arena *ar, JValue *out, FieldErr *err) {
  JCur c = {.b = (const unsigned char *)(body ? body : ""), .n = n, .ar = ar, .err = err};
  if (jvalue(&c, out, 0)) return -1;
  jskip(&c);
  if (c.pos != c.n) return junexpected(&c, "after the document");
  if (out->t != JOBJ) { err->field = xstrndup("", 0); err->message = sfmt("the body must be a JSON object, not %s", jtype(out)); return -1; }
  return 0;
}
/* JSONFields: typed reads naming the field by its path; absent and null alike for optional fields. */
static const JValue *jget(const JValue *obj, const char *key) {
  size_t kn = strlen(key);
  for (const JField *f = obj->fields; f; f = f->next) if (f->kn == kn && !memcmp(f->k, key, kn)) return &f->v;
  return NULL;
}
static char *jname(const char *path, const char *key) { return *path ? sfmt("%s.%s", path, key) : sfmt("%s", key); }
static int jf_required(const JValue *obj, const char *path, const char *key, const JValue **out, FieldErr *e) {
  const JValue *v = jget(obj, key);
  if (!v) { e->field = jname(path, key); e->message = sfmt("is required"); return -1; }
  if (v->t == JNULL) { e->field = jname(path, key); e->message = sfmt("must not be null"); return -1; }
  *out = v; return 0;
}
static int jf_mismatch(const char *path, const char *key, const char *expected, const JValue *v, FieldErr *e) {
  e->field = jname(path, key); e->message = sfmt("must be %s, not %s", expected, jtype(v)); return -1;
}
static int jf_object(const JValue *obj, const char *path, const char *key, const JValue **out, FieldErr *e) {
  if (jf_required(obj, path, key, out, e)) return -1;
  if ((*out)->t != JOBJ) return jf_mismatch(path, key, "an object", *out, e);
  return 0;
}
static int jf_string(const JValue *obj, const char *path, const char *key, const char **s, size_t *n, FieldErr *e) {
  const JValue *v;
  if (jf_required(obj, path, key, &v, e)) return -1;
  if (v->t != JSTR) return jf_mismatch(path, key, "a string", v, e);
  *s = v->s; *n = v->n; return 0;
}
static int jf_optstring(const JValue *obj, const char *path, const char *key, const char **s, size_t *n, FieldErr *e) {
  const JValue *v = jget(obj, key);
  *s = NULL; *n = 0;
  if (!v || v->t == JNULL) return 0;
  if (v->t != JSTR) return jf_mismatch(path, key, "a string", v, e);
  *s = v->s; *n = v->n; return 0;
}
static bool is_whole(const char *s, size_t n) {
  char *t = xstrndup(s, n); double v = strtod(t, NULL); free(t);
  if (!__builtin_isfinite(v)) return true;
  double a = v < 0 ? -v : v;
  if (a >= 4503599627370496.0) return true;
  return (double)(long long)v == v;
}
static int jf_int(const JValue *obj, const char *path, const char *key, long long lo, long long hi, long long *out, FieldErr *e) {
  const JValue *v;
  if (jf_required(obj, path, key, &v, e)) return -1;
  if (v->t == JINT && v->i >= lo && v->i <= hi) { *out = v->i; return 0; }
  if (v->t == JINT || v->t == JNUM) {
    if (v->t == JNUM && !is_whole(v->s, v->n)) { e->field = jname(path, key); e->message = sfmt("must be a whole number, not %.*s", (int)v->n, v->s); return -1; }
    e->field = jname(path, key); e->message = sfmt("must be a whole number from %lld to %lld", lo, hi); return -1;
  }
  return jf_mismatch(path, key, "a whole number", v, e);
}

/* ------------------------------------------------------------------ HTTP answers (Response.swift, HTTPError.swift) */
typedef struct {
  int status;
  const char *ctype;
  Buf body;
  const char *xname; char xval[160]; /* one extra header: WWW-Authenticate, Allow, Retry-After */
} Response;
static const char *reason_phrase(int s) {
  switch (s) {
  case 200: return "OK"; case 201: return "Created"; case 202: return "Accepted"; case 204: return "No Content";
  case 400: return "Bad Request"; case 401: return "Unauthorized"; case 403: return "Forbidden"; case 404: return "Not Found";
  case 405: return "Method Not Allowed"; case 409: return "Conflict"; case 413: return "Content Too Large";
  case 414: return "URI Too Long"; case 415: return "Unsupported Media Type"; case 422: return "Unprocessable Content";
  case 429: return "Too Many Requests"; case 431: return "Request Header Fields Too Large"; case 500: return "Internal Server Error";
  case 501: return "Not Implemented"; case 503: return "Service Unavailable"; default: return NULL;
  }
}
/* JSONEncoder's string form (withoutEscapingSlashes). */
static void enc_str(Buf *b, const char *s, size_t n) {
  buf_addc(b, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
    case '"': buf_add(b, "\\\"", 2); break;
    case '\\': buf_add(b, "\\\\", 2); break;
    case '\b': buf_add(b, "\\b", 2); break;
    case '\f': buf_add(b, "\\f", 2); break;
    case '\n': buf_add(b, "\\n", 2); break;
    case '\r': buf_add(b, "\\r", 2); break;
    case '\t': buf_add(b, "\\t", 2); break;
    default:
      if (c < 0x20) { char u[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]}; buf_add(b, u, 6); }
      else buf_addc(b, (char)c);
    }
  }
  buf_addc(b, '"');
}
/* RFC 9457 body, keys sorted as the encoder sorts them. */
static void problem(Response *r, int status, const char *detail, const FieldErr *errs, int nerrs, const char *xname,
                    const char *xval, const char *member, const char *member_value) {
  r->status = status; r->ctype = "application/problem+json";
  Buf *b = &r->body;
  buf_adds(b, "{\"detail\":"); enc_str(b, detail, strlen(detail));
  if (nerrs) {
    buf_adds(b, ",\"errors\":[");
    for (int i = 0; i < nerrs; i++) {
      if (i) buf_addc(b, ',');
      buf_adds(b, "{\"field\":"); enc_str(b, errs[i].field, strlen(errs[i].field));
      buf_adds(b, ",\"message\":"); enc_str(b, errs[i].message, strlen(errs[i].message)); buf_addc(b, '}');
    }
    buf_addc(b, ']');
  }
  if (member) { buf_adds(b, ",\""); buf_adds(b, member); buf_adds(b, "\":"); enc_str(b, member_value, strlen(member_value)); }
  buf_adds(b, ",\"status\":"); buf_addi(b, status);
  const char *title = reason_phrase(status); char fallback[24];
  if (!title) { snprintf(fallback, sizeof fallback, "HTTP %d", status); title = fallback; }
  buf_adds(b, ",\"title\":"); enc_str(b, title, strlen(title));
  buf_adds(b, ",\"type\":\"https://guidance.example/problems/");
  for (const char *p = title; *p; p++) buf_addc(b, *p == ' ' ? '-' : (*p >= 'A' && *p <= 'Z' ? (char)(*p + 32) : *p));
  buf_adds(b, "\"}");
  r->xname = xname;
  if (xval) snprintf(r->xval, sizeof r->xval, "%s", xval);
}
static void simple_problem(Response *r, int status, const char *detail) { problem(r, status, detail, NULL, 0, NULL, NULL, NULL, NULL); }
/* HTTPError(FieldError, status:): "field 'x' message", errors naming it. */
static void field_problem(Response *r, FieldErr *e, int status) {
  char *detail = *e->field ? sfmt("field '%s' %s", e->field, e->message) : sfmt("the body %s", e->message);
  problem(r, status, detail, e, *e->field ? 1 : 0, NULL, NULL, NULL, NULL);
  free(detail); free(e->field); free(e->message);
}

/* ------------------------------------------------------------------ the server's state (HTTPServer*.swift, Exchange.swift) */
#define MAX_BODY 16384
#define MAX_HEADER_BYTES 8192
#define MAX_URI_BYTES 4096
#define RECEIVE_TIMEOUT_NS 10000000000ULL
enum { PH_RECEIVING, PH_SUSPENDED, PH_ANSWERED, PH_QUEUED };
typedef struct Conn { int fd; uint64_t since; bool listed; struct Conn *prev, *next; } Conn;
typedef struct { char *name, *value; size_t vn; } Header;
typedef struct Exchange {
  struct MHD_Connection *conn;
  Conn *cs;
  uint64_t started;
  Arena arena;
  char *method, *path;
  Header *headers; size_t nheaders, hcap; size_t header_bytes, query_bytes;
  int auth_count; const char *cl_first; bool cl_conflict;
  char request_id[160];
  bool has_problem;
  Buf body; bool too_large;
  int route, status;
  _Atomic int phase;
  Response answer;
  struct Exchange *sprev, *snext; bool in_suspended;
  char event_id[37], guidance_id[37]; char *key;
} Exchange;

static struct MHD_Daemon *daemon_;
static atomic_bool serving = true;
static _Atomic long in_flight;
static pthread_mutex_t receiving_lock = PTHREAD_MUTEX_INITIALIZER;
static Conn receiving_head = {.prev = &receiving_head, .next = &receiving_head};
static pthread_mutex_t suspended_lock = PTHREAD_MUTEX_INITIALIZER;
static Exchange suspended_head = {.sprev = &suspended_head, .snext = &suspended_head};
static char id_prefix[16];
static _Atomic unsigned long long next_id;
static const char *topic = "guidance.registered";

/* The connection is sending a request from now on (connection start, or the previous answer done). */
static void receiving(struct MHD_Connection *c, Conn *cs) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  uint64_t now = mono_ns();
  pthread_mutex_lock(&receiving_lock);
  cs->fd = info ? info->connect_fd : -1; cs->since = now;
  if (!cs->listed) {
    cs->listed = true; cs->next = &receiving_head; cs->prev = receiving_head.prev;
    receiving_head.prev->next = cs; receiving_head.prev = cs;
  }
  pthread_mutex_unlock(&receiving_lock);
}
/* Its request is in (or the connection closed). */
static void received(Conn *cs) {
  pthread_mutex_lock(&receiving_lock);
  if (cs->listed) { cs->listed = false; cs->prev->next = cs->next; cs->next->prev = cs->prev; }
  pthread_mutex_unlock(&receiving_lock);
}
/* Once a second, shuts down the sockets of connections slower than the receive timeout. */
static void *reaper(void *arg) {
  (void)arg;
  while (atomic_load(&serving)) {
    int late[64]; int n = 0;
    uint64_t now = mono_ns();
    pthread_mutex_lock(&receiving_lock);
    for (Conn *c = receiving_head.next, *next; c != &receiving_head && n < 64; c = next) {
      next = c->next;
      if (now - c->since > RECEIVE_TIMEOUT_NS) { c->listed = false; c->prev->next = c->next; c->next->prev = c->prev; late[n++] = c->fd; }
    }
    pthread_mutex_unlock(&receiving_lock);
    for (int i = 0; i < n; i++) if (late[i] >= 0) shutdown(late[i], SHUT_RDWR);
    if (n) { char count[16]; snprintf(count, sizeof count, "%d", n); KV kv[] = {KVS("count", count)}; log_kv(L_INFO, "closed connections too slow to send their request", kv, 1); }
    sleep(1);
  }
  return NULL;
}

static const Header *header(const Exchange *ex, const char *name) {
  for (size_t i = ex->nheaders; i-- > 0;) if (!strcmp(ex->headers[i].name, name)) return &ex->headers[i];
  return NULL;
}
static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  Exchange *ex = cls;
  if (!key) return MHD_YES;
  size_t kn = strlen(key), vn = value ? strlen(value) : 0;
  char *name = arena_alloc(&ex->arena, kn + 1);
  for (size_t i = 0; i < kn; i++) name[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] + 32 : key[i]);
  name[kn] = 0;
  char *v = arena_dup(&ex->arena, value ? value : "", vn);
  ex->header_bytes += kn + vn + 4;
  if (!strcmp(name, "authorization")) ex->auth_count++;
  if (!strcmp(name, "content-length")) {
    if (ex->cl_first && strcmp(ex->cl_first, v)) ex->cl_conflict = true;
    if (!ex->cl_first) ex->cl_first = v;
  }
  if (ex->nheaders == ex->hcap) {
    size_t cap = ex->hcap ? ex->hcap * 2 : 16;
    Header *h = arena_alloc(&ex->arena, cap * sizeof *h);
    if (ex->nheaders) memcpy(h, ex->headers, ex->nheaders * sizeof *h);
    ex->headers = h; ex->hcap = cap;
  }
  ex->headers[ex->nheaders++] = (Header){name, v, vn};
  return MHD_YES;
}
static enum MHD_Result count_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  Exchange *ex = cls;
  if (key) ex->query_bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
  return MHD_YES;
}
/* Swift's Int(text): an optional sign, then digits only, within 64 bits. */
static bool int_text(const char *s, size_t n, long long *out) {
  size_t i = n && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == n) return false;
  for (size_t k = i; k < n; k++) if (s[k] < '0' || s[k] > '9') return false;
  if (s[0] == '+') return parse_ll(s + 1, n - 1, out);
  return parse_ll(s, n, out);
}
/* Answers decided from the request line and headers alone (Exchange.problem). */
static bool early_problem(Exchange *ex, Response *r) {
  if (ex->header_bytes > MAX_HEADER_BYTES) { char d[96]; snprintf(d, sizeof d, "the request headers take more than %d bytes", MAX_HEADER_BYTES); simple_problem(r, 431, d); return true; }
  if (strlen(ex->path) + ex->query_bytes > MAX_URI_BYTES) { char d[96]; snprintf(d, sizeof d, "the request target is longer than %d bytes", MAX_URI_BYTES); simple_problem(r, 414, d); return true; }
  if (ex->auth_count > 1) { simple_problem(r, 400, "send one Authorization header, not several"); return true; }
  if (ex->cl_conflict) { simple_problem(r, 400, "conflicting Content-Length headers"); return true; }
  const Header *cl = header(ex, "content-length");
  if (cl && header(ex, "transfer-encoding")) { simple_problem(r, 400, "send Content-Length or Transfer-Encoding, not both"); return true; }
  long long declared;
  if (cl && int_text(cl->value, cl->vn, &declared) && declared > MAX_BODY) {
    char d[96]; snprintf(d, sizeof d, "the body is larger than %d bytes", MAX_BODY); simple_problem(r, 413, d); return true;
  }
  return false;
}
static void request_id(Exchange *ex) {
  const Header *h = header(ex, "x-request-id");
  if (h && h->vn && h->vn <= 128) {
    bool ok = true;
    for (size_t i = 0; i < h->vn; i++) { unsigned char c = (unsigned char)h->value[i]; if (c <= 0x20 || c >= 0x7F) { ok = false; break; } }
    if (ok) { memcpy(ex->request_id, h->value, h->vn); ex->request_id[h->vn] = 0; return; }
  }
  unsigned long long n = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed) + 1;
  snprintf(ex->request_id, sizeof ex->request_id, "%s%llx", id_prefix, n);
}
static enum MHD_Result queue(Exchange *ex, Response *r) {
  ex->status = r->status;
  struct MHD_Response *m = MHD_create_response_from_buffer(r->body.n, r->body.p, MHD_RESPMEM_MUST_COPY);
  if (!m) { buf_free(&r->body); return MHD_NO; }
  if (r->ctype) MHD_add_response_header(m, "Content-Type", r->ctype);
  if (r->xname) MHD_add_response_header(m, r->xname, r->xval);
  MHD_add_response_header(m, "X-Request-Id", ex->request_id);
  atomic_store(&ex->phase, PH_QUEUED);
  enum MHD_Result ret = MHD_queue_response(ex->conn, (unsigned)r->status, m);
  MHD_destroy_response(m);
  buf_free(&r->body);
  return ret;
}
static void suspend(Exchange *ex) {
  atomic_store(&ex->phase, PH_SUSPENDED);
  pthread_mutex_lock(&suspended_lock);
  ex->in_suspended = true; ex->snext = &suspended_head; ex->sprev = suspended_head.sprev;
  suspended_head.sprev->snext = ex; suspended_head.sprev = ex;
  pthread_mutex_unlock(&suspended_lock);
  MHD_suspend_connection(ex->conn);
}
/* Resumes a suspended connection with its answer, once (Exchange.finish). */
static void finish(Exchange *ex, Response *r, bool force) {
  if (!force) {
    pthread_mutex_lock(&suspended_lock);
    bool present = ex->in_suspended;
    if (present) { ex->in_suspended = false; ex->sprev->snext = ex->snext; ex->snext->sprev = ex->sprev; }
    pthread_mutex_unlock(&suspended_lock);
    if (!present) { buf_free(&r->body); return; }
  }
  ex->answer = *r;
  int expected = PH_SUSPENDED;
  if (atomic_compare_exchange_strong(&ex->phase, &expected, PH_ANSWERED)) MHD_resume_connection(ex->conn);
}

/* ------------------------------------------------------------------ routes (Router.swift) */
enum { H_HEALTH, H_READY, H_METRICS, H_REGISTER, H_OTHER };
static const struct { const char *method, *pattern; int handler; } ROUTES[NROUTES] = {
    {"GET", "/healthz", H_HEALTH},
    {"GET", "/readyz", H_READY},
    {"GET", "/metrics", H_METRICS},
    {"GET", "/v1/schools/{schoolId}/classes", H_OTHER},
    {"GET", "/v1/schools/{schoolId}/reasons", H_OTHER},
    {"GET", "/v1/schools/{schoolId}/students/{grade}/{class}/{number}", H_OTHER},
    {"POST", "/v1/schools/{schoolId}/guidances", H_REGISTER},
    {"DELETE", "/v1/schools/{schoolId}/grades/{grade}/guidances/{guidanceId}", H_OTHER},
    {"GET", "/assets/{name}", H_OTHER},
    {"POST", "/session", H_OTHER},
    {"POST", "/session/end", H_OTHER},
    {"GET", "/", H_OTHER},
};
typedef struct { const char *s; size_t n; bool param; } Seg;
static Seg route_segs[NROUTES][8]; static int route_nsegs[NROUTES];
/* Split on the byte '/', empty segments omitted (as Swift's split). */
static int split_path(const char *p, Seg *out, int max) {
  int n = 0;
  while (*p) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *s = p;
    while (*p && *p != '/') p++;
    if (n == max) return max + 1;
    out[n++] = (Seg){s, (size_t)(p - s), false};
  }
  return n;
}
static void routes_init(void) {
  for (int i = 0; i < NROUTES; i++) {
    route_nsegs[i] = split_path(ROUTES[i].pattern, route_segs[i], 8);
    for (int k = 0; k < route_nsegs[i]; k++)
      route_segs[i][k].param = route_segs[i][k].n >= 2 && route_segs[i][k].s[0] == '{' && route_segs[i][k].s[route_segs[i][k].n - 1] == '}';
  }
}
/* The route index (and the {schoolId} segment), or -1 with 404/405 answered. */
static int resolve(const Exchange *ex, Seg *school, Response *r) {
  Seg parts[9];
  int n = split_path(ex->path, parts, 8);
  char allowed[64]; allowed[0] = 0;
  for (int i = 0; i < NROUTES; i++) {
    if (route_nsegs[i] != n) continue;
    bool match = true;
    Seg sch = {0};
    for (int k = 0; k < n && match; k++) {
      const Seg *s = &route_segs[i][k];
      if (s->param) { if (s->n == 10 && !memcmp(s->s, "{schoolId}", 10)) sch = parts[k]; }
      else if (s->n != parts[k].n || memcmp(s->s, parts[k].s, s->n)) match = false;
    }
    if (!match) continue;
    if (!strcmp(ROUTES[i].method, ex->method) || (!strcmp(ex->method, "HEAD") && !strcmp(ROUTES[i].method, "GET"))) { *school = sch; return i; }
    if (*allowed) strncat(allowed, ", ", sizeof allowed - strlen(allowed) - 1);
    strncat(allowed, ROUTES[i].method, sizeof allowed - strlen(allowed) - 1);
  }
  char *detail;
  if (!*allowed) { detail = sfmt("no resource at %s", ex->path); simple_problem(r, 404, detail); }
  else { detail = sfmt("%s is not allowed on %s", ex->method, ex->path); problem(r, 405, detail, NULL, 0, "Allow", allowed, NULL, NULL); }
  free(detail);
  return -1;
}

/* ------------------------------------------------------------------ Kafka (Producer.swift, KafkaConfig.swift, KafkaError.swift) */
static rd_kafka_t *rk;
static atomic_bool kafka_fatal;
static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static long handle_uses;
#define DELIVERY_TIMEOUT_NS 5000000000ULL
typedef struct Box { _Atomic int refs; atomic_bool finished; Exchange *ex; uint64_t deadline; struct Box *next; } Box;
static pthread_mutex_t awaiting_lock = PTHREAD_MUTEX_INITIALIZER;
static Box *awaiting_head, *awaiting_tail;
typedef struct { int code; bool retriable; char message[256]; } KErr;

static void box_release(Box *b) { if (atomic_fetch_sub(&b->refs, 1) == 1) free(b); }
static bool retriable_broker(rd_kafka_resp_err_t e) {
  return e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION || e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
         e == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT || e == RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS ||
         e == RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND || e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
         e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE || e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
         e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__WAIT_COORD;
}
static KErr kafka_error(rd_kafka_resp_err_t raw, const char *context, bool fatal) {
  KErr k;
  switch (raw) {
  case RD_KAFKA_RESP_ERR__FATAL: case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER: case RD_KAFKA_RESP_ERR_DUPLICATE_SEQUENCE_NUMBER:
  case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH: case RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID: case RD_KAFKA_RESP_ERR__INCONSISTENT:
  case RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE: k.code = PE_FAILED; break;
  case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT: case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE: k.code = PE_TIMEOUT; break;
  case RD_KAFKA_RESP_ERR__TRANSPORT: case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN: k.code = PE_UNAVAILABLE; break;
  case RD_KAFKA_RESP_ERR__QUEUE_FULL: k.code = PE_QUEUE_FULL; break;
  case RD_KAFKA_RESP_ERR__PURGE_QUEUE: case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT: case RD_KAFKA_RESP_ERR__DESTROY: k.code = PE_SHUTDOWN; break;
  case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE: k.code = PE_TOO_LARGE; break;
  case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC: case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART: k.code = PE_UNKNOWN_TOPIC; break;
  default: k.code = PE_BROKER;
  }
  if (fatal) k.code = PE_FAILED;
  k.retriable = k.code <= PE_SHUTDOWN || (k.code == PE_BROKER && retriable_broker(raw));
  snprintf(k.message, sizeof k.message, "%s: %s (%s)", context, rd_kafka_err2str(raw), rd_kafka_err2name(raw));
  return k;
}

/* What the handler does once the send completes (IngestHandlers.publish, after `producer.send`). */
static void delivered(Exchange *ex, const char *rtopic, int32_t partition, int64_t offset, const KErr *err) {
  Response r = {0};
  if (err) {
    atomic_fetch_add_explicit(&produce_errors[err->code], 1, memory_order_relaxed);
    KV kv[] = {KVS("requestId", ex->request_id), KVS("guidanceId", ex->guidance_id), KVS("error", err->message)};
    log_kv(L_WARNING, "event not acknowledged", kv, 3);
    if (err->retriable) {
      problem(&r, 503, "the event broker did not acknowledge the event; retry with the same guidanceId", NULL, 0, "Retry-After", "2",
              "guidanceId", ex->guidance_id);
    } else {
      KV kv2[] = {KVS("requestId", ex->request_id), KVS("route", ROUTES[ex->route].pattern), KVS("error", err->message)};
      log_kv(L_ERROR, "handler failed", kv2, 3);
      char *detail = sfmt("internal error; quote request id %s", ex->request_id);
      simple_problem(&r, 500, detail); free(detail);
    }
    finish(ex, &r, false);
    return;
  }
  char part[16], off[24];
  snprintf(part, sizeof part, "%d", (int)partition); snprintf(off, sizeof off, "%lld", (long long)offset);
  if (log_min <= L_INFO) {
    KV kv[] = {KVS("requestId", ex->request_id), KVS("guidanceId", ex->guidance_id), KVS("key", ex->key), KVS("partition", part), KVS("offset", off)};
    log_kv(L_INFO, "guidance registered", kv, 5);
  }
  r.status = 202; r.ctype = "application/json";
  Buf *b = &r.body;
  buf_grow(b, 192);
  buf_adds(b, "{\"eventId\":"); buf_addqs(b, ex->event_id);
  buf_adds(b, ",\"guidanceId\":"); buf_addqs(b, ex->guidance_id);
  buf_adds(b, ",\"offset\":"); buf_addi(b, offset);
  buf_adds(b, ",\"partition\":"); buf_addi(b, partition);
  buf_adds(b, ",\"topic\":"); buf_addqs(b, rtopic);
  buf_addc(b, '}');
  finish(ex, &r, false);
}
static void box_finish(Box *b, const char *rtopic, int32_t partition, int64_t offset, const KErr *err) {
  if (!atomic_exchange(&b->finished, true)) delivered(b->ex, rtopic, partition, offset, err);
}
static void dr_cb(rd_kafka_t *k, const rd_kafka_message_t *m, void *opaque) {
  (void)opaque;
  Box *b = m->_private;
  if (!b) return;
  const char *rtopic = rd_kafka_topic_name(m->rkt);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) box_finish(b, rtopic, m->partition, m->offset, NULL);
  else {
    char context[300]; snprintf(context, sizeof context, "delivery to %s", rtopic);
    bool fatal = atomic_load(&kafka_fatal) || rd_kafka_fatal_error(k, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR;
    KErr e = kafka_error(m->err, context, fatal);
    box_finish(b, rtopic, 0, 0, &e);
  }
  box_release(b);
}
static void log_cb(const rd_kafka_t *k, int level, const char *facility, const char *text) {
  int l = level <= 3 ? L_ERROR : level == 4 ? L_WARNING : L_DEBUG;
  if (l < log_min) return;
  KV kv[] = {KVS("facility", facility ? facility : ""), KVS("client", rd_kafka_name(k))};
  log_kv(l, text ? text : "", kv, 2);
}
static void error_cb(rd_kafka_t *k, int code, const char *reason, void *opaque) {
  (void)k; (void)opaque;
  KV kv[] = {KVS("reason", reason ? reason : ""), KVS("code", rd_kafka_err2name((rd_kafka_resp_err_t)code))};
  if (code == RD_KAFKA_RESP_ERR__FATAL) { atomic_store(&kafka_fatal, true); log_kv(L_ERROR, "Kafka client entered a fatal state; it will be replaced", kv, 1); }
  else if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__TRANSPORT) log_kv(L_WARNING, "Kafka broker connection problem", kv, 1);
  else log_kv(L_WARNING, "Kafka client error", kv, 2);
}
/* Sends awaiting their report, oldest first: drops finished heads, fails overdue ones (failOverdueSends). */
static void fail_overdue(bool all) {
  uint64_t now = mono_ns();
  Box *overdue = NULL, **tail = &overdue;
  pthread_mutex_lock(&awaiting_lock);
  while (awaiting_head) {
    Box *b = awaiting_head;
    if (atomic_load(&b->finished)) { awaiting_head = b->next; box_release(b); }
    else if (all || b->deadline <= now) { awaiting_head = b->next; b->next = NULL; *tail = b; tail = &b->next; }
    else break;
  }
  if (!awaiting_head) awaiting_tail = NULL;
  pthread_mutex_unlock(&awaiting_lock);
  while (overdue) {
    Box *b = overdue; overdue = b->next;
    KErr e = {all ? PE_SHUTDOWN : PE_TIMEOUT, true, ""};
    snprintf(e.message, sizeof e.message, all ? "producer closed before the broker answered" : "no acknowledgement from the broker within 5.0 seconds");
    box_finish(b, topic, 0, 0, &e);
    box_release(b);
  }
}
static atomic_bool polling = true;
static void *poll_loop(void *arg) {
  (void)arg;
  while (atomic_load(&polling)) { rd_kafka_poll(rk, 50); fail_overdue(false); }
  return NULL;
}
/* ProducerClient.produce: headers, the awaiting queue, producev with the box as opaque. */
static void produce(Exchange *ex, const char *value, size_t vn) {
  if (atomic_load(&kafka_fatal)) {
    KErr e = {PE_FAILED, true, "producer is being replaced after a fatal error"};
    delivered(ex, topic, 0, 0, &e);
    return;
  }
  rd_kafka_headers_t *hdrs = rd_kafka_headers_new(3);
  rd_kafka_header_add(hdrs, "event-type", -1, "guidance.registered", 19);
  rd_kafka_header_add(hdrs, "schema-version", -1, "1", 1);
  rd_kafka_header_add(hdrs, "content-type", -1, "application/json", 16);
  Box *b = xmalloc(sizeof *b);
  atomic_init(&b->refs, 2); atomic_init(&b->finished, false);
  b->ex = ex; b->deadline = mono_ns() + DELIVERY_TIMEOUT_NS; b->next = NULL;
  pthread_mutex_lock(&awaiting_lock);
  if (awaiting_tail) awaiting_tail->next = b; else awaiting_head = b;
  awaiting_tail = b;
  pthread_mutex_unlock(&awaiting_lock);
  pthread_mutex_lock(&handle_lock); handle_uses++; pthread_mutex_unlock(&handle_lock);
  rd_kafka_resp_err_t err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(ex->key, strlen(ex->key)),
                                              RD_KAFKA_V_VALUE((void *)value, vn), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                              RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(b), RD_KAFKA_V_END);
  pthread_mutex_lock(&handle_lock); handle_uses--; pthread_mutex_unlock(&handle_lock);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_headers_destroy(hdrs);
    box_release(b);
    char context[300]; snprintf(context, sizeof context, "produce to %s", topic);
    KErr e = kafka_error(err, context, err == RD_KAFKA_RESP_ERR__FATAL);
    box_finish(b, topic, 0, 0, &e);
  }
}

/* ------------------------------------------------------------------ the registration (IngestHandlers.register) */
/* Reason.detail: ≤ 200 code points, no C0/C1 controls, no bidi controls, trimmed, not blank. */
static char *detail_problem(const char *raw, size_t n, size_t *off, size_t *len) {
  size_t count = 0, i = 0;
  const unsigned char *s = (const unsigned char *)raw;
  while (i < n) {
    uint32_t v = utf8_next(s, n, &i);
    count++;
    if (v <= 0x1F || (v >= 0x7F && v <= 0x9F)) return sfmt("must not contain control characters (found U+%04X)", v);
    if ((v >= 0x202A && v <= 0x202E) || (v >= 0x2066 && v <= 0x2069)) return sfmt("must not contain bidirectional control characters (found U+%04X)", v);
  }
  if (count > 200) return sfmt("must be at most 200 characters (Unicode code points), not %zu", count);
  trim_ws(raw, n, off, len);
  if (!*len) return sfmt("must not be blank; leave it out when there is none");
  return NULL;
}
static void add_problem(FieldErr *p, int *n, const char *field, char *message) { p[*n].field = sfmt("%s", field); p[*n].message = message; (*n)++; }
static void free_problems(FieldErr *p, int n) { for (int i = 0; i < n; i++) { free(p[i].field); free(p[i].message); } }
static void unprocessable(Response *r, FieldErr *p, int n) {
  Buf d = {0};
  for (int i = 0; i < n; i++) {
    if (i) buf_adds(&d, "; ");
    if (*p[i].field) { buf_adds(&d, p[i].field); buf_addc(&d, ' '); }
    buf_adds(&d, p[i].message);
  }
  problem(r, 422, d.p ? d.p : "", p, n, NULL, NULL, NULL, NULL);
  buf_free(&d); free_problems(p, n);
}
static void unauthenticated(Response *r, const char *detail) { problem(r, 401, detail, NULL, 0, "WWW-Authenticate", "Bearer", NULL, NULL); }
static int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }
/* SessionCookie.token(in:): the gate_session cookie, percent-decoded. */
static char *cookie_token(const Exchange *ex, size_t *n) {
  const Header *h = header(ex, "cookie");
  if (!h) return NULL;
  const char *p = h->value, *end = h->value + h->vn;
  while (p < end) {
    const char *e = memchr(p, ';', (size_t)(end - p)); if (!e) e = end;
    const char *q = p; while (q < e && *q == ' ') q++;
    if ((size_t)(e - q) >= 13 && !memcmp(q, "gate_session=", 13)) {
      q += 13;
      if (q == e) return NULL;
      char *out = xmalloc((size_t)(e - q) + 1); size_t k = 0;
      for (; q < e; q++) {
        if (*q == '%') { if (e - q < 3 || hexval(q[1]) < 0 || hexval(q[2]) < 0) { free(out); return NULL; } out[k++] = (char)(hexval(q[1]) * 16 + hexval(q[2])); q += 2; }
        else out[k++] = *q;
      }
      out[k] = 0; *n = k; return out;
    }
    p = e < end ? e + 1 : end;
    if (e == end) break;
  }
  return NULL;
}
static bool ieq(const char *a, size_t an, const char *b) { return strlen(b) == an && !strncasecmp(a, b, an); }
/* Returns true once the event is produced (the connection suspended until its report); false with `r` set. */
static bool handle_register(Exchange *ex, Seg school, Response *r) {
  Roster *ro = atomic_load_explicit(&g_roster, memory_order_acquire);
  /* AccessPolicy.admit: the credential, Origin for a change, school and role */
  const char *tok = NULL; size_t tokn = 0; char *cookie = NULL; bool from_cookie = false;
  const Header *auth = header(ex, "authorization");
  if (auth) {
    if (!(auth->vn > 7 && !strncasecmp(auth->value, "bearer ", 7))) { unauthenticated(r, "send 'Authorization: Bearer <token>'"); return false; }
    size_t off, len; trim_ws(auth->value + 7, auth->vn - 7, &off, &len);
    tok = auth->value + 7 + off; tokn = len;
  } else if ((cookie = cookie_token(ex, &tokn))) { tok = cookie; from_cookie = true; }
  const Header *origin = header(ex, "origin");
  if (!origin) {
    if (from_cookie) { free(cookie); simple_problem(r, 403, "a request signed in by cookie that changes something must carry an Origin header"); return false; }
  } else {
    const Header *host = header(ex, "host");
    bool ok = false;
    if (host) {
      char *a = sfmt("http://%s", host->value), *b = sfmt("https://%s", host->value);
      ok = ieq(origin->value, origin->vn, a) || ieq(origin->value, origin->vn, b);
      free(a); free(b);
    }
    if (!ok) { free(cookie); char *d = sfmt("the request comes from another site (Origin %s); it is refused", origin->value); simple_problem(r, 403, d); free(d); return false; }
  }
  const TeacherRec *teacher = NULL;
  if (ro->auth) {
    if (!tok || !tokn) { free(cookie); unauthenticated(r, "send 'Authorization: Bearer <token>', or sign in on the service's page"); return false; }
    teacher = teacher_for_token(ro, tok, tokn);
    free(cookie);
    if (!teacher) { unauthenticated(r, "the token is not valid"); return false; }
    const School *ts = &ro->schools[teacher->school];
    if (ts->idn != school.n || memcmp(ts->id, school.s, school.n)) { char *d = sfmt("teacher %s belongs to another school", teacher->id); simple_problem(r, 403, d); free(d); return false; }
    if (!(teacher->roles & ((1 << R_GATE) | (1 << R_ADMIN)))) { char *d = sfmt("a %s teacher may not do this", ROLE_NAME[__builtin_ctz((unsigned)teacher->roles)]); simple_problem(r, 403, d); free(d); return false; }
  } else free(cookie);
  /* Request.json: the media type, then the strict parse and the typed read (RegisterRequest(json:)) */
  const Header *ct = header(ex, "content-type");
  const char *cts = ct ? ct->value : ""; size_t ctn = ct ? ct->vn : 0, cpos = 0;
  while (cpos < ctn && cts[cpos] == ';') cpos++;
  size_t cend = cpos; while (cend < ctn && cts[cend] != ';') cend++;
  size_t toff, tlen; trim_ws(cts + cpos, cend - cpos, &toff, &tlen);
  char media[256]; size_t mn = tlen < sizeof media - 1 ? tlen : sizeof media - 1;
  for (size_t i = 0; i < mn; i++) { char c = cts[cpos + toff + i]; media[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c); }
  media[mn] = 0;
  if (!(!strcmp(media, "application/json") || (!strncmp(media, "application/", 12) && mn >= 5 && !strcmp(media + mn - 5, "+json")))) {
    char *d = sfmt("the body must be application/json, got '%s'", mn ? media : "none"); simple_problem(r, 415, d); free(d); return false;
  }
  JValue doc; FieldErr fe = {0};
  if (json_object(ex->body.p, ex->body.n, &ex->arena, &doc, &fe)) { field_problem(r, &fe, 400); return false; }
  const JValue *student, *reason;
  const char *gid_in = NULL, *code = NULL, *detail_in = NULL, *recorded_in = NULL, *occurred_in = NULL;
  size_t gid_n = 0, code_n = 0, detail_n = 0, recorded_n = 0, occurred_n = 0;
  long long grade, cls, number;
  if (jf_object(&doc, "", "student", &student, &fe) || jf_object(&doc, "", "reason", &reason, &fe) ||
      jf_optstring(&doc, "", "guidanceId", &gid_in, &gid_n, &fe) || jf_int(student, "student", "grade", 1, 65535, &grade, &fe) ||
      jf_int(student, "student", "classNumber", 1, 65535, &cls, &fe) || jf_int(student, "student", "number", 1, 65535, &number, &fe) ||
      jf_string(reason, "reason", "code", &code, &code_n, &fe) || jf_optstring(reason, "reason", "detail", &detail_in, &detail_n, &fe) ||
      jf_optstring(&doc, "", "recordedBy", &recorded_in, &recorded_n, &fe) || jf_optstring(&doc, "", "occurredAt", &occurred_in, &occurred_n, &fe)) {
    field_problem(r, &fe, 400); return false;
  }
  double now = now_seconds();
  if (gid_in) {
    if (!is_uuid(gid_in, gid_n)) { fe.field = sfmt("guidanceId"); fe.message = sfmt("must be a UUID"); field_problem(r, &fe, 400); return false; }
    for (int i = 0; i < 36; i++) ex->guidance_id[i] = (char)(gid_in[i] >= 'A' && gid_in[i] <= 'F' ? gid_in[i] + 32 : gid_in[i]);
    ex->guidance_id[36] = 0;
  } else uuid_v4(ex->guidance_id);
  double occurred = now;
  if (occurred_in && !ts_parse(occurred_in, occurred_n, &occurred)) {
    fe.field = sfmt("occurredAt"); fe.message = sfmt("must be an RFC 3339 timestamp with an offset, e.g. 2026-11-30T07:52:10+09:00");
    field_problem(r, &fe, 400); return false;
  }
  const char *rb = recorded_in; size_t rbn = recorded_n;
  if (!rb && teacher) { rb = teacher->id; rbn = teacher->idn; }
  if (!rb) { fe.field = sfmt("recordedBy"); fe.message = sfmt("is required"); field_problem(r, &fe, 422); return false; }
  if (teacher && !(teacher->idn == rbn && !memcmp(teacher->id, rb, rbn))) {
    fe.field = sfmt("recordedBy"); fe.message = sfmt("must be the signed-in teacher %s (or left out)", teacher->id); field_problem(r, &fe, 422); return false;
  }
  /* Roster.registration: every rule it breaks, each naming its field */
  FieldErr probs[8]; int np = 0;
  int si = strmap_get(&ro->school_map, school.s, school.n);
  if (si < 0) { add_problem(probs, &np, "schoolId", sfmt("unknown school '%.*s'", (int)school.n, school.s)); unprocessable(r, probs, np); return false; }
  const School *sc = &ro->schools[si];
  const StudentRec *st = student_at(ro, si, grade, cls, number);
  if (!st) add_problem(probs, &np, "student", sfmt("no student at grade %lld, class %lld, number %lld", grade, cls, number));
  size_t doff = 0, dlen = 0; bool has_detail = false, detail_bad = false;
  if (detail_in) {
    char *m = detail_problem(detail_in, detail_n, &doff, &dlen);
    if (m) { add_problem(probs, &np, "reason.detail", m); detail_bad = true; } else has_detail = true;
  }
  const ReasonDef *rd = NULL;
  for (int k = 0; k < sc->nreasons; k++) if (sc->reasons[k].coden == code_n && !memcmp(sc->reasons[k].code, code, code_n)) { rd = &sc->reasons[k]; break; }
  if (rd) { if (rd->requires && !has_detail && !detail_bad) add_problem(probs, &np, "reason.detail", sfmt("is required for '%s'", rd->code)); }
  else add_problem(probs, &np, "reason.code", sfmt("unknown reason; one of %s", sc->order));
  int ti = strmap_get(&ro->teacher_map, rb, rbn);
  if (ti < 0 || ro->teachers[ti].school != si) add_problem(probs, &np, "recordedBy", sfmt("unknown teacher '%.*s' at this school", (int)rbn, rb));
  if (occurred > now + 5 * 60) add_problem(probs, &np, "occurredAt", sfmt("is more than 5 minutes in the future"));
  else if (occurred < now - 400.0 * 86400) add_problem(probs, &np, "occurredAt", sfmt("is more than 400 days in the past"));
  if (np) { unprocessable(r, probs, np); return false; }
  /* GuidanceRegistered.json, field by field */
  uuid_v4(ex->event_id);
  Buf ev = {0};
  buf_grow(&ev, 512);
  buf_adds(&ev, "{\"schemaVersion\":1,\"type\":\"guidance.registered\",\"eventId\":"); buf_addqs(&ev, ex->event_id);
  buf_adds(&ev, ",\"guidanceId\":"); buf_addqs(&ev, ex->guidance_id);
  buf_adds(&ev, ",\"schoolId\":"); buf_addq(&ev, school.s, school.n);
  buf_adds(&ev, ",\"student\":{\"studentId\":"); buf_addq(&ev, st->id, st->idn);
  buf_adds(&ev, ",\"grade\":"); buf_addi(&ev, grade);
  buf_adds(&ev, ",\"classNumber\":"); buf_addi(&ev, cls);
  buf_adds(&ev, ",\"number\":"); buf_addi(&ev, number);
  buf_adds(&ev, ",\"name\":"); buf_addq(&ev, st->name, st->namen);
  buf_adds(&ev, "},\"reason\":{\"code\":"); buf_addq(&ev, rd->code, rd->coden);
  buf_adds(&ev, ",\"label\":"); buf_addqs(&ev, rd->label);
  buf_adds(&ev, ",\"detail\":");
  if (has_detail) buf_addq(&ev, detail_in + doff, dlen); else buf_adds(&ev, "null");
  buf_adds(&ev, "},\"recordedBy\":"); buf_addq(&ev, rb, rbn);
  Buf t = {0};
  ts_format(occurred, &t);
  buf_adds(&ev, ",\"occurredAt\":"); buf_addq(&ev, t.p, t.n);
  t.n = 0; ts_format(now, &t);
  buf_adds(&ev, ",\"recordedAt\":"); buf_addq(&ev, t.p, t.n);
  buf_addc(&ev, '}');
  buf_free(&t);
  char key[256]; int kn = snprintf(key, sizeof key, "%.*s/%lld", (int)(school.n < 200 ? school.n : 200), school.s, grade);
  ex->key = arena_dup(&ex->arena, key, (size_t)kn);
  suspend(ex);
  produce(ex, ev.p, ev.n);
  buf_free(&ev);
  return true;
}

/* ------------------------------------------------------------------ /metrics */
static void render_metrics(Response *r) {
  Buf *b = &r->body;
  r->status = 200; r->ctype = "text/plain; version=0.0.4; charset=utf-8";
  buf_adds(b, "# HELP http_request_duration_seconds Time from the request's first byte to its completion.\n# TYPE http_request_duration_seconds histogram\n");
  for (int rt = 0; rt <= NROUTES; rt++) {
    unsigned long long cum = 0, count = 0;
    for (size_t i = 0; i <= NB; i++) count += atomic_load(&http_bucket[rt][i]);
    if (!count) continue;
    const char *route = rt ? ROUTES[rt - 1].pattern : "unmatched";
    for (size_t i = 0; i < NB; i++) {
      cum += atomic_load(&http_bucket[rt][i]);
      char line[256]; snprintf(line, sizeof line, "http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", route, BOUNDS[i], cum); buf_adds(b, line);
    }
    char line[512];
    snprintf(line, sizeof line, "http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\nhttp_request_duration_seconds_sum{route=\"%s\"} %.9f\nhttp_request_duration_seconds_count{route=\"%s\"} %llu\n",
             route, count, route, (double)atomic_load(&http_sum_ns[rt]) / 1e9, route, count);
    buf_adds(b, line);
  }
  buf_adds(b, "# HELP http_requests_total HTTP requests by route, method and status.\n# TYPE http_requests_total counter\n");
  for (int rt = 0; rt <= NROUTES; rt++)
    for (int m = 0; m < 5; m++)
      for (int s = 0; s < 600; s++) {
        unsigned long long v = atomic_load(&http_total[rt][m][s]);
        if (!v) continue;
        char line[256]; snprintf(line, sizeof line, "http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %llu\n", rt ? ROUTES[rt - 1].pattern : "unmatched", METHODS[m], s, v);
        buf_adds(b, line);
      }
  buf_adds(b, "# HELP ingest_produce_errors_total Events the broker did not acknowledge, by reason.\n# TYPE ingest_produce_errors_total counter\n");
  for (int i = 0; i < PE_N; i++) {
    unsigned long long v = atomic_load(&produce_errors[i]);
    if (v) { char line[128]; snprintf(line, sizeof line, "ingest_produce_errors_total{code=\"%s\"} %llu\n", PE_NAME[i], v); buf_adds(b, line); }
  }
  char line[256];
  snprintf(line, sizeof line, "# HELP ingest_events_in_flight Events produced and awaiting the broker's acknowledgement.\n# TYPE ingest_events_in_flight gauge\ningest_events_in_flight %d\n", rd_kafka_outq_len(rk));
  buf_adds(b, line);
}

/* ------------------------------------------------------------------ libmicrohttpd callbacks (accessHandler, completedHandler) */
static enum MHD_Result dispatch(Exchange *ex) {
  Response r = {0};
  if (!atomic_load(&serving)) { problem(&r, 503, "the server is shutting down", NULL, 0, "Retry-After", "1", NULL, NULL); return queue(ex, &r); }
  if (ex->too_large) { char d[96]; snprintf(d, sizeof d, "the body is larger than %d bytes", MAX_BODY); simple_problem(&r, 413, d); return queue(ex, &r); }
  Seg school = {0};
  int route = resolve(ex, &school, &r);
  if (route < 0) return queue(ex, &r);
  ex->route = route;
  switch (ROUTES[route].handler) {
  case H_REGISTER:
    if (handle_register(ex, school, &r)) return MHD_YES;
    return queue(ex, &r);
  case H_HEALTH:
    r.status = 200; r.ctype = "application/json"; buf_adds(&r.body, "{\"status\":\"ok\"}");
    return queue(ex, &r);
  case H_METRICS:
    render_metrics(&r);
    return queue(ex, &r);
  default:
    simple_problem(&r, 501, "this route is not part of the C equal-work anchor");
    return queue(ex, &r);
  }
}
static enum MHD_Result access_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                      const char *data, size_t *size, void **slot) {
  (void)cls; (void)version;
  Exchange *ex = *slot;
  if (!ex) {
    ex = calloc(1, sizeof *ex);
    ex->conn = c;
    ex->started = mono_ns();
    ex->route = -1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    ex->cs = ci ? ci->socket_context : NULL;
    ex->method = arena_dup(&ex->arena, method ? method : "GET", method ? strlen(method) : 3);
    ex->path = arena_dup(&ex->arena, url ? url : "/", url ? strlen(url) : 1);
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, ex);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_query, ex);
    request_id(ex);
    *slot = ex;
    atomic_fetch_add(&in_flight, 1);
    Response r = {0};
    if (!early_problem(ex, &r)) return MHD_YES;
    if (ex->cs) received(ex->cs);
    return queue(ex, &r);
  }
  if (*size) {
    if (!ex->too_large) {
      if (ex->body.n + *size > MAX_BODY) { ex->too_large = true; buf_free(&ex->body); }
      else buf_add(&ex->body, data, *size);
    }
    *size = 0;
    return MHD_YES;
  }
  int answered = PH_ANSWERED;
  if (atomic_compare_exchange_strong(&ex->phase, &answered, PH_QUEUED)) return queue(ex, &ex->answer);
  if (ex->cs) received(ex->cs);
  return dispatch(ex);
}
static void completed(void *cls, struct MHD_Connection *c, void **slot, enum MHD_RequestTerminationCode reason) {
  (void)cls;
  Exchange *ex = *slot;
  if (!ex) return;
  *slot = NULL;
  atomic_fetch_sub(&in_flight, 1);
  uint64_t ns = mono_ns() - ex->started;
  record_http(ex->route, ex->method, ex->status, ns);
  bool failed = reason != MHD_REQUEST_TERMINATED_COMPLETED_OK;
  if (failed || ex->status >= 500 || log_min <= L_DEBUG) {
    char status[16], ms[32], why[16];
    snprintf(status, sizeof status, "%d", ex->status); snprintf(ms, sizeof ms, "%.2f", (double)ns / 1e6); snprintf(why, sizeof why, "%d", (int)reason);
    KV kv[] = {KVS("requestId", ex->request_id), KVS("method", ex->method), KVS("route", ex->route >= 0 ? ROUTES[ex->route].pattern : "unmatched"),
               KVS("status", status), KVS("ms", ms), KVS("reason", why)};
    if (failed) log_kv(L_INFO, "request ended before its answer was sent", kv, 6);
    else if (ex->status >= 500) log_kv(L_ERROR, "request failed", kv, 5);
    else log_kv(L_DEBUG, "request", kv, 5);
  }
  Conn *cs = ex->cs;
  buf_free(&ex->body);
  arena_free(&ex->arena);
  free(ex);
  if (c && cs) receiving(c, cs);
}
static void connection_cb(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code) {
  (void)cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    Conn *cs = calloc(1, sizeof *cs);
    *socket_context = cs;
    receiving(c, cs);
  } else {
    Conn *cs = *socket_context;
    if (cs) { received(cs); free(cs); *socket_context = NULL; }
  }
}
/* %HH decoded in place except %00 (guidance_mhd_unescape). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *text) {
  (void)cls; (void)c;
  char *rd = text, *wr = text;
  while (*rd) {
    if (rd[0] == '%' && rd[1] && rd[2]) {
      int hi = hexval(rd[1]), lo = hexval(rd[2]);
      if (hi >= 0 && lo >= 0 && (hi || lo)) { *wr++ = (char)(hi * 16 + lo); rd += 3; continue; }
    }
    *wr++ = *rd++;
  }
  *wr = 0;
  return (size_t)(wr - text);
}

/* ------------------------------------------------------------------ main */
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s PORT BOOTSTRAP ROSTER_DIR [TOPIC]\n", argv[0]); return 2; }
  if (argc > 4) topic = argv[4];
  const char *level = getenv("LOG_LEVEL");
  if (level && *level) {
    if (!strcasecmp(level, "debug") || !strcasecmp(level, "trace")) log_min = L_DEBUG;
    else if (!strcasecmp(level, "info")) log_min = L_INFO;
    else if (!strcasecmp(level, "warning") || !strcasecmp(level, "warn")) log_min = L_WARNING;
    else if (!strcasecmp(level, "error")) log_min = L_ERROR;
    else die("LOG_LEVEL: '%s' is not one of debug, info, warning, error", level);
  }
  sigset_t stop; sigemptyset(&stop); sigaddset(&stop, SIGTERM); sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);
  routes_init();
  uint32_t prefix; if (getrandom(&prefix, sizeof prefix, 0) != sizeof prefix) prefix = (uint32_t)getpid();
  snprintf(id_prefix, sizeof id_prefix, "%x-", prefix);
  Roster *ro = load_roster(argv[3]);
  atomic_store(&g_roster, ro);
  /* ProducerConfig.properties: typed defaults, then the enforced ones */
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  const char *kv[][2] = {{"bootstrap.servers", argv[2]}, {"client.id", "guidance-ingest"}, {"message.timeout.ms", "5000"},
                         {"linger.ms", "1"}, {"queue.buffering.max.messages", "100000"}, {"log_level", "6"},
                         {"enable.idempotence", "true"}, {"acks", "all"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], err, sizeof err) != RD_KAFKA_CONF_OK) die("%s=%s: %s", kv[i][0], kv[i][1], err);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) die("cannot create Kafka client: %s", err);
  pthread_t poller, reap;
  pthread_create(&poller, NULL, poll_loop, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = (unsigned)(cpus > 2 ? cpus : 2);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  struct MHD_OptionItem options[] = {
      {MHD_OPTION_THREAD_POOL_SIZE, threads, NULL},
      {MHD_OPTION_CONNECTION_LIMIT, 1000, NULL},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, 500, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL},
      {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
      {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL},
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)connection_cb, NULL},
      {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape, NULL},
      {MHD_OPTION_SOCK_ADDR, 0, &addr},
      {MHD_OPTION_END, 0, NULL},
  };
  daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, (uint16_t)atoi(argv[1]), NULL, NULL,
                             access_handler, NULL, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
  if (!daemon_) die("could not listen on port %s", argv[1]);
  pthread_create(&reap, NULL, reaper, NULL);
  {
    char port[16], th[16], st[24], sc[16], te[16];
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(port, sizeof port, "%u", di ? di->port : 0); snprintf(th, sizeof th, "%u", threads);
    snprintf(st, sizeof st, "%zu", ro->nstudents); snprintf(sc, sizeof sc, "%d", ro->nschools); snprintf(te, sizeof te, "%d", ro->nteachers);
    KV a[] = {KVS("schools", sc), KVS("students", st), KVS("teachers", te)}; log_kv(L_INFO, "roster loaded", a, 3);
    KV b[] = {KVS("port", port), KVS("threads", th)}; log_kv(L_INFO, "listening", b, 2);
  }
  int sig = 0;
  sigwait(&stop, &sig);
  /* HTTPServer.shutdown: stop taking requests, drain, answer the rest 503; then flush the producer */
  log_kv(L_INFO, "shutting down: draining requests", NULL, 0);
  atomic_store(&serving, false);
  MHD_socket listener = MHD_quiesce_daemon(daemon_);
  uint64_t deadline = mono_ns() + 10000000000ULL;
  while (atomic_load(&in_flight) > 0 && mono_ns() < deadline) usleep(20000);
  for (;;) {
    pthread_mutex_lock(&suspended_lock);
    Exchange *ex = suspended_head.snext != &suspended_head ? suspended_head.snext : NULL;
    if (ex) { ex->in_suspended = false; ex->sprev->snext = ex->snext; ex->snext->sprev = ex->sprev; }
    pthread_mutex_unlock(&suspended_lock);
    if (!ex) break;
    Response r = {0};
    problem(&r, 503, "the server is shutting down", NULL, 0, "Retry-After", "1", NULL, NULL);
    finish(ex, &r, true);
  }
  deadline = mono_ns() + 1000000000ULL;
  while (atomic_load(&in_flight) > 0 && mono_ns() < deadline) usleep(10000);
  MHD_stop_daemon(daemon_);
  if (listener != MHD_INVALID_SOCKET) close(listener);
  rd_kafka_flush(rk, 5000);
  atomic_store(&polling, false);
  pthread_join(poller, NULL);
  fail_overdue(true);
  rd_kafka_destroy(rk);
  log_kv(L_INFO, "shut down", NULL, 0);
  return 0;
}
