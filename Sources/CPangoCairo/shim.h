#ifndef CPANGOCAIRO_SHIM_H
#define CPANGOCAIRO_SHIM_H
// Pango, Cairo and fontconfig for the previews. Helpers stand in for function-like macros and for the
// few calls Swift cannot make directly (fontconfig's string constants).
#include <string.h>
#include <strings.h>
#include <cairo.h>
#include <pango/pangocairo.h>
#include <fontconfig/fontconfig.h>
#include <png.h>

/// libpng's simplified API (no setjmp needed): composite macros as constants.
static const png_uint_32 CPC_PNG_IMAGE_VERSION = PNG_IMAGE_VERSION;
static const png_uint_32 CPC_PNG_FORMAT_RGB = PNG_FORMAT_RGB;
/// Favour speed over size: fast filters and zlib level (the previews are short-lived).
static const png_uint_32 CPC_PNG_IMAGE_FLAG_FAST = PNG_IMAGE_FLAG_FAST;

/// PANGO_PIXELS: Pango units to whole pixels, rounded.
static inline int cpc_pango_pixels(int units) { return (units + 512) >> 10; }

/// 1 when fontconfig resolves `family` to a face of that very family (not a fallback).
static inline int cpc_font_family_available(const char *family) {
    FcPattern *pattern = FcNameParse((const FcChar8 *)family);
    if (!pattern) return 0;
    FcConfigSubstitute(NULL, pattern, FcMatchPattern);
    FcDefaultSubstitute(pattern);
    FcResult result = FcResultNoMatch;
    FcPattern *match = FcFontMatch(NULL, pattern, &result);
    int found = 0;
    if (match) {
        FcChar8 *name = NULL;
        if (FcPatternGetString(match, FC_FAMILY, 0, &name) == FcResultMatch && name) {
            found = strcasecmp((const char *)name, family) == 0;
        }
        FcPatternDestroy(match);
    }
    FcPatternDestroy(pattern);
    return found;
}

/// The layout line at `index` (read-only), or NULL.
static inline int cpc_line_start(PangoLayout *layout, int index) {
    PangoLayoutLine *line = pango_layout_get_line_readonly(layout, index);
    return line ? line->start_index : -1;
}

static inline int cpc_line_length(PangoLayout *layout, int index) {
    PangoLayoutLine *line = pango_layout_get_line_readonly(layout, index);
    return line ? line->length : 0;
}

static inline void cpc_object_unref(void *object) { if (object) g_object_unref(object); }
#endif
