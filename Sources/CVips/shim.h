#ifndef CVIPS_SHIM_H
#define CVIPS_SHIM_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

/* The few libvips 8 entry points jobrun uses, with the types <vips/vips.h> declares (stable ABI
 * since 8.0). Not including <vips/vips.h> keeps glib's headers out of every Swift import, and
 * keeps pkg-config's `-pthread`, a flag SwiftPM refuses with a warning on every build, out of
 * the package.
 *
 * libvips is opened when the first representation is made (`cvips_start`), not linked: linked,
 * it and the libraries it pulls in (glib, librsvg, OpenEXR, HDF5 and some sixty more) were
 * loaded and relocated in every jobrun process at start, about 11 MB of resident memory in a
 * process that only downloads. The entry points are found with dlsym and kept here; only one
 * Swift file calls this header, so there is one copy of them. */
typedef struct _VipsImage VipsImage;

struct cvips_api {
    int (*init)(const char *argv0);
    void (*cache_set_max)(int max);
    void (*cache_set_max_mem)(size_t max_mem);
    void (*concurrency_set)(int concurrency);
    int (*thumbnail)(const char *filename, VipsImage **out, int width, ...);
    int (*gaussblur)(VipsImage *in, VipsImage **out, double sigma, ...);
    int (*jpegsave_buffer)(VipsImage *in, void **buf, size_t *len, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_height)(const VipsImage *image);
    char *(*error_buffer_copy)(void);
    void (*object_unref)(void *object);
    void (*free)(void *mem);
    /* Why libvips could not be started, when it could not be loaded; NULL otherwise. */
    const char *failure;
};

static inline struct cvips_api *cvips_api(void) {
    static struct cvips_api api;
    return &api;
}

/* `name` from `library` (its dependencies included) into `*slot`; 0 when found. */
static inline int cvips_find(void *library, const char *name, void **slot) {
    *slot = dlsym(library, name);
    return *slot ? 0 : -1;
}

/* VipsSize: VIPS_SIZE_BOTH, VIPS_SIZE_UP, VIPS_SIZE_DOWN, VIPS_SIZE_FORCE. */
#define CVIPS_SIZE_DOWN 2

/* libvips' optional arguments are NULL-terminated varargs, which Swift cannot call: each use is
 * wrapped here with a fixed signature. */

/* Once per process: loads libvips and starts it. Nothing is kept in libvips' operation cache
 * (every image is seen once), so memory stays flat however many images are processed; one
 * worker thread per image (callers run images in parallel). */
static inline int cvips_start(void) {
    struct cvips_api *a = cvips_api();
    void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        a->failure = "libvips 8 (libvips.so.42) cannot be loaded: is libvips42 installed?";
        return -1;
    }
    if (cvips_find(library, "vips_init", (void **)&a->init) || cvips_find(library, "vips_cache_set_max", (void **)&a->cache_set_max)
        || cvips_find(library, "vips_cache_set_max_mem", (void **)&a->cache_set_max_mem)
        || cvips_find(library, "vips_concurrency_set", (void **)&a->concurrency_set)
        || cvips_find(library, "vips_thumbnail", (void **)&a->thumbnail) || cvips_find(library, "vips_gaussblur", (void **)&a->gaussblur)
        || cvips_find(library, "vips_jpegsave_buffer", (void **)&a->jpegsave_buffer)
        || cvips_find(library, "vips_image_get_width", (void **)&a->image_get_width)
        || cvips_find(library, "vips_image_get_height", (void **)&a->image_get_height)
        || cvips_find(library, "vips_error_buffer_copy", (void **)&a->error_buffer_copy)
        || cvips_find(library, "g_object_unref", (void **)&a->object_unref) || cvips_find(library, "g_free", (void **)&a->free)) {
        a->failure = "libvips.so.42 lacks an entry point jobrun uses (libvips 8 is needed)";
        a->error_buffer_copy = NULL;
        return -1;
    }
    if (a->init("jobrun") != 0) return -1;
    a->cache_set_max(0);
    a->cache_set_max_mem(0);
    a->concurrency_set(1);
    return 0;
}

/* Why `cvips_start` failed when libvips could not be loaded; NULL when it was. */
static inline const char *cvips_load_failure(void) { return cvips_api()->failure; }

/* Decodes the file at `path` into an image that fits in width x height, never enlarged
 * (shrink-on-load: a JPEG is decoded at the smallest scale that still covers the box). A
 * truncated or corrupt file fails instead of being padded with grey. */
static inline int cvips_thumbnail_file(const char *path, int width, int height, VipsImage **out) {
    char name[4096];
    if (snprintf(name, sizeof name, "%s[fail_on=truncated]", path) >= (int)sizeof name) return -1;
    return cvips_api()->thumbnail(name, out, width, "height", height, "size", CVIPS_SIZE_DOWN, NULL);
}

static inline int cvips_gaussblur(VipsImage *in, double sigma, VipsImage **out) {
    return cvips_api()->gaussblur(in, out, sigma, NULL);
}

/* Baseline JPEG without metadata; free `*buffer` with cvips_free. */
static inline int cvips_jpegsave_buffer(VipsImage *in, int quality, void **buffer, size_t *length) {
    return cvips_api()->jpegsave_buffer(in, buffer, length, "Q", quality, "strip", 1, NULL);
}

static inline int cvips_width(VipsImage *image) { return cvips_api()->image_get_width(image); }
static inline int cvips_height(VipsImage *image) { return cvips_api()->image_get_height(image); }
static inline void cvips_unref(VipsImage *image) { cvips_api()->object_unref(image); }
static inline void cvips_free(void *p) { cvips_api()->free(p); }

/* The errors so far, cleared; free with cvips_free. NULL when libvips was never loaded. */
static inline char *cvips_take_error(void) {
    return cvips_api()->error_buffer_copy ? cvips_api()->error_buffer_copy() : NULL;
}

#endif
