// The system liblz4 (Debian: liblz4-dev). Block API and the high-compression variant.
#include <lz4.h>
#include <lz4hc.h>
