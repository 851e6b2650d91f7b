#ifndef CJPEG_SHIM_H
#define CJPEG_SHIM_H

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <jpeglib.h>

/* jpeg_create_compress is a macro: wrapped with the rest of one encode. Encodes `rgb` (width x
 * height x 3 bytes) as a baseline JPEG into a buffer the caller frees with free(). libjpeg's
 * standard error handler ends the process, which only a programming error (an invalid size or
 * quality) can reach: the input is always whole, in memory. */
static inline int cjpeg_encode_rgb(const unsigned char *rgb, int width, int height, int quality,
                                   unsigned char **out, unsigned long *out_size) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    *out = NULL;
    *out_size = 0;
    jpeg_mem_dest(&c, out, out_size);
    c.image_width = (JDIMENSION)width;
    c.image_height = (JDIMENSION)height;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * (size_t)width * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return 0;
}

/* A picture from four numbers: a diagonal two-colour gradient with a soft disc, so every photo
 * differs and compresses like a photo of the sky, not like noise. Filled here rather than in
 * Swift because a debug build of a per-pixel Swift loop takes seconds for a 2560x1920 photo. */
static inline void cjpeg_fill_pattern(unsigned char *rgb, int width, int height, uint64_t seed) {
    int r0 = (int)(seed & 0xff), g0 = (int)((seed >> 8) & 0xff), b0 = (int)((seed >> 16) & 0xff);
    int r1 = (int)((seed >> 24) & 0xff), g1 = (int)((seed >> 32) & 0xff), b1 = (int)((seed >> 40) & 0xff);
    long cx = (long)((seed >> 48) & 0xff) * width / 256, cy = (long)((seed >> 56) & 0xff) * height / 256;
    long radius = (width < height ? width : height) / 3 + 1;
    long span = (long)width + height;
    for (int y = 0; y < height; y++) {
        unsigned char *p = rgb + (size_t)y * (size_t)width * 3;
        for (int x = 0; x < width; x++) {
            long t = ((long)x + y) * 256 / span;
            int r = (int)(r0 + (r1 - r0) * t / 256), g = (int)(g0 + (g1 - g0) * t / 256), b = (int)(b0 + (b1 - b0) * t / 256);
            long dx = x - cx, dy = y - cy;
            if (dx * dx + dy * dy < radius * radius) { r = 255 - r; g = 255 - g; b = 255 - b; }
            p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b;
            p += 3;
        }
    }
}

#endif
