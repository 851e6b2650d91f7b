#ifndef CVIPS_SHIM_H
#define CVIPS_SHIM_H

#include <stddef.h>
#include <stdio.h>

/* The few libvips 8 entry points jobrun uses, as the types of the addresses `dlsym` resolves.
 * Nothing here links libvips: a process loads it the first time it makes a representation
 * (VipsLibrary.swift), so no other command pays for its seventy-odd shared libraries. Each
 * wrapper takes the resolved symbol as `const void *` and calls it as the type libvips declares
 * for it in <vips/vips.h> (stable ABI since 8.0); the wrappers hold no state. Not including
 * <vips/vips.h> keeps glib's headers out of every Swift import and libvips-dev out of the
 * build. */
typedef struct _VipsImage VipsImage;
typedef int (*cvips_init_fn)(const char *argv0);
typedef void (*cvips_cache_set_max_fn)(int max);
typedef void (*cvips_cache_set_max_mem_fn)(size_t max_mem);
typedef void (*cvips_concurrency_set_fn)(int concurrency);
typedef int (*cvips_thumbnail_fn)(const char *filename, VipsImage **out, int width, ...);
typedef int (*cvips_thumbnail_image_fn)(VipsImage *in, VipsImage **out, int width, ...);
typedef VipsImage *(*cvips_image_copy_memory_fn)(VipsImage *image);
typedef int (*cvips_image_get_size_fn)(const VipsImage *image);
typedef const void *(*cvips_image_get_data_fn)(VipsImage *image);
typedef VipsImage *(*cvips_image_new_from_memory_copy_fn)(const void *data, size_t size, int width, int height, int bands, int format);
typedef int (*cvips_shrink_fn)(VipsImage *in, VipsImage **out, double hshrink, double vshrink, ...);
typedef int (*cvips_gaussblur_fn)(VipsImage *in, VipsImage **out, double sigma, ...);
typedef int (*cvips_jpegsave_buffer_fn)(VipsImage *in, void **buf, size_t *len, ...);
typedef char *(*cvips_error_buffer_copy_fn)(void);
typedef void (*cvips_g_object_unref_fn)(void *object);
typedef void (*cvips_g_free_fn)(void *mem);

/* VipsSize: VIPS_SIZE_BOTH, VIPS_SIZE_UP, VIPS_SIZE_DOWN, VIPS_SIZE_FORCE. */
#define CVIPS_SIZE_DOWN 2
/* VipsPrecision: VIPS_PRECISION_INTEGER, VIPS_PRECISION_FLOAT, VIPS_PRECISION_APPROXIMATE. */
#define CVIPS_PRECISION_INTEGER 0

/* libvips' optional arguments are NULL-terminated varargs, which Swift cannot call: each use is
 * wrapped here with a fixed signature. */

/* Once per process. Nothing is kept in libvips' operation cache (every image is seen once), so
 * memory stays flat however many images are processed; one worker thread per image (callers
 * run images in parallel). */
static inline int cvips_start(const void *vips_init, const void *vips_cache_set_max, const void *vips_cache_set_max_mem,
                              const void *vips_concurrency_set) {
    if (((cvips_init_fn)vips_init)("jobrun") != 0) return -1;
    ((cvips_cache_set_max_fn)vips_cache_set_max)(0);
    ((cvips_cache_set_max_mem_fn)vips_cache_set_max_mem)(0);
    ((cvips_concurrency_set_fn)vips_concurrency_set)(1);
    return 0;
}

/* Decodes the file at `path` into an image that fits in width x height, never enlarged
 * (shrink-on-load: a JPEG is decoded at the smallest scale that still covers the box). A
 * truncated or corrupt file fails instead of being padded with grey. */
static inline int cvips_thumbnail_file(const void *vips_thumbnail, const char *path, int width, int height, VipsImage **out) {
    char name[4096];
    if (snprintf(name, sizeof name, "%s[fail_on=truncated]", path) >= (int)sizeof name) return -1;
    return ((cvips_thumbnail_fn)vips_thumbnail)(name, out, width, "height", height, "size", CVIPS_SIZE_DOWN, NULL);
}

/* `in` resized to fit in width x height, never enlarged: for an image already in memory. */
static inline int cvips_thumbnail_image(const void *vips_thumbnail_image, VipsImage *in, int width, int height, VipsImage **out) {
    return ((cvips_thumbnail_image_fn)vips_thumbnail_image)(in, out, width, "height", height, "size", CVIPS_SIZE_DOWN, NULL);
}

/* Runs the lazy pipeline behind `in` once into memory (a decode happens here, and fails here),
 * so several outputs can be made from it without decoding again; NULL on failure. */
static inline VipsImage *cvips_copy_memory(const void *vips_image_copy_memory, VipsImage *in) {
    return ((cvips_image_copy_memory_fn)vips_image_copy_memory)(in);
}

/* `in` shrunk by an integer factor on both axes with a box filter (each output pixel the mean of
 * factor x factor input pixels). Unlike a resize, it builds no vector program. */
static inline int cvips_shrink(const void *vips_shrink, VipsImage *in, int factor, VipsImage **out) {
    return ((cvips_shrink_fn)vips_shrink)(in, out, (double)factor, (double)factor, NULL);
}

/* libvips's exact Gaussian blur (integer convolution): the reference the placeholder's own blur
 * is checked against. */
static inline int cvips_gaussblur(const void *vips_gaussblur, VipsImage *in, double sigma, VipsImage **out) {
    return ((cvips_gaussblur_fn)vips_gaussblur)(in, out, sigma, "precision", CVIPS_PRECISION_INTEGER, NULL);
}

/* Baseline JPEG without metadata; free `*buffer` with cvips_free. */
static inline int cvips_jpegsave_buffer(const void *vips_jpegsave_buffer, VipsImage *in, int quality, void **buffer, size_t *length) {
    return ((cvips_jpegsave_buffer_fn)vips_jpegsave_buffer)(in, buffer, length, "Q", quality, "strip", 1, NULL);
}

static inline int cvips_image_width(const void *vips_image_get_width, VipsImage *image) {
    return ((cvips_image_get_size_fn)vips_image_get_width)(image);
}
static inline int cvips_image_height(const void *vips_image_get_height, VipsImage *image) {
    return ((cvips_image_get_size_fn)vips_image_get_height)(image);
}

/* Bands and band format (VipsBandFormat; 0 is VIPS_FORMAT_UCHAR) of `image`: the same signature
 * as its width and height. */
#define CVIPS_FORMAT_UCHAR 0
static inline int cvips_image_bands(const void *vips_image_get_bands, VipsImage *image) {
    return ((cvips_image_get_size_fn)vips_image_get_bands)(image);
}
static inline int cvips_image_format(const void *vips_image_get_format, VipsImage *image) {
    return ((cvips_image_get_size_fn)vips_image_get_format)(image);
}

/* The pixels of an image in memory (`vips_image_copy_memory`'s result), band-packed rows; NULL
 * on failure. */
static inline const void *cvips_image_data(const void *vips_image_get_data, VipsImage *image) {
    return ((cvips_image_get_data_fn)vips_image_get_data)(image);
}

/* A new image in memory holding a copy of `size` bytes of 8-bit band-packed rows. */
static inline VipsImage *cvips_image_from_uchar_pixels(const void *vips_image_new_from_memory_copy, const void *data, size_t size,
                                                       int width, int height, int bands) {
    return ((cvips_image_new_from_memory_copy_fn)vips_image_new_from_memory_copy)(data, size, width, height, bands, CVIPS_FORMAT_UCHAR);
}

static inline void cvips_unref(const void *g_object_unref, VipsImage *image) { ((cvips_g_object_unref_fn)g_object_unref)(image); }
static inline void cvips_free(const void *g_free, void *p) { ((cvips_g_free_fn)g_free)(p); }

/* The errors so far, cleared; free with cvips_free. */
static inline char *cvips_take_error(const void *vips_error_buffer_copy) {
    return ((cvips_error_buffer_copy_fn)vips_error_buffer_copy)();
}

#endif
