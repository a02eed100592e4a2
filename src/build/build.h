/* build.h — the builder's entry for steps already in memory (build.c):
 * `ward image build` parses a Dockerfile into them (build_parse.h); E2B's
 * template API can make the same list from Template() steps (fromImage ->
 * FROM, runCmd -> RUN, copy -> COPY, setEnvs -> ENV, setWorkdir ->
 * WORKDIR, setUser -> USER, setStartCmd -> CMD), with f->escape '\\'. */
#ifndef WARD_IMAGE_BUILD_H
#define WARD_IMAGE_BUILD_H

#include "image/build_parse.h"
#include "ward_image.h"

int build_steps(struct ward_image_store *s, const char *name, const struct bfile *f, const struct ward_build_opts *o,
                struct ward_build_result *r, char *err, size_t errlen);

#endif
