/* The confinement's report (one entry per layer: enforced, or why not)
 * and what every platform's layers share (confine_impl.h): a child's steps
 * made empty, the refusal. */
#include <stdio.h>
#include <string.h>

#include "confine/confine_impl.h"

void sb_confine_steps_init(sb_confine_steps *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < SB_NS_COUNT; i++) s->ns_fds[i] = -1;
  s->landlock_ruleset_fd = -1;
  s->ns_pidfd = -1;
}

/* ---- the report ------------------------------------------------------------ */

sb_layer *sb_cf_layer(sb_confine *c, const char *name, bool enforced, const char *why) {
  if (c->nlayers >= SB_MAX_LAYERS) return NULL;
  sb_layer *l = &c->layers[c->nlayers++];
  memset(l, 0, sizeof *l);
  l->name = name;
  l->enforced = enforced;
  l->why = enforced ? NULL : why;
  return l;
}

void sb_cf_detail_str(sb_layer *l, const char *key, const char *s) {
  if (!l || l->ndetails >= 4 || !s) return;
  l->details[l->ndetails].key = key;
  l->details[l->ndetails].type = SB_DETAIL_STR;
  l->details[l->ndetails++].s = s;
}

void sb_cf_detail_int(sb_layer *l, const char *key, long long i, int type) {
  if (!l || l->ndetails >= 4) return;
  l->details[l->ndetails].key = key;
  l->details[l->ndetails].type = type;
  l->details[l->ndetails++].i = i;
}

void sb_cf_add_rlimit(sb_confine_steps *s, int res, rlim_t v) {
  if (s->nrlimits >= SB_MAX_RLIMITS) return;
  s->rlimits[s->nrlimits].resource = res;
  s->rlimits[s->nrlimits].lim.rlim_cur = v;
  s->rlimits[s->nrlimits].lim.rlim_max = v;
  s->nrlimits++;
}

bool sb_cf_root_read_only(const sb_confine_opts *o) { return (o->policy && o->policy->read_only) || o->mode == 'r'; }

/* Commands fail closed with this reason (the first one stays). */
void sb_cf_refuse(sb_confine *c, const char *fmt, const char *arg) {
  if (c->refuse) return;
  c->refuse = true;
  snprintf(c->why, sizeof c->why, fmt, arg);
}
