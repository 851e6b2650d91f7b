#ifndef CVIPS_SHIM_H
#define CVIPS_SHIM_H

#include <stddef.h>
#include <stdio.h>

/* The few libvips 8 entry points jobrun uses, declared as <vips/vips.h> declares them (stable
 * ABI since 8.0). Not including <vips/vips.h> keeps glib's headers out of every Swift import,
 * and keeps pkg-config's `-pthread`, a flag SwiftPM refuses with a warning on every build, out of
 * the package: the module links libvips, libgobject and libglib by name. */
typedef struct _VipsImage VipsImage;
int vips_init(const char *argv0);
void vips_cache_set_max(int max);
void vips_cache_set_max_mem(size_t max_mem);
void vips_concurrency_set(int concurrency);
int vips_thumbnail(const char *filename, VipsImage **out, int width, ...);
int vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, ...);
VipsImage *vips_image_copy_memory(VipsImage *image);
int vips_gaussblur(VipsImage *in, VipsImage **out, double sigma, ...);
int vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, ...);
int vips_image_get_width(const VipsImage *image);
int vips_image_get_height(const VipsImage *image);
char *vips_error_buffer_copy(void);
void g_object_unref(void *object);
void g_free(void *mem);

/* VipsSize: VIPS_SIZE_BOTH, VIPS_SIZE_UP, VIPS_SIZE_DOWN, VIPS_SIZE_FORCE. */
#define CVIPS_SIZE_DOWN 2

/* libvips' optional arguments are NULL-terminated varargs, which Swift cannot call: each use is
 * wrapped here with a fixed signature. */

/* Once per process. Nothing is kept in libvips' operation cache (every image is seen once), so
 * memory stays flat however many images are processed; one worker thread per image (callers
 * run images in parallel). */
static inline int cvips_start(void) {
    if (vips_init("jobrun") != 0) return -1;
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_concurrency_set(1);
    return 0;
}

/* Decodes the file at `path` into an image that fits in width x height, never enlarged
 * (shrink-on-load: a JPEG is decoded at the smallest scale that still covers the box). A
 * truncated or corrupt file fails instead of being padded with grey. */
static inline int cvips_thumbnail_file(const char *path, int width, int height, VipsImage **out) {
    char name[4096];
    if (snprintf(name, sizeof name, "%s[fail_on=truncated]", path) >= (int)sizeof name) return -1;
    return vips_thumbnail(name, out, width, "height", height, "size", CVIPS_SIZE_DOWN, NULL);
}

/* `in` resized to fit in width x height, never enlarged: for an image already in memory. */
static inline int cvips_thumbnail_image(VipsImage *in, int width, int height, VipsImage **out) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", CVIPS_SIZE_DOWN, NULL);
}

/* Runs the lazy pipeline behind `in` once into memory (a decode happens here, and fails here),
 * so several outputs can be made from it without decoding again; NULL on failure. */
static inline VipsImage *cvips_copy_memory(VipsImage *in) { return vips_image_copy_memory(in); }

static inline int cvips_gaussblur(VipsImage *in, double sigma, VipsImage **out) {
    return vips_gaussblur(in, out, sigma, NULL);
}

/* Baseline JPEG without metadata; free `*buffer` with cvips_free. */
static inline int cvips_jpegsave_buffer(VipsImage *in, int quality, void **buffer, size_t *length) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", 1, NULL);
}

static inline int cvips_width(VipsImage *image) { return vips_image_get_width(image); }
static inline int cvips_height(VipsImage *image) { return vips_image_get_height(image); }
static inline void cvips_unref(VipsImage *image) { g_object_unref(image); }
static inline void cvips_free(void *p) { g_free(p); }

/* The errors so far, cleared; free with cvips_free. */
static inline char *cvips_take_error(void) { return vips_error_buffer_copy(); }

#endif
