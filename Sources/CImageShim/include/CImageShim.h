// The only place in digest that calls setjmp/longjmp.
//
// libjpeg reports fatal errors through `error_exit`, whose default prints and calls exit(). Each
// function below installs a setjmp point, replaces `error_exit` with one that formats the message and
// jumps back here, and returns a status: DIGEST_IMAGE_OK, or DIGEST_IMAGE_ERROR with the message in
// `digest_jpeg_*_message`. No jump ever crosses a Swift frame.
#ifndef DIGEST_CIMAGESHIM_H
#define DIGEST_CIMAGESHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { DIGEST_IMAGE_OK = 0, DIGEST_IMAGE_ERROR = -1 };

/// Colour spaces as the file stores them (a subset of libjpeg's J_COLOR_SPACE).
enum {
    DIGEST_JPEG_UNKNOWN = 0,
    DIGEST_JPEG_GRAYSCALE = 1,
    DIGEST_JPEG_RGB = 2,
    DIGEST_JPEG_YCBCR = 3,
    DIGEST_JPEG_CMYK = 4,
    DIGEST_JPEG_YCCK = 5,
};

/// What a JPEG header says.
typedef struct digest_jpeg_info {
    uint32_t width;
    uint32_t height;
    int components;
    /// One of DIGEST_JPEG_*.
    int color_space;
    int progressive;
    /// An Adobe APP14 marker was present (CMYK values are then stored inverted).
    int saw_adobe_marker;
    /// The first APP1 marker that starts with "Exif\0\0" (without that prefix), or NULL. Valid until
    /// the next call on the decoder.
    const uint8_t *exif;
    size_t exif_length;
} digest_jpeg_info;

/// What `digest_jpeg_start` set up.
typedef struct digest_jpeg_output {
    /// Size of the scaled image (before any column crop).
    uint32_t scaled_width;
    uint32_t scaled_height;
    /// Columns delivered per row: the crop as the decoder widened it to iMCU boundaries.
    uint32_t x_offset;
    uint32_t width;
    /// Bytes per pixel of the rows (4: RGBX or CMYK).
    int components;
} digest_jpeg_output;

typedef struct digest_jpeg_decoder digest_jpeg_decoder;

/// A decoder context; NULL when out of memory. Reusable for many images.
digest_jpeg_decoder *digest_jpeg_decoder_create(void);
void digest_jpeg_decoder_destroy(digest_jpeg_decoder *decoder);
/// The last error message.
const char *digest_jpeg_decoder_message(const digest_jpeg_decoder *decoder);
/// Warnings (corrupt data, premature end) seen since `digest_jpeg_read_header`.
int digest_jpeg_decoder_warnings(const digest_jpeg_decoder *decoder);
/// 1 when the data ended before the image did (libjpeg filled the rest with grey).
int digest_jpeg_decoder_truncated(const digest_jpeg_decoder *decoder);
/// The first warning's text, or "".
const char *digest_jpeg_decoder_warning_message(const digest_jpeg_decoder *decoder);

/// Reads the header of the JPEG in `data` (which must stay valid until `digest_jpeg_abort`).
/// `max_memory` bounds libjpeg's own allocations (coefficient buffers of progressive files);
/// `max_scans` bounds the scans of a progressive file.
int digest_jpeg_read_header(
    digest_jpeg_decoder *decoder, const uint8_t *data, size_t size, long max_memory, int max_scans,
    digest_jpeg_info *info);

/// Starts decompression at scale 1/`scale_denom` (1, 2, 4 or 8) with rows of 4 bytes a pixel (RGBX,
/// or CMYK when `cmyk` is set), keeping only columns [crop_x, crop_x + crop_width) (widened by the
/// decoder to its block grid; crop_width 0 keeps every column).
int digest_jpeg_start(
    digest_jpeg_decoder *decoder, int scale_denom, int cmyk, uint32_t crop_x, uint32_t crop_width,
    digest_jpeg_output *output);

/// Skips `rows` rows; `skipped` gets how many were skipped.
int digest_jpeg_skip(digest_jpeg_decoder *decoder, uint32_t rows, uint32_t *skipped);

/// Reads up to `rows` rows into `buffer` (`stride` bytes apart); `read` gets how many.
int digest_jpeg_read(digest_jpeg_decoder *decoder, uint8_t *buffer, size_t stride, uint32_t rows, uint32_t *read);

/// Ends the image without reading the rest; the decoder is ready for another header.
void digest_jpeg_abort(digest_jpeg_decoder *decoder);

/// Pixel layouts the encoder takes.
enum {
    /// 4 bytes a pixel, R G B X; stored as YCbCr.
    DIGEST_JPEG_IN_RGBX = 0,
    /// 1 byte a pixel.
    DIGEST_JPEG_IN_GRAY = 1,
    /// 4 bytes a pixel, C M Y K as given (Adobe convention: inverted); stored as CMYK.
    DIGEST_JPEG_IN_CMYK = 2,
    /// Same input; stored as YCCK.
    DIGEST_JPEG_IN_CMYK_AS_YCCK = 3,
    /// 4 bytes a pixel, R G B X; stored as RGB without colour transform.
    DIGEST_JPEG_IN_RGBX_AS_RGB = 4,
};

typedef struct digest_jpeg_encoder digest_jpeg_encoder;

digest_jpeg_encoder *digest_jpeg_encoder_create(void);
void digest_jpeg_encoder_destroy(digest_jpeg_encoder *encoder);
const char *digest_jpeg_encoder_message(const digest_jpeg_encoder *encoder);

/// Encodes `pixels` at `quality` (1…100); `progressive` writes a progressive file; `app1` (may be
/// NULL) is written as an APP1 marker. On success `output` and `output_size` hold the file, owned by
/// the encoder and valid until its next call.
int digest_jpeg_encode(
    digest_jpeg_encoder *encoder, const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
    int layout, int quality, int progressive, const uint8_t *app1, size_t app1_length,
    const uint8_t **output, size_t *output_size);

#ifdef __cplusplus
}
#endif

#endif
