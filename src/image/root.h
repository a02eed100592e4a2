/* root.h — what libward's levels ask of an image root (root.c); the
 * public half is in include/ward_image.h. */
#ifndef WARD_IMAGE_ROOT_H
#define WARD_IMAGE_ROOT_H

#include "ward.h"

/* req as it runs on its image (ward_request.image): out = req with the
 * root as rootfs and the image's Env under req's (*env: malloc'd, free it
 * after the run; NULL when req names no image).  0, or -1 with err set. */
int image_root_apply(const struct ward_request *req, struct ward_request *out, char ***env, char *err, size_t errlen);

/* The layer directories of r's image, bottom first. */
struct ward_image_root;
void image_root_layers(const struct ward_image_root *r, char *const **dirs, size_t *n);

#endif
