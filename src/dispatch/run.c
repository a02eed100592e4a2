/* run.c — ward_run(): the dispatcher above both levels.  It applies an
 * image's root to the request, validates it, hands it to the level its
 * isolation names (core/application.c, or src/system/'s
 * backend_system_run) and maps the outcome to the result of SPEC §4
 * (core/outcome.c).  Nothing below calls back into it: core/ knows no
 * level above it, and neither level knows the other. */
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/request.h"
#include "image/root.h"
#include "system/backend.h"
#include "ward.h"

int ward_run(const struct ward_request *req, struct ward_result *res)
{
	return ward_run_pooled(NULL, req, res);
}

int ward_run_pooled(struct ward_pool *pool, const struct ward_request *req, struct ward_result *res)
{
	double start = monotonic_now();
	memset(res, 0, sizeof(*res));
	res->isolation = req->isolation;
	res->enforced.time = "ward";

	char err[sizeof(res->error)];
	struct ward_request on_image;
	char **env = NULL;
	if (req->image && req->isolation != WARD_ISO_SYSTEM) {
		outcome_set_error(res, "an image is a system-level sandbox's root: use isolation system");
		return -1;
	}
	if (image_root_apply(req, &on_image, &env, err, sizeof(err)) < 0 ||
	    ward_request_validate(&on_image, err, sizeof(err)) < 0) {
		free(env);
		outcome_set_error(res, err);
		return -1;
	}
	req = &on_image;

	struct backend_outcome o = {0};
	int r = req->isolation == WARD_ISO_SYSTEM ? backend_system_run(pool, req, res, &o, start)
	                                          : backend_application_run(req, res, &o, start);
	free(env);
	return result_from_outcome(&o, r, res, start);
}
