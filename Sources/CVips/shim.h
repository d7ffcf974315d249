#include <vips/vips.h>

/* libvips's options are variadic; Swift calls these. */

static inline void guidance_vips_silent(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer context) {}

/* Starts libvips once per process: no operation cache (each photo is made
 * once and kept by the caller), one worker thread per call (the service's
 * own threads are the parallelism), and its warnings not printed (a damaged
 * file fails the call instead, and the caller logs that in its own format).
 * Returns 0 when it started. */
static inline int guidance_vips_start(void) {
    if (VIPS_INIT("guidance")) return -1;
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, guidance_vips_silent, NULL);
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    return 0;
}

/* A JPEG of the image in `input` (JPEG, PNG, WebP, …) that fits width×height,
 * never enlarged, turned as its EXIF orientation says, without metadata; a
 * truncated or damaged file is an error, not half a photo.
 * On success *output holds the bytes (free them with g_free) and it returns 0. */
static inline int guidance_vips_smaller_jpeg(const void *input, size_t input_length, int width, int height, int quality,
                                              void **output, size_t *output_length) {
    VipsImage *image = NULL;
    if (vips_thumbnail_buffer((void *)input, input_length, &image, width, "height", height, "size", VIPS_SIZE_DOWN,
                              /* libvips 8.14 passes fail_on to a buffer's loader only in its option string. */
                              "option_string", "fail_on=truncated", NULL)) return -1;
    /* Made whole in memory first: a read error surfaces here, where a save to a buffer can miss it. */
    VipsImage *made = vips_image_copy_memory(image);
    g_object_unref(image);
    if (!made) return -1;
    int failed = vips_jpegsave_buffer(made, output, output_length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
    g_object_unref(made);
    /* This thread's libvips buffers go now, not when the thread ends (the service's threads live long). */
    vips_thread_shutdown();
    return failed;
}

/* libvips's last error message, then forgotten; the caller frees it with g_free. */
static inline char *guidance_vips_take_error(void) {
    char *message = g_strdup(vips_error_buffer());
    vips_error_clear();
    return message;
}
