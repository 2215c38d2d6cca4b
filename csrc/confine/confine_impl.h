/* Between the confinement's decisions (confine/confine.c, every platform)
 * and the platform's layers: confine/linux.c, or confine/none.c on a system
 * without them (macOS, the BSDs, `make PORTABLE=1`). A new platform's layers
 * (macOS Seatbelt) implement the second half of this header. */
#ifndef SB_CONFINE_IMPL_H
#define SB_CONFINE_IMPL_H

#include <sys/resource.h>

#include "confine/confine.h"

/* the report (confine.c) */
sb_layer *sb_cf_layer(sb_confine *c, const char *name, bool enforced, const char *why);
void sb_cf_detail_str(sb_layer *l, const char *key, const char *s);
void sb_cf_detail_int(sb_layer *l, const char *key, long long i, int type);
/* Commands fail closed with this reason (the first one stays). */
void sb_cf_refuse(sb_confine *c, const char *fmt, const char *arg);
void sb_cf_add_rlimit(sb_confine_steps *s, int res, rlim_t v);
bool sb_cf_root_read_only(const sb_confine_opts *o);

/* the platform's layers */
void sb_cf_platform_init(sb_confine *c);
/* An OverlaySandbox without commands: only its merged mount. */
void sb_cf_merged_only(sb_confine *c, const sb_confine_opts *o, bool root);
/* The sandbox's namespaces and mount view, or the network alone. */
void sb_cf_namespaces(sb_confine *c, const sb_confine_opts *o, bool root);
/* With confine = true: everything else that binds a command. */
void sb_cf_layers(sb_confine *c, const sb_confine_opts *o, const sb_mem *m, bool root);
void sb_cf_platform_release(sb_confine *c);

#endif
