/* The sandbox's deny and allow rules in the commands' mount view (SPEC §6.1).
 *
 * Before the first command, and again before each later one (paths appear
 * all the time), the host walks each tree the view shows (the root, or an
 * overlay's merged view, then the read roots) through its own fds, where
 * nothing is masked, and asks the view's keeper (the sandbox's init,
 * confine/view.c) for what is missing:
 *   - every path a deny rule matches is masked (a directory an empty tmpfs
 *     no one may list, anything else /dev/null without devices: unreadable,
 *     unchangeable, immovable), and every directory on the way to it below
 *     the tree's own mount is pinned (a mount of itself: no rename carries
 *     a masked path out from under its rule, no hard link reaches it);
 *   - with allow rules, each tree is a skeleton: only the directories that
 *     lead to allowed paths, the allowed paths bound in from the real tree,
 *     links copied as links.
 * What was applied is remembered with the inode it was applied to: a path
 * replaced on the host since then (which detaches a mask in every mount
 * namespace) is applied again. The walk never follows a link, and goes only
 * where a rule could match. */
#ifndef SB_CONFINE_RULES_H
#define SB_CONFINE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/mem.h"
#include "base/policy.h"
#include "confine/ns.h"

/* Mounts the rules may need at once (masks, pins, allowed paths); past it
 * commands are refused, with the reason. */
#define SB_VIEW_MAX_MOUNTS 4096
/* Entries of all skeletons together (directories and links). */
#define SB_VIEW_MAX_SKELETON 65536

typedef struct sb_view_rules sb_view_rules;

/* For the trees at fds (borrowed; the root first, then the read roots),
 * under policy p (borrowed). skeleton: the view shows each tree through a
 * skeleton (allow rules). NULL on out of memory. */
sb_view_rules *sb_view_rules_new(const sb_mem *m, const sb_policy *p, const int *fds, size_t ntrees, bool skeleton);
/* Walk the trees and apply what is missing. 0, or -1 with why (commands
 * must not run until a later sync succeeds). */
int sb_view_rules_sync(sb_view_rules *r, sb_ns *ns, char *why, size_t whylen);
/* Paths masked and shown now (for the report and the specs). */
void sb_view_rules_count(const sb_view_rules *r, size_t *masked, size_t *shown);
void sb_view_rules_free(sb_view_rules *r);

#endif
