// libjpeg glue: every call into libjpeg that can fail happens inside a setjmp point in this file.
#include "CImageShim.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

// ---------------------------------------------------------------------------------------------------
// Errors: format the message, remember it, jump back to the function that was called.

typedef struct digest_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX + 32];
    char warning[JMSG_LENGTH_MAX];
    int warnings;
    int truncated;
} digest_jpeg_error;

static void digest_error_exit(j_common_ptr cinfo) {
    digest_jpeg_error *error = (digest_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    longjmp(error->jump, 1);
}

static void digest_output_message(j_common_ptr cinfo) {
    (void)cinfo;  // never print
}

// Warnings (level -1) are counted; a premature end of data stops decoding at once: the rest would be
// grey fill.
static void digest_emit_message(j_common_ptr cinfo, int level) {
    digest_jpeg_error *error = (digest_jpeg_error *)cinfo->err;
    if (level >= 0) return;  // trace messages
    error->warnings += 1;
    cinfo->err->num_warnings += 1;
    if (error->warnings == 1) (*cinfo->err->format_message)(cinfo, error->warning);
    int code = cinfo->err->msg_code;
    if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER) {
        char text[JMSG_LENGTH_MAX];
        (*cinfo->err->format_message)(cinfo, text);
        error->truncated = 1;
        snprintf(error->message, sizeof error->message, "truncated: %s", text);
        longjmp(error->jump, 1);
    }
}

static void digest_install_errors(digest_jpeg_error *error) {
    jpeg_std_error(&error->pub);
    error->pub.error_exit = digest_error_exit;
    error->pub.output_message = digest_output_message;
    error->pub.emit_message = digest_emit_message;
    error->message[0] = 0;
    error->warning[0] = 0;
}

// ---------------------------------------------------------------------------------------------------
// Decoder

struct digest_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    digest_jpeg_error error;
    struct jpeg_progress_mgr progress;
    int max_scans;
    int started;
};

// Bounds the scans of a progressive file (a file of thousands of tiny scans decodes for minutes).
static void digest_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    digest_jpeg_decoder *decoder = (digest_jpeg_decoder *)d;  // cinfo is the first member
    if (d->progressive_mode && decoder->max_scans > 0 && d->input_scan_number > decoder->max_scans) {
        snprintf(decoder->error.message, sizeof decoder->error.message,
                 "more than %d progressive scans", decoder->max_scans);
        longjmp(decoder->error.jump, 1);
    }
}

digest_jpeg_decoder *digest_jpeg_decoder_create(void) {
    digest_jpeg_decoder *decoder = calloc(1, sizeof *decoder);
    if (!decoder) return NULL;
    digest_install_errors(&decoder->error);
    decoder->cinfo.err = &decoder->error.pub;
    if (setjmp(decoder->error.jump)) {
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->cinfo);
    decoder->progress.progress_monitor = digest_progress;
    decoder->cinfo.progress = &decoder->progress;
    return decoder;
}

void digest_jpeg_decoder_destroy(digest_jpeg_decoder *decoder) {
    if (!decoder) return;
    jpeg_destroy_decompress(&decoder->cinfo);
    free(decoder);
}

const char *digest_jpeg_decoder_message(const digest_jpeg_decoder *decoder) { return decoder->error.message; }
int digest_jpeg_decoder_warnings(const digest_jpeg_decoder *decoder) { return decoder->error.warnings; }
int digest_jpeg_decoder_truncated(const digest_jpeg_decoder *decoder) { return decoder->error.truncated; }
const char *digest_jpeg_decoder_warning_message(const digest_jpeg_decoder *decoder) { return decoder->error.warning; }

static int digest_color_space(J_COLOR_SPACE space) {
    switch (space) {
    case JCS_GRAYSCALE: return DIGEST_JPEG_GRAYSCALE;
    case JCS_RGB: return DIGEST_JPEG_RGB;
    case JCS_YCbCr: return DIGEST_JPEG_YCBCR;
    case JCS_CMYK: return DIGEST_JPEG_CMYK;
    case JCS_YCCK: return DIGEST_JPEG_YCCK;
    default: return DIGEST_JPEG_UNKNOWN;
    }
}

int digest_jpeg_read_header(
    digest_jpeg_decoder *decoder, const uint8_t *data, size_t size, long max_memory, int max_scans,
    digest_jpeg_info *info) {
    j_decompress_ptr cinfo = &decoder->cinfo;
    jpeg_abort_decompress(cinfo);
    decoder->started = 0;
    decoder->error.warnings = 0;
    decoder->error.truncated = 0;
    decoder->error.message[0] = 0;
    decoder->error.warning[0] = 0;
    decoder->error.pub.num_warnings = 0;
    decoder->max_scans = max_scans;
    memset(info, 0, sizeof *info);
    if (setjmp(decoder->error.jump)) {
        jpeg_abort_decompress(cinfo);
        return DIGEST_IMAGE_ERROR;
    }
    if (max_memory > 0) cinfo->mem->max_memory_to_use = max_memory;
    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
    if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK) {
        snprintf(decoder->error.message, sizeof decoder->error.message, "no image in the JPEG data");
        jpeg_abort_decompress(cinfo);
        return DIGEST_IMAGE_ERROR;
    }
    info->width = cinfo->image_width;
    info->height = cinfo->image_height;
    info->components = cinfo->num_components;
    info->color_space = digest_color_space(cinfo->jpeg_color_space);
    info->progressive = cinfo->progressive_mode ? 1 : 0;
    info->saw_adobe_marker = cinfo->saw_Adobe_marker ? 1 : 0;
    for (jpeg_saved_marker_ptr marker = cinfo->marker_list; marker; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 6 &&
            memcmp(marker->data, "Exif\0\0", 6) == 0) {
            info->exif = marker->data + 6;
            info->exif_length = marker->data_length - 6;
            break;
        }
    }
    return DIGEST_IMAGE_OK;
}

int digest_jpeg_start(
    digest_jpeg_decoder *decoder, int scale_denom, int cmyk, uint32_t crop_x, uint32_t crop_width,
    digest_jpeg_output *output) {
    j_decompress_ptr cinfo = &decoder->cinfo;
    memset(output, 0, sizeof *output);
    if (setjmp(decoder->error.jump)) {
        jpeg_abort_decompress(cinfo);
        return DIGEST_IMAGE_ERROR;
    }
    if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) scale_denom = 1;
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)scale_denom;
    cinfo->dct_method = JDCT_ISLOW;
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_EXT_RGBX;
    jpeg_calc_output_dimensions(cinfo);
    output->scaled_width = cinfo->output_width;
    output->scaled_height = cinfo->output_height;
    jpeg_start_decompress(cinfo);
    decoder->started = 1;
    JDIMENSION x = 0, width = cinfo->output_width;
    if (crop_width > 0 && (crop_x > 0 || crop_width < cinfo->output_width)) {
        if (crop_x >= cinfo->output_width) crop_x = cinfo->output_width - 1;
        if (crop_width > cinfo->output_width - crop_x) crop_width = cinfo->output_width - crop_x;
        x = crop_x;
        width = crop_width;
        jpeg_crop_scanline(cinfo, &x, &width);
    }
    output->x_offset = x;
    output->width = width;
    output->components = cinfo->output_components;
    return DIGEST_IMAGE_OK;
}

int digest_jpeg_skip(digest_jpeg_decoder *decoder, uint32_t rows, uint32_t *skipped) {
    j_decompress_ptr cinfo = &decoder->cinfo;
    *skipped = 0;
    if (setjmp(decoder->error.jump)) {
        jpeg_abort_decompress(cinfo);
        decoder->started = 0;
        return DIGEST_IMAGE_ERROR;
    }
    *skipped = jpeg_skip_scanlines(cinfo, rows);
    return DIGEST_IMAGE_OK;
}

int digest_jpeg_read(digest_jpeg_decoder *decoder, uint8_t *buffer, size_t stride, uint32_t rows, uint32_t *read) {
    j_decompress_ptr cinfo = &decoder->cinfo;
    *read = 0;
    JSAMPROW pointers[16];
    if (rows > 16) rows = 16;
    for (uint32_t i = 0; i < rows; i++) pointers[i] = buffer + i * stride;
    if (setjmp(decoder->error.jump)) {
        jpeg_abort_decompress(cinfo);
        decoder->started = 0;
        return DIGEST_IMAGE_ERROR;
    }
    uint32_t total = 0;
    while (total < rows && cinfo->output_scanline < cinfo->output_height) {
        JDIMENSION got = jpeg_read_scanlines(cinfo, pointers + total, rows - total);
        if (got == 0) break;
        total += got;
    }
    *read = total;
    return DIGEST_IMAGE_OK;
}

void digest_jpeg_abort(digest_jpeg_decoder *decoder) {
    jpeg_abort_decompress(&decoder->cinfo);
    decoder->started = 0;
}

// ---------------------------------------------------------------------------------------------------
// Encoder

// The encoder writes into its own growing buffer (libjpeg's jpeg_mem_dest can leave a freed pointer
// behind when compression is aborted half-way).
typedef struct digest_jpeg_destination {
    struct jpeg_destination_mgr pub;
    unsigned char *buffer;
    size_t capacity;
    size_t size;
} digest_jpeg_destination;

struct digest_jpeg_encoder {
    struct jpeg_compress_struct cinfo;
    digest_jpeg_error error;
    digest_jpeg_destination destination;
};

static void digest_destination_init(j_compress_ptr cinfo) {
    digest_jpeg_destination *d = (digest_jpeg_destination *)cinfo->dest;
    if (d->capacity == 0) {
        d->buffer = malloc(65536);
        if (!d->buffer) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
        d->capacity = 65536;
    }
    d->size = 0;
    d->pub.next_output_byte = d->buffer;
    d->pub.free_in_buffer = d->capacity;
}

static boolean digest_destination_empty(j_compress_ptr cinfo) {
    digest_jpeg_destination *d = (digest_jpeg_destination *)cinfo->dest;
    size_t old = d->capacity;
    unsigned char *grown = realloc(d->buffer, old * 2);
    if (!grown) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    d->buffer = grown;
    d->capacity = old * 2;
    d->pub.next_output_byte = grown + old;
    d->pub.free_in_buffer = d->capacity - old;
    return TRUE;
}

static void digest_destination_term(j_compress_ptr cinfo) {
    digest_jpeg_destination *d = (digest_jpeg_destination *)cinfo->dest;
    d->size = d->capacity - d->pub.free_in_buffer;
}

digest_jpeg_encoder *digest_jpeg_encoder_create(void) {
    digest_jpeg_encoder *encoder = calloc(1, sizeof *encoder);
    if (!encoder) return NULL;
    digest_install_errors(&encoder->error);
    encoder->cinfo.err = &encoder->error.pub;
    if (setjmp(encoder->error.jump)) {
        free(encoder);
        return NULL;
    }
    jpeg_create_compress(&encoder->cinfo);
    encoder->destination.pub.init_destination = digest_destination_init;
    encoder->destination.pub.empty_output_buffer = digest_destination_empty;
    encoder->destination.pub.term_destination = digest_destination_term;
    encoder->cinfo.dest = &encoder->destination.pub;
    return encoder;
}

void digest_jpeg_encoder_destroy(digest_jpeg_encoder *encoder) {
    if (!encoder) return;
    encoder->cinfo.dest = NULL;  // ours, not libjpeg's pool
    jpeg_destroy_compress(&encoder->cinfo);
    free(encoder->destination.buffer);
    free(encoder);
}

const char *digest_jpeg_encoder_message(const digest_jpeg_encoder *encoder) { return encoder->error.message; }

int digest_jpeg_encode(
    digest_jpeg_encoder *encoder, const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
    int layout, int quality, int progressive, const uint8_t *app1, size_t app1_length,
    const uint8_t **output, size_t *output_size) {
    j_compress_ptr cinfo = &encoder->cinfo;
    *output = NULL;
    *output_size = 0;
    encoder->destination.size = 0;
    encoder->error.message[0] = 0;
    if (setjmp(encoder->error.jump)) {
        jpeg_abort_compress(cinfo);
        return DIGEST_IMAGE_ERROR;
    }
    cinfo->image_width = width;
    cinfo->image_height = height;
    switch (layout) {
    case DIGEST_JPEG_IN_GRAY:
        cinfo->in_color_space = JCS_GRAYSCALE;
        cinfo->input_components = 1;
        break;
    case DIGEST_JPEG_IN_CMYK:
    case DIGEST_JPEG_IN_CMYK_AS_YCCK:
        cinfo->in_color_space = JCS_CMYK;
        cinfo->input_components = 4;
        break;
    default:
        cinfo->in_color_space = JCS_EXT_RGBX;
        cinfo->input_components = 4;
        break;
    }
    jpeg_set_defaults(cinfo);
    if (layout == DIGEST_JPEG_IN_CMYK_AS_YCCK) jpeg_set_colorspace(cinfo, JCS_YCCK);
    if (layout == DIGEST_JPEG_IN_RGBX_AS_RGB) jpeg_set_colorspace(cinfo, JCS_RGB);
    cinfo->dct_method = JDCT_ISLOW;
    cinfo->optimize_coding = TRUE;
    jpeg_set_quality(cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(cinfo);
    jpeg_start_compress(cinfo, TRUE);
    if (app1 && app1_length > 0 && app1_length <= 65533) {
        jpeg_write_marker(cinfo, JPEG_APP0 + 1, app1, (unsigned int)app1_length);
    }
    while (cinfo->next_scanline < cinfo->image_height) {
        JSAMPROW row[16];
        JDIMENSION count = 0;
        while (count < 16 && cinfo->next_scanline + count < cinfo->image_height) {
            row[count] = (JSAMPROW)(pixels + (size_t)(cinfo->next_scanline + count) * stride);
            count++;
        }
        jpeg_write_scanlines(cinfo, row, count);
    }
    jpeg_finish_compress(cinfo);
    *output = encoder->destination.buffer;
    *output_size = encoder->destination.size;
    return DIGEST_IMAGE_OK;
}
