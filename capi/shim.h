/* Internal declarations shared by the Go side of libvkzip and shim.c; not part of the public ABI. */
#ifndef VKZIP_SHIM_H
#define VKZIP_SHIM_H

#include <stddef.h>

/* Sets this thread's last-error message, taking ownership of msg (malloc'd; NULL clears it). */
void vkzip__set_error(char *msg);

#endif
