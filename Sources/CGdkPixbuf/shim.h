#ifndef CGDKPIXBUF_SHIM_H
#define CGDKPIXBUF_SHIM_H
#include <gdk-pixbuf/gdk-pixbuf.h>
#endif
