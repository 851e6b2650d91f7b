#ifndef CVIPS_SHIM_H
#define CVIPS_SHIM_H

#include <vips/vips.h>

/* libvips' entry points take their optional arguments as NULL-terminated varargs, which Swift
 * cannot call: each use is wrapped here with a fixed signature. */

/* VIPS_INIT is a macro. Called once per process; nothing is kept in libvips' operation cache
 * (every image is seen once), so memory stays flat however many images are processed. */
static inline int cvips_start(void) {
    if (VIPS_INIT("jobrun") != 0) return -1;
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_concurrency_set(1);
    return 0;
}

/* Decodes `buffer` (shrink-on-load: a JPEG is decoded at the smallest scale that still covers
 * the box) into an image that fits in width x height, never enlarged. A truncated or corrupt
 * file fails instead of being padded with grey. */
static inline int cvips_thumbnail_buffer(const void *buffer, size_t length, int width, int height, VipsImage **out) {
    return vips_thumbnail_buffer((void *)buffer, length, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                                 "option_string", "fail_on=truncated", NULL);
}

/* The same from a file (what `vipsthumbnail` does). */
static inline int cvips_thumbnail_file(const char *path, int width, int height, VipsImage **out) {
    char name[4096];
    snprintf(name, sizeof name, "%s[fail_on=truncated]", path);
    return vips_thumbnail(name, out, width, "height", height, "size", VIPS_SIZE_DOWN, NULL);
}

static inline int cvips_gaussblur(VipsImage *in, double sigma, VipsImage **out) {
    return vips_gaussblur(in, out, sigma, NULL);
}

/* Baseline JPEG without metadata; free `*buffer` with g_free. */
static inline int cvips_jpegsave_buffer(VipsImage *in, int quality, void **buffer, size_t *length) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, NULL);
}

static inline int cvips_width(VipsImage *image) { return vips_image_get_width(image); }
static inline int cvips_height(VipsImage *image) { return vips_image_get_height(image); }
static inline void cvips_unref(VipsImage *image) { g_object_unref(image); }
static inline void cvips_free(void *p) { g_free(p); }

/* The calling thread's last errors, cleared; free with g_free. */
static inline char *cvips_take_error(void) { return vips_error_buffer_copy(); }

#endif
