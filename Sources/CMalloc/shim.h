// glibc's allocator controls (mallopt, malloc_trim), which Swift's Glibc
// module does not export: malloc.h is not part of it.
#include <malloc.h>
