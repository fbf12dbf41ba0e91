#include <png.h>

// Composite macros are not imported into Swift: re-export the ones we use as constants.
static const png_uint_32 CPNG_FORMAT_GRAY = PNG_FORMAT_GRAY;
static const png_uint_32 CPNG_FORMAT_RGB = PNG_FORMAT_RGB;
static const png_uint_32 CPNG_FORMAT_RGBA = PNG_FORMAT_RGBA;
static const png_uint_32 CPNG_IMAGE_VERSION = PNG_IMAGE_VERSION;
static const png_uint_32 CPNG_IMAGE_FLAG_FAST = PNG_IMAGE_FLAG_FAST;
static const png_uint_32 CPNG_FORMAT_RGBA_COLORMAP = PNG_FORMAT_RGBA_COLORMAP;
static const png_uint_32 CPNG_FORMAT_RGB_COLORMAP = PNG_FORMAT_RGB_COLORMAP;
static const png_uint_32 CPNG_FORMAT_LINEAR_RGB_ALPHA = PNG_FORMAT_LINEAR_RGB_ALPHA;
