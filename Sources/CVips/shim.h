#include <dlfcn.h>
#include <stddef.h>

/* libvips (Debian's libvips42), loaded when the first photo is made, not
 * when the process starts: a notifier or an ingest that never resizes a
 * photo keeps its tree of some 100 libraries (GLib, librsvg, OpenEXR, HDF5,
 * …; about 15 MiB resident in the idle notifier) out of memory. Only these functions touch it;
 * its options are variadic, so C calls them and Swift calls these. */

typedef struct _VipsImage VipsImage;

/* The functions found in the library; Swift imports no static variable of a
 * header, so they live in a function's. */
struct guidance_vips {
    int (*vips_init)(const char *);
    unsigned (*g_log_set_handler)(const char *, int, void (*)(const char *, int, const char *, void *), void *);
    void (*vips_cache_set_max)(int);
    void (*vips_concurrency_set)(int);
    int (*vips_thumbnail_buffer)(void *, size_t, VipsImage **, int, ...);
    VipsImage *(*vips_image_copy_memory)(VipsImage *);
    int (*vips_jpegsave_buffer)(VipsImage *, void **, size_t *, ...);
    void (*vips_thread_shutdown)(void);
    const char *(*vips_error_buffer)(void);
    void (*vips_error_clear)(void);
    void (*g_object_unref)(void *);
    char *(*g_strdup)(const char *);
    void (*g_free)(void *);
};

static inline struct guidance_vips *guidance_vips(void) {
    static struct guidance_vips functions;
    return &functions;
}

static inline void guidance_vips_silent(const char *domain, int level, const char *message, void *context) {}

/* Loads libvips and starts it once per process (the caller runs this once):
 * no operation cache (each photo is made once and kept by the caller), one
 * worker thread per call (the service's own threads are the parallelism),
 * and its warnings not printed (a damaged file fails the call instead, and
 * the caller logs that in its own format). Returns 0 when it started; -1
 * when the library or one of its functions is missing, -2 when it did not start. */
static inline int guidance_vips_start(void) {
    void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_LOCAL);
    if (!library) return -1;
    struct guidance_vips *vips = guidance_vips();
#define GUIDANCE_VIPS_FIND(name) if (!(*(void **)&vips->name = dlsym(library, #name))) return -1
    GUIDANCE_VIPS_FIND(vips_init);
    GUIDANCE_VIPS_FIND(g_log_set_handler);
    GUIDANCE_VIPS_FIND(vips_cache_set_max);
    GUIDANCE_VIPS_FIND(vips_concurrency_set);
    GUIDANCE_VIPS_FIND(vips_thumbnail_buffer);
    GUIDANCE_VIPS_FIND(vips_image_copy_memory);
    GUIDANCE_VIPS_FIND(vips_jpegsave_buffer);
    GUIDANCE_VIPS_FIND(vips_thread_shutdown);
    GUIDANCE_VIPS_FIND(vips_error_buffer);
    GUIDANCE_VIPS_FIND(vips_error_clear);
    GUIDANCE_VIPS_FIND(g_object_unref);
    GUIDANCE_VIPS_FIND(g_strdup);
    GUIDANCE_VIPS_FIND(g_free);
#undef GUIDANCE_VIPS_FIND
    if (vips->vips_init("guidance")) return -2;
    /* G_LOG_LEVEL_WARNING */
    vips->g_log_set_handler("VIPS", 1 << 4, guidance_vips_silent, NULL);
    vips->vips_cache_set_max(0);
    vips->vips_concurrency_set(1);
    return 0;
}

/* A JPEG of the image in `input` (JPEG, PNG, WebP, …) that fits width×height,
 * never enlarged, turned as its EXIF orientation says, without metadata; a
 * truncated or damaged file is an error, not half a photo.
 * On success *output holds the bytes (free them with guidance_vips_free) and it returns 0. */
static inline int guidance_vips_smaller_jpeg(const void *input, size_t input_length, int width, int height, int quality,
                                              void **output, size_t *output_length) {
    struct guidance_vips *vips = guidance_vips();
    VipsImage *image = NULL;
    /* "size": VIPS_SIZE_DOWN (2). */
    if (vips->vips_thumbnail_buffer((void *)input, input_length, &image, width, "height", height, "size", 2,
                                       /* libvips 8.14 passes fail_on to a buffer's loader only in its option string. */
                                       "option_string", "fail_on=truncated", NULL)) return -1;
    /* Made whole in memory first: a read error surfaces here, where a save to a buffer can miss it. */
    VipsImage *made = vips->vips_image_copy_memory(image);
    vips->g_object_unref(image);
    if (!made) return -1;
    int failed = vips->vips_jpegsave_buffer(made, output, output_length, "Q", quality, "strip", 1, "optimize_coding", 1, NULL);
    vips->g_object_unref(made);
    /* This thread's libvips buffers go now, not when the thread ends (the service's threads live long). */
    vips->vips_thread_shutdown();
    return failed;
}

/* libvips's last error message, then forgotten; the caller frees it with guidance_vips_free. */
static inline char *guidance_vips_take_error(void) {
    struct guidance_vips *vips = guidance_vips();
    char *message = vips->g_strdup(vips->vips_error_buffer());
    vips->vips_error_clear();
    return message;
}

/* Frees what libvips gave (GLib's g_free). */
static inline void guidance_vips_free(void *memory) { guidance_vips()->g_free(memory); }
