// jpeglib.h is not self-contained: it needs size_t and FILE first.
#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
